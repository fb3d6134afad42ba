//! The store contract: the file store passes the conformance suite, and the suite catches a
//! store that loses what the sync's safety rests on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use host_sync::conformance::check_store;
use host_sync::{FileStore, HostState, StateStore, StoreError};
use std::sync::{Arc, Mutex};

#[test]
fn the_file_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    check_store(|| FileStore::new(dir.path())).unwrap();
}

/// A store over shared memory that can be told to lose a field, as a careless database mapping
/// would.
#[derive(Clone, Default)]
struct Careless {
    backing: Arc<Mutex<Option<HostState>>>,
    forget_last_read: bool,
    forget_boot: bool,
    /// A store written before the declaration existed: it never stores it.
    forget_declared: bool,
}

impl StateStore for Careless {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        Ok(self.backing.lock().unwrap().clone())
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        let mut state = state.clone();
        if self.forget_last_read {
            for record in state.gpus.values_mut() {
                record.last_read = None;
            }
        }
        if self.forget_boot {
            state.boot = host_sync::Boot::default();
        }
        if self.forget_declared {
            state.declared = None;
        }
        *self.backing.lock().unwrap() = Some(state);
        Ok(())
    }
}

#[test]
fn a_store_over_shared_memory_that_keeps_everything_passes() {
    let store = Careless::default();
    check_store(|| store.clone()).unwrap();
}

#[test]
fn a_store_that_loses_the_last_mode_read_fails_the_suite() {
    let store = Careless {
        forget_last_read: true,
        ..Careless::default()
    };
    let failure = check_store(|| store.clone()).unwrap_err();
    assert_eq!(
        failure.check,
        "every field of a full state survives a save and a reopen"
    );
    assert!(failure.found.contains("last_read"), "{failure}");
}

#[test]
fn a_store_that_loses_the_boot_fails_the_suite() {
    let store = Careless {
        forget_boot: true,
        ..Careless::default()
    };
    assert!(check_store(|| store.clone()).is_err());
}

#[test]
fn a_store_that_forgets_across_a_reopen_fails_the_suite() {
    let failure = check_store(host_sync::MemoryStore::default).unwrap_err();
    assert_eq!(
        failure.check,
        "every field of a full state survives a save and a reopen"
    );
}

#[test]
fn an_unknown_stored_value_names_what_it_stands_for_and_keeps_the_parsers_why() {
    let parsed = "Enabled".parse::<gpu_partition_types::PartitionMode>();
    let error = StoreError::unknown_value(
        "the partition mode of 0000:3b:00.0",
        "Enabled",
        parsed.unwrap_err(),
    );
    let chain = gpu_host_probe::chain::Chain(&error).to_string();
    assert!(
        chain.starts_with(
            "the state store holds \"Enabled\" as the partition mode of 0000:3b:00.0, which \
             this version does not read: "
        ),
        "{chain}"
    );
    assert!(chain.contains("enabled"), "{chain}");
}

#[test]
fn a_backend_error_is_the_cause_not_an_invented_path() {
    let error = StoreError::backend(
        "sqlite /var/lib/toolstack/db",
        std::io::Error::other("database is locked"),
    );
    assert_eq!(
        gpu_host_probe::chain::Chain(&error).to_string(),
        "the state store sqlite /var/lib/toolstack/db failed: database is locked"
    );
}

#[test]
fn a_store_that_does_not_open_fails_the_check_that_opened_it_with_its_error() {
    let failure = host_sync::conformance::try_check_store(|| {
        Err::<host_sync::MemoryStore, _>("the database is gone".to_owned())
    })
    .unwrap_err();
    assert_eq!(failure.check, "a store that never saved loads nothing");
    assert_eq!(
        failure.found,
        "the store did not open: the database is gone"
    );
}

#[test]
fn a_boxed_store_passes_the_suite_as_its_store_does() {
    let dir = tempfile::tempdir().unwrap();
    host_sync::conformance::try_check_store(|| {
        Ok::<Box<dyn host_sync::StateStore + Send>, std::io::Error>(Box::new(FileStore::new(
            dir.path(),
        )))
    })
    .unwrap();
}

#[test]
fn a_store_that_does_not_keep_the_declaration_fails_the_suite_naming_the_member() {
    let store = Careless {
        forget_declared: true,
        ..Careless::default()
    };
    let failure = check_store(|| store.clone()).unwrap_err();
    assert_eq!(
        failure.found,
        "the first member that differs is declared: saved Some(..), loaded None"
    );
}

#[test]
fn saving_checked_into_a_store_that_drops_a_member_names_it_where_it_happens() {
    let mut store = Careless {
        forget_declared: true,
        ..Careless::default()
    };
    let mut state = HostState::default();
    state.declared = Some(layout_model::Declaration::new(
        "all-balanced",
        1,
        None,
        Default::default(),
    ));
    let error = host_sync::save_checked(&mut store, &state).unwrap_err();
    let StoreError::NotKept { difference } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(difference.path, "declared");
}

fn declared_state() -> HostState {
    let mut state = HostState::default();
    state.declared = Some(layout_model::Declaration::new(
        "all-balanced",
        1,
        None,
        Default::default(),
    ));
    state
}

fn kept_aside(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("state.json.corrupt-")
        })
        .map(|entry| entry.path())
        .collect()
}

#[test]
fn a_truncated_state_file_is_kept_aside_and_its_last_good_copy_put_back_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FileStore::new(dir.path());
    store.save(&declared_state()).unwrap();
    let text = std::fs::read(dir.path().join("state.json")).unwrap();
    std::fs::write(dir.path().join("state.json"), &text[..text.len() / 2]).unwrap();
    let loaded = store.load().unwrap().unwrap();
    assert_eq!(loaded, declared_state());
    let notes = store.take_notes();
    assert!(
        matches!(notes.as_slice(), [host_sync::StoreNote::Recovered { .. }]),
        "{notes:?}"
    );
    assert_eq!(kept_aside(dir.path()).len(), 1);
    // Put back whole: the next load reads it with no note.
    assert_eq!(store.load().unwrap().unwrap(), declared_state());
    assert!(store.take_notes().is_empty());
}

#[test]
fn a_truncated_state_file_without_a_good_copy_becomes_a_host_that_says_it_lost_its_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.json"), "{\"schema\": 2, \"sta").unwrap();
    let mut store = FileStore::new(dir.path());
    let loaded = store.load().unwrap().unwrap();
    let lost = loaded.lost.clone().unwrap();
    assert_eq!(kept_aside(dir.path()), vec![lost.kept.clone()]);
    assert_eq!(loaded.reason.as_str(), "state_lost");
    assert!(loaded.declared.is_none());
    // It is written so: every later load says it too, until a declaration replaces it.
    assert_eq!(store.load().unwrap().unwrap().lost, Some(lost));
}

#[test]
fn a_reader_that_changes_nothing_reports_a_torn_file_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.json"), "{").unwrap();
    assert!(matches!(
        FileStore::read_only(dir.path()).load(),
        Err(StoreError::Unreadable { .. })
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
