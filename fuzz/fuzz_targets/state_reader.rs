//! Any bytes as the host state file, to its reader and to the store that uses it: never a
//! panic; a state accepted writes JSON that reads back the same; and the store does what the
//! reader's verdict says. A file refused (a later schema, whole JSON this version does not
//! read) is an error and stays byte for byte, with nothing beside it; a file accepted loads as
//! it read; a torn one is kept aside byte for byte and, with no last good copy, the host loads
//! as one that lost its state, which is what the store wrote and loads again.
#![no_main]

use host_sync::{
    FileStore, HostState, STATE_FILE, StateReadError, StateStore, StoreError, StoreNote,
};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};

/// The files of `dir`, by path, with their bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("the state directory does not list: {error}"));
    let mut found: Vec<(PathBuf, Vec<u8>)> = entries
        .map(|entry| {
            let path = entry
                .unwrap_or_else(|error| panic!("the state directory does not list: {error}"))
                .path();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|error| panic!("{} does not read: {error}", path.display()));
            (path, bytes)
        })
        .collect();
    found.sort();
    found
}

/// A fresh directory for the store, on tmpfs where there is one: the store syncs every file it
/// writes and its directory, which on a disk costs milliseconds a run, and tmpfs makes it free.
/// A failure here is the machine's, not a finding in the input.
fn state_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("state_reader-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap_or_else(|error| panic!("no temporary directory for the store: {error}"))
}

/// The rule "a state accepted writes JSON that reads back the same".
fn round_trip(state: &HostState) {
    let written = serde_json::to_vec(state)
        .unwrap_or_else(|error| panic!("round trip: an accepted state does not write: {error}"));
    match HostState::from_json(&written) {
        Ok(again) => assert_eq!(
            &again, state,
            "round trip: an accepted state reads back otherwise"
        ),
        Err(error) => panic!("round trip: an accepted state, written, is refused: {error}"),
    }
}

/// The rules of the store over `data` as its state file, which the reader judged `read`.
fn store(data: &[u8], read: &Result<HostState, StateReadError>) {
    let dir = state_dir();
    let path = dir.path().join(STATE_FILE);
    std::fs::write(&path, data)
        .unwrap_or_else(|error| panic!("the state file cannot be written: {error}"));
    let mut file_store = FileStore::new(dir.path());
    let loaded = file_store.load();
    match read {
        Err(refused @ (StateReadError::NewerSchema { .. } | StateReadError::Unsupported(_))) => {
            match (&loaded, refused) {
                (
                    Err(StoreError::NewerSchema { found, .. }),
                    StateReadError::NewerSchema { found: read },
                ) => {
                    assert_eq!(found, read, "refused: the store names another schema");
                }
                (Err(StoreError::Unsupported { .. }), StateReadError::Unsupported(_)) => {}
                (loaded, refused) => {
                    panic!(
                        "refused: the reader says {refused:?}, the store's load answers {loaded:?}"
                    )
                }
            }
            assert_eq!(
                files(dir.path()),
                vec![(path, data.to_vec())],
                "refused: the state file is not left as it was, alone"
            );
        }
        Ok(state) => match loaded {
            Ok(Some(loaded)) => assert_eq!(&loaded, state, "accepted: load answers another state"),
            loaded => panic!("accepted: load answers {loaded:?}"),
        },
        Err(StateReadError::Torn(_)) => {
            let (state, lost) = match loaded {
                Ok(Some(state)) => match state.lost.clone() {
                    Some(lost) => (state, lost),
                    None => panic!("torn: load answers {state:?}, not a host that lost its state"),
                },
                loaded => panic!("torn: load answers {loaded:?}, not a host that lost its state"),
            };
            let kept: Vec<(PathBuf, Vec<u8>)> = files(dir.path())
                .into_iter()
                .filter(|(kept, _)| {
                    kept.file_name().is_some_and(|name| {
                        name.to_string_lossy().starts_with("state.json.corrupt-")
                    })
                })
                .collect();
            assert_eq!(
                kept,
                vec![(lost.kept.clone(), data.to_vec())],
                "torn: the torn bytes are not kept aside, byte for byte, where the state says"
            );
            assert_eq!(
                file_store.take_notes(),
                vec![StoreNote::Lost(lost)],
                "torn: the store does not note the loss"
            );
            match FileStore::new(dir.path()).load() {
                Ok(Some(again)) => {
                    assert_eq!(
                        again, state,
                        "torn: the state written after the loss loads otherwise"
                    )
                }
                again => panic!("torn: the state written after the loss loads as {again:?}"),
            }
        }
        Err(other) => panic!("the reader answers what this target does not know: {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let read = HostState::from_json(data);
    if let Ok(state) = &read {
        round_trip(state);
    }
    store(data, &read);
});
