//! The state that outlives one process: with `FAKE_NVML_STATE` naming a file, the library
//! starts from that file (written from `FAKE_NVML_SCENARIO` when absent) and writes every change
//! back whole — a temporary file beside it, then a rename — under an exclusive `flock` on
//! `FILE.lock`. Consecutive runs see each other's writes; a run killed at any point leaves the
//! old state or the new one, never a torn file.
//!
//! [`StateFile`] is that file for a test: read, written, changed as the world changes it (a
//! GPU reset, a reboot), each under the same lock the library takes.
//!
//! With `FAKE_NVML_SYSFS` naming a fake sysfs root (or [`StateFile::with_sysfs`]), every write
//! of the state shows its cards' virtual functions there ([`crate::sysfs`]), under the same lock.

use crate::read::ScenarioError;
use crate::rules;
use crate::rules::sriov::{self, Managed};
use crate::scenario::Scenario;
use nix::fcntl::{Flock, FlockArg};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a state file could not be made to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateFileError {
    /// There is no state file yet, and `FAKE_NVML_SCENARIO` names no scenario to make it from.
    #[error("FAKE_NVML_SCENARIO is not set")]
    NoScenario,
    /// A file (the state, or the scenario it is made from) could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file (the state, or the scenario it is made from) is not a scenario.
    #[error("{} is not a scenario", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        #[source]
        source: ScenarioError,
    },
    /// The lock file (`FILE.lock`) could not be opened.
    #[error("cannot open {}", path.display())]
    OpenLock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The lock could not be taken.
    #[error("cannot lock {}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: nix::errno::Errno,
    },
    /// The state could not be encoded.
    #[error("cannot encode the state")]
    Encode(#[source] serde_json::Error),
    /// The new state could not be written beside the file, or put in its place.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file written (the temporary one, or the state it replaces).
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The state's virtual functions could not be shown in the fake sysfs.
    #[error("cannot show the virtual functions under {}", root.display())]
    Sysfs {
        /// The fake sysfs root.
        root: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No device of the state is at this bus ID.
    #[error("no device {bus_id} in {}", path.display())]
    NoDevice {
        /// The state file.
        path: PathBuf,
        /// The bus ID asked for.
        bus_id: String,
    },
}

/// What stops a change: the state could not be used, or the change itself refused (nothing
/// is written then).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError<E> {
    /// The file could not be locked, read or written.
    #[error(transparent)]
    State(StateFileError),
    /// The change refused.
    #[error("the change was refused: {0}")]
    Refused(E),
}

/// A state file of the fake (what `FAKE_NVML_STATE` names, and
/// [`stateful_helper_wrapper`](crate::support::stateful_helper_wrapper) makes), to read and to
/// change as the world would between a client's runs. Each read, write and change holds the
/// file's lock (`FILE.lock`) while it runs, as the library does; a change must not read or
/// write the same file itself (the lock is taken already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateFile {
    path: PathBuf,
    sysfs: Option<PathBuf>,
}

impl StateFile {
    /// The state file at `path` (nothing is read yet).
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile {
            path: path.into(),
            sysfs: None,
        }
    }

    /// The state file `FAKE_NVML_STATE` names, if it names one, showing its VFs where
    /// `FAKE_NVML_SYSFS` says.
    pub fn from_env() -> Option<StateFile> {
        let state = std::env::var_os("FAKE_NVML_STATE")
            .filter(|path| !path.is_empty())
            .map(StateFile::new)?;
        Some(
            match std::env::var_os("FAKE_NVML_SYSFS").filter(|root| !root.is_empty()) {
                Some(root) => state.with_sysfs(root),
                None => state,
            },
        )
    }

    /// Shows the state's virtual functions in the fake sysfs at `root` after every write.
    pub fn with_sysfs(mut self, root: impl Into<PathBuf>) -> StateFile {
        self.sysfs = Some(root.into());
        self
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fake sysfs root it shows its VFs in, if any.
    pub fn sysfs(&self) -> Option<&Path> {
        self.sysfs.as_deref()
    }

    /// The state as the library starts from it: the file, or (when there is none yet) the
    /// scenario `FAKE_NVML_SCENARIO` names, written as the file (its VFs shown) under the lock.
    /// The library does it at its first `nvmlInit`; the `fake-nvml` command does it before a
    /// reset, a reboot or an `sriov-manage`, which a host runs at boot, before any NVML client.
    pub fn load(&self) -> Result<Scenario, StateFileError> {
        load(self)
    }

    /// The state as the file holds it now.
    pub fn read(&self) -> Result<Scenario, StateFileError> {
        let _locked = lock(&self.path)?;
        read(&self.path)?.ok_or_else(|| not_found(&self.path))
    }

    /// Writes `state` as the file, whole.
    pub fn write(&self, state: &Scenario) -> Result<(), StateFileError> {
        let _locked = lock(&self.path)?;
        write(&self.path, state)?;
        show(self.sysfs(), state)
    }

    /// Applies `change` to the state as the file holds it now and writes the result back whole;
    /// answers what `change` gave. A refused change writes nothing.
    pub fn change<T, E>(
        &self,
        change: impl FnOnce(&mut Scenario) -> Result<T, E>,
    ) -> Result<T, ChangeError<E>> {
        let made = || Err(not_found(&self.path));
        changed(self, made, |_| Duration::ZERO, change).map(|(_, answer)| answer)
    }

    /// A GPU reset of the card at `bus_id` (either form NVML knows), as `nvidia-smi
    /// --gpu-reset` does it: a pending MIG mode becomes current, and no instance survives.
    pub fn reset_gpu(&self, bus_id: &str) -> Result<(), StateFileError> {
        self.on_device(bus_id, |card| {
            rules::gpu_reset(card);
            Ok(())
        })
    }

    /// A run of `sriov-manage -e` (`enable`) or `-d` on the card at `bus_id`, as
    /// the fake's rules of the vGPU manager (`src/rules/sriov.rs`) say the real one does.
    pub fn sriov_manage(&self, bus_id: &str, enable: bool) -> Result<Managed, StateFileError> {
        self.on_device(bus_id, |card| {
            Ok(if enable {
                sriov::enable_vfs(card)
            } else {
                sriov::disable_vfs(card)
            })
        })
    }

    /// `id` written to `current_vgpu_type` of VF `index` of the card at `bus_id` (`0`: its vGPU
    /// removed): `Ok(Err(errno))` where the driver refuses it, and nothing changes then.
    pub fn write_vgpu_type(
        &self,
        bus_id: &str,
        index: u32,
        id: u32,
    ) -> Result<Result<(), i32>, StateFileError> {
        match self.change(|state| match state.device_at_mut(bus_id) {
            Some(card) => sriov::write_type(card, index, id).map_err(|refused| Ok(refused.errno())),
            None => Err(Err(self.no_device(bus_id))),
        }) {
            Ok(()) => Ok(Ok(())),
            Err(ChangeError::Refused(Ok(errno))) => Ok(Err(errno)),
            Err(ChangeError::Refused(Err(error)) | ChangeError::State(error)) => Err(error),
        }
    }

    /// `text` written to the `sriov_numvfs` of the card at `bus_id` while `nvidia` drives it,
    /// as the kernel answers it (`src/rules/sriov.rs`): `Ok(Err(errno))` where it refuses.
    /// Nothing is written either way: VFs come through `sriov-manage`
    /// ([`StateFile::sriov_manage`]).
    pub fn write_numvfs(
        &self,
        bus_id: &str,
        text: &str,
    ) -> Result<Result<(), i32>, StateFileError> {
        let state = self.read()?;
        let card = state
            .device_at(bus_id)
            .ok_or_else(|| self.no_device(bus_id))?;
        Ok(sriov::write_numvfs(card, text))
    }

    fn no_device(&self, bus_id: &str) -> StateFileError {
        StateFileError::NoDevice {
            path: self.path.clone(),
            bus_id: bus_id.to_owned(),
        }
    }

    /// `change` of the card at `bus_id`.
    fn on_device<T>(
        &self,
        bus_id: &str,
        change: impl FnOnce(&mut crate::Device) -> Result<T, StateFileError>,
    ) -> Result<T, StateFileError> {
        self.change(|state| match state.device_at_mut(bus_id) {
            Some(card) => change(card),
            None => Err(self.no_device(bus_id)),
        })
        .map_err(|error| match error {
            ChangeError::State(error) | ChangeError::Refused(error) => error,
        })
    }

    /// A reboot of the host (or a reload of the driver), as the cards live through it: no GPU
    /// instance survives (nor the vGPUs and processes on them); the MIG mode survives where the
    /// part keeps it (Ampere: an InfoROM bit) and is off where the driver held it (Hopper and
    /// later), or as a device's `mig_mode_at_boot` says.
    pub fn reboot(&self) -> Result<(), StateFileError> {
        self.change(|state| {
            state.devices.iter_mut().for_each(rules::reboot);
            Ok::<(), std::convert::Infallible>(())
        })
        .map_err(|error| match error {
            ChangeError::State(error) => error,
            ChangeError::Refused(never) => match never {},
        })
    }
}

fn not_found(path: &Path) -> StateFileError {
    StateFileError::Read {
        path: path.to_owned(),
        source: std::io::ErrorKind::NotFound.into(),
    }
}

/// The held lock of a state file.
struct Locked {
    _lock: Flock<std::fs::File>,
}

fn lock(path: &Path) -> Result<Locked, StateFileError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| StateFileError::OpenLock {
            path: lock_path.clone(),
            source,
        })?;
    let lock =
        Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, source)| StateFileError::Lock {
            path: lock_path,
            source,
        })?;
    Ok(Locked { _lock: lock })
}

/// The scenario in the file at `path`; `None` when there is no file.
fn read(path: &Path) -> Result<Option<Scenario>, StateFileError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            Scenario::from_json(&bytes)
                .map(Some)
                .map_err(|source| StateFileError::Invalid {
                    path: path.to_owned(),
                    source,
                })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StateFileError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The scenario the file `FAKE_NVML_SCENARIO` names.
pub(crate) fn scenario_from_env() -> Result<Scenario, StateFileError> {
    let path = std::env::var_os("FAKE_NVML_SCENARIO").ok_or(StateFileError::NoScenario)?;
    read(Path::new(&path))?.ok_or_else(|| not_found(Path::new(&path)))
}

/// Writes `scenario` to `path` whole: a temporary file beside it, fsync, rename.
fn write(path: &Path, scenario: &Scenario) -> Result<(), StateFileError> {
    let bytes = serde_json::to_vec_pretty(scenario).map_err(StateFileError::Encode)?;
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| StateFileError::Write { path, source }
    };
    let mut file = std::fs::File::create(&temp).map_err(failed(&temp))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(failed(&temp))?;
    std::fs::rename(&temp, path).map_err(failed(path))
}

/// [`StateFile::load`].
fn load(state: &StateFile) -> Result<Scenario, StateFileError> {
    let _locked = lock(&state.path)?;
    if let Some(found) = read(&state.path)? {
        return Ok(found);
    }
    let scenario = scenario_from_env()?;
    write(&state.path, &scenario)?;
    show(state.sysfs(), &scenario)?;
    Ok(scenario)
}

/// What of a card its sysfs shows depends on (the whole card, for one with SR-IOV: its VFs, its
/// instances and catalogue decide the creatable lists); `None` for a card without SR-IOV.
fn shown_form(device: &crate::Device) -> Option<String> {
    device
        .sriov
        .as_ref()
        .and_then(|_| serde_json::to_string(device).ok())
}

/// Shows `scenario`'s VFs under `sysfs`, if given.
fn show(sysfs: Option<&Path>, scenario: &Scenario) -> Result<(), StateFileError> {
    match sysfs {
        Some(root) => {
            crate::sysfs::render(root, &scenario.devices).map_err(|source| StateFileError::Sysfs {
                root: root.to_owned(),
                source,
            })
        }
        None => Ok(()),
    }
}

/// The library's change: [`StateFile::change`], a file not yet made made from
/// `FAKE_NVML_SCENARIO`, the write after `delay`; answers the new state too.
pub(crate) fn change<T, E>(
    state: &StateFile,
    delay: impl Fn(&Scenario) -> Duration,
    change: impl FnOnce(&mut Scenario) -> Result<T, E>,
) -> Result<(Scenario, T), ChangeError<E>> {
    changed(state, scenario_from_env, delay, change)
}

fn changed<T, E>(
    file: &StateFile,
    absent: impl FnOnce() -> Result<Scenario, StateFileError>,
    delay: impl Fn(&Scenario) -> Duration,
    change: impl FnOnce(&mut Scenario) -> Result<T, E>,
) -> Result<(Scenario, T), ChangeError<E>> {
    let path = file.path();
    let _locked = lock(path).map_err(ChangeError::State)?;
    let mut state = match read(path).map_err(ChangeError::State)? {
        Some(state) => state,
        None => absent().map_err(ChangeError::State)?,
    };
    // What each SR-IOV card was before, so only the cards the change touched are shown anew.
    let before: Vec<Option<String>> = match file.sysfs() {
        Some(_) => state.devices.iter().map(shown_form).collect(),
        None => Vec::new(),
    };
    let answer = change(&mut state).map_err(ChangeError::Refused)?;
    std::thread::sleep(delay(&state));
    write(path, &state).map_err(ChangeError::State)?;
    if let Some(root) = file.sysfs() {
        let touched: Vec<crate::Device> = state
            .devices
            .iter()
            .enumerate()
            .filter(|(at, device)| before.get(*at).cloned().flatten() != shown_form(device))
            .map(|(_, device)| device.clone())
            .collect();
        crate::sysfs::render(root, &touched).map_err(|source| {
            ChangeError::State(StateFileError::Sysfs {
                root: root.to_owned(),
                source,
            })
        })?;
    }
    Ok((state, answer))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn state_of(text: &str) -> (tempfile::TempDir, StateFile) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("state.json"));
        state
            .write(&Scenario::from_json(text.as_bytes()).unwrap())
            .unwrap();
        (dir, state)
    }

    #[test]
    fn a_reset_of_a_card_the_state_has_not_is_no_device_and_writes_nothing() {
        let (_dir, state) = state_of(crate::scenarios::A100_MIG_OFF_ON_PENDING);
        let before = std::fs::read(state.path()).unwrap();
        match state.reset_gpu("0000:99:00.0") {
            Err(StateFileError::NoDevice { bus_id, .. }) => assert_eq!(bus_id, "0000:99:00.0"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(state.path()).unwrap(), before);
    }

    #[test]
    fn a_reset_makes_the_pending_mode_current() {
        let (_dir, state) = state_of(crate::scenarios::A100_MIG_OFF_ON_PENDING);
        state.reset_gpu("0000:3b:00.0").unwrap();
        let card = state.read().unwrap().devices.remove(0);
        assert!(rules::mig_on(&card));
    }

    #[test]
    fn a_reboot_leaves_no_instance() {
        let (_dir, state) = state_of(crate::scenarios::A100_MIG_ON_CARVED);
        state.reboot().unwrap();
        assert!(
            state
                .read()
                .unwrap()
                .devices
                .iter()
                .all(|card| card.gpu_instances.is_empty())
        );
    }

    #[test]
    fn a_change_of_a_state_file_that_is_not_there_is_a_read_error() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("absent.json"));
        let changed = state.change(|_| Ok::<(), ()>(()));
        assert!(matches!(
            changed,
            Err(ChangeError::State(StateFileError::Read { .. }))
        ));
        assert!(!state.path().exists());
    }
}
