//! The state that outlives one process: with `FAKE_NVML_STATE` naming a file, the library
//! starts from that file (written from `FAKE_NVML_SCENARIO` when absent) and writes every change
//! back whole — a temporary file beside it, then a rename — under an exclusive `flock` on
//! `FILE.lock`. Consecutive runs see each other's writes; a run killed at any point leaves the
//! old state or the new one, never a torn file.

use crate::scenario::{Scenario, ScenarioError};
use nix::fcntl::{Flock, FlockArg};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The state file, when `FAKE_NVML_STATE` names one.
pub fn state_path() -> Option<PathBuf> {
    std::env::var_os("FAKE_NVML_STATE")
        .filter(|path| !path.is_empty())
        .map(PathBuf::from)
}

/// The held lock of a state file.
struct Locked {
    _lock: Flock<std::fs::File>,
}

fn lock(path: &Path) -> Result<Locked, ScenarioError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|error| {
            ScenarioError(format!(
                "cannot open {}: {error}",
                Path::new(&lock_path).display()
            ))
        })?;
    let lock = Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| ScenarioError(format!("cannot lock {}: {errno}", path.display())))?;
    Ok(Locked { _lock: lock })
}

fn read(path: &Path) -> Result<Option<Scenario>, ScenarioError> {
    match std::fs::read(path) {
        Ok(bytes) => Scenario::from_json(&bytes)
            .map(Some)
            .map_err(|error| ScenarioError(format!("{}: {error}", path.display()))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(ScenarioError(format!(
            "cannot read {}: {error}",
            path.display()
        ))),
    }
}

/// Writes `scenario` to `path` whole: a temporary file beside it, fsync, rename.
pub fn write(path: &Path, scenario: &Scenario) -> Result<(), ScenarioError> {
    let fail = |what: &str, error: std::io::Error| {
        ScenarioError(format!("cannot {what} {}: {error}", path.display()))
    };
    let bytes = serde_json::to_vec_pretty(scenario)
        .map_err(|error| ScenarioError(format!("cannot encode the state: {error}")))?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let mut file = std::fs::File::create(&temp).map_err(|error| fail("write", error))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(|error| fail("write", error))?;
    std::fs::rename(&temp, path).map_err(|error| fail("replace", error))
}

/// The state at start: the file, or (when there is none) the scenario, written as the file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let _locked = lock(path)?;
    if let Some(state) = read(path)? {
        return Ok(state);
    }
    let scenario = Scenario::from_env()?;
    write(path, &scenario)?;
    Ok(scenario)
}

/// What stops a change: the state could not be used, or the change itself refused (nothing
/// is written then).
#[derive(Debug)]
pub enum ChangeError<E> {
    /// The file could not be locked, read or written.
    State(ScenarioError),
    /// The change refused.
    Refused(E),
}

/// Applies `change` to the state as the file holds it now, under the lock, and writes the
/// result back whole (after `delay`); answers the new state and what `change` gave.
pub fn change<T, E>(
    path: &Path,
    delay: impl Fn(&Scenario) -> std::time::Duration,
    change: impl FnOnce(&mut Scenario) -> Result<T, E>,
) -> Result<(Scenario, T), ChangeError<E>> {
    let _locked = lock(path).map_err(ChangeError::State)?;
    let mut state = match read(path).map_err(ChangeError::State)? {
        Some(state) => state,
        None => Scenario::from_env().map_err(ChangeError::State)?,
    };
    let answer = change(&mut state).map_err(ChangeError::Refused)?;
    std::thread::sleep(delay(&state));
    write(path, &state).map_err(ChangeError::State)?;
    Ok((state, answer))
}
