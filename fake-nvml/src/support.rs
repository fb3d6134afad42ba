//! For tests and benchmarks: where the built fake library and the helper binary are, and a
//! helper wrapper that runs the real helper against the fake (the probe clears the
//! environment, so the wrapper sets `LD_LIBRARY_PATH` and `FAKE_NVML_SCENARIO` itself).
//!
//! Each is found, in this order: where its variable says (`FAKE_NVML_LIBRARY`,
//! `FAKE_NVML_HELPER`, `FAKE_NVML_BINARY`); next to the running program (a `cargo test
//! --workspace` of this workspace builds them all); else built, once, from this crate's own
//! workspace (`cargo build --manifest-path` of it, never the caller's) into a directory of the
//! caller's target directory. A crate outside this workspace that depends on `fake-nvml` by
//! path gets them so; one that has it from a registry sets the variables. The build without
//! `nvmlDeviceGetGpuInstanceProfileInfoV` is always built so.
//!
//! A test host's boot: [`ProcRoot`] is the `/proc` the host crates read (its boot id), and
//! [`reboot`] reboots the host — the fake's cards as a reboot leaves them, and a new boot id.

use crate::read::ScenarioError;
use crate::scenario::Scenario;
use crate::store::{StateFile, StateFileError};
use gpu_host_probe::test_util::write_executable;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which build of the fake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Build {
    /// Every function, as a current driver has.
    Current,
    /// Without `nvmlDeviceGetGpuInstanceProfileInfoV`, as drivers before it (R470).
    WithoutProfileInfoV,
}

/// Something the support could not find, build or write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupportError {
    /// The running program's path is not known (it names where the built files are).
    #[error("cannot find the running program")]
    NoProgram(#[source] std::io::Error),
    /// A path has no directory above it where one is needed.
    #[error("{} has no parent directory", .0.display())]
    NoParent(PathBuf),
    /// A variable names a file that is not there.
    #[error("{variable} names {}, which is no file", path.display())]
    NotAFile {
        /// The variable (`FAKE_NVML_LIBRARY`, `FAKE_NVML_HELPER`, `FAKE_NVML_BINARY`).
        variable: &'static str,
        /// What it names.
        path: PathBuf,
    },
    /// Something to build, but fake-nvml was not built from a checkout of its workspace.
    #[error(
        "cannot build {package}: fake-nvml was not built from a checkout of its workspace; set \
         {variable} to a built one"
    )]
    NoWorkspace {
        /// The package.
        package: &'static str,
        /// The variable to set instead.
        variable: &'static str,
    },
    /// Cargo could not be run.
    #[error("cannot run cargo")]
    Cargo(#[source] std::io::Error),
    /// The build failed.
    #[error("cargo build -p {package} (in {}) failed: {stderr}", workspace.display())]
    BuildFailed {
        /// The package.
        package: &'static str,
        /// The workspace built in.
        workspace: PathBuf,
        /// What cargo said.
        stderr: String,
    },
    /// The build succeeded without making the file.
    #[error("no {0} after the build")]
    NotBuilt(&'static str),
    /// A file or directory could not be made, copied or written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A scenario (given, or made of templates) does not read.
    #[error("the scenario")]
    Scenario(#[source] ScenarioError),
    /// A template of [`scenario_of`] is not JSON of a scenario with a device.
    #[error("template {index} of the scenario has no device")]
    Template {
        /// Its position among the cards.
        index: usize,
    },
    /// A template of [`scenario_of`] is not JSON.
    #[error("template {index} of the scenario is not JSON")]
    TemplateJson {
        /// Its position among the cards.
        index: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The fake's state file could not be written or changed.
    #[error("the fake's state")]
    State(#[source] StateFileError),
}

/// The running program's profile directory (`target/debug`, `target/release`).
fn profile_dir() -> Result<PathBuf, SupportError> {
    let exe = std::env::current_exe().map_err(SupportError::NoProgram)?;
    let dir = exe
        .parent()
        .ok_or_else(|| SupportError::NoParent(exe.clone()))?;
    Ok(match dir.file_name().and_then(|name| name.to_str()) {
        Some("deps" | "examples") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    })
}

fn is_release(profile: &Path) -> bool {
    profile.file_name().and_then(|name| name.to_str()) == Some("release")
}

/// The workspace this crate was built from, when it holds the helper's crate too (a path
/// dependency on a checkout of it does; a copy from a registry does not).
fn own_workspace() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    (root.join("Cargo.toml").is_file() && root.join("gpu-partition-helper/Cargo.toml").is_file())
        .then(|| root.to_path_buf())
}

/// Builds `package` (with `features`) of this crate's own workspace — never the caller's:
/// `cargo build --manifest-path <that workspace> --locked` into `<the caller's target
/// directory>/<name>`. Answers its profile directory.
fn build(
    package: &'static str,
    variable: &'static str,
    features: &[&str],
    name: &str,
) -> Result<PathBuf, SupportError> {
    let workspace = own_workspace().ok_or(SupportError::NoWorkspace { package, variable })?;
    let profile = profile_dir()?;
    let target = profile
        .parent()
        .ok_or_else(|| SupportError::NoParent(profile.clone()))?
        .join(name);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args([
            "build",
            "--quiet",
            "--locked",
            "-p",
            package,
            "--manifest-path",
        ])
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    if is_release(&profile) {
        command.arg("--release");
    }
    let output = command.output().map_err(SupportError::Cargo)?;
    if !output.status.success() {
        return Err(SupportError::BuildFailed {
            package,
            workspace,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(target.join(if is_release(&profile) {
        "release"
    } else {
        "debug"
    }))
}

/// The file the variable `name` names, when it is set (and not empty).
fn from_env(variable: &'static str) -> Result<Option<PathBuf>, SupportError> {
    match std::env::var_os(variable).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(path) => {
            let path = PathBuf::from(path);
            if path.is_file() {
                Ok(Some(path))
            } else {
                Err(SupportError::NotAFile { variable, path })
            }
        }
    }
}

/// The first of `names` under `dirs` that exists.
fn first(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|path| path.is_file())
}

/// The built fake library (`libfake_nvml.so`) of `build`.
pub fn library(build_of: Build) -> Result<PathBuf, SupportError> {
    const NAME: &str = "libfake_nvml.so";
    match build_of {
        Build::Current => {
            if let Some(set) = from_env("FAKE_NVML_LIBRARY")? {
                return Ok(set);
            }
            let profile = profile_dir()?;
            if let Some(found) = first(&[profile.join("deps"), profile.clone()], &[NAME]) {
                return Ok(found);
            }
            let built = build(
                "fake-nvml",
                "FAKE_NVML_LIBRARY (and FAKE_NVML_BINARY)",
                &[],
                "fake-nvml-support",
            )?;
            first(&[built], &[NAME])
        }
        Build::WithoutProfileInfoV => {
            let built = build(
                "fake-nvml",
                "FAKE_NVML_LIBRARY (and FAKE_NVML_BINARY)",
                &["without-profile-info-v"],
                "fake-nvml-without-profile-info-v",
            )?;
            first(&[built], &[NAME])
        }
    }
    .ok_or(SupportError::NotBuilt(NAME))
}

/// The workspace's binary `name` (of the package of that name): the file `variable` names when
/// it is set, else the one in the profile's directory, else one built now.
fn binary(name: &'static str, variable: &'static str) -> Result<PathBuf, SupportError> {
    if let Some(set) = from_env(variable)? {
        return Ok(set);
    }
    let profile = profile_dir()?;
    if let Some(found) = first(&[profile], &[name]) {
        return Ok(found);
    }
    let built = build(name, variable, &[], "fake-nvml-support")?;
    first(&[built], &[name]).ok_or(SupportError::NotBuilt(name))
}

/// The built `gpu-partition-helper` binary.
pub fn helper_binary() -> Result<PathBuf, SupportError> {
    binary("gpu-partition-helper", "FAKE_NVML_HELPER")
}

/// `'text'` for `sh`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The built `fake-nvml` binary (`fake-nvml reset --device BDF`).
pub fn fake_nvml_binary() -> Result<PathBuf, SupportError> {
    binary("fake-nvml", "FAKE_NVML_BINARY")
}

/// A helper wrapper in `dir` whose fake keeps its state in `dir/state.json`, written from
/// `scenario` now: consecutive runs see each other's writes, and [`StateFile`] (or `fake-nvml
/// reset` with the same `FAKE_NVML_STATE`) changes it between them. Answers the wrapper's
/// path and the state file's.
pub fn stateful_helper_wrapper(
    dir: &Path,
    scenario: &str,
    log: Option<&Path>,
) -> Result<(PathBuf, PathBuf), SupportError> {
    let state = dir.join("state.json");
    let wrapper = wrapper(dir, scenario, Build::Current, log, Some((&state, None)))?;
    // The state exists from the start, so what reads it besides the library (the test reset
    // backend, `fake-nvml reset`) sees the scenario before any run.
    let parsed = Scenario::from_json(scenario.as_bytes()).map_err(SupportError::Scenario)?;
    StateFile::new(&state)
        .write(&parsed)
        .map_err(SupportError::State)?;
    Ok((wrapper, state))
}

/// A vGPU host of the fake in `dir`, its virtual functions shown in the fake sysfs at
/// `sysfs` (where the test has added each GPU of `scenario` with SR-IOV, by
/// `host_sync::fake_sysfs::FakeSysfs`): the helper wrapper, the state file (as
/// [`stateful_helper_wrapper`]), `dir/sriov-manage` — a script that runs `fake-nvml
/// sriov-manage` on that state, for a program's `sriov-manage` path — and the driver's side of
/// each VF's type write ([`FakeVgpuTypes`]). Every write of the state shows the VFs there.
pub fn vgpu_host(
    dir: &Path,
    scenario: &str,
    log: Option<&Path>,
    sysfs: &Path,
) -> Result<VgpuHost, SupportError> {
    let state_path = dir.join("state.json");
    let helper = wrapper(
        dir,
        scenario,
        Build::Current,
        log,
        Some((&state_path, Some(sysfs))),
    )?;
    let parsed = Scenario::from_json(scenario.as_bytes()).map_err(SupportError::Scenario)?;
    let state = StateFile::new(&state_path).with_sysfs(sysfs);
    state.write(&parsed).map_err(SupportError::State)?;
    let mut exports = format!(
        "export FAKE_NVML_STATE={}\nexport FAKE_NVML_SYSFS={}\n",
        quoted(&state_path),
        quoted(sysfs)
    );
    if let Some(log) = log {
        exports.push_str(&format!("export FAKE_NVML_LOG={}\n", quoted(log)));
    }
    let script = format!(
        "#!/bin/sh\n{exports}exec {} sriov-manage \"$@\"\n",
        quoted(&fake_nvml_binary()?)
    );
    let sriov_manage = dir.join("sriov-manage");
    write_executable(&sriov_manage, &script).map_err(written(&sriov_manage))?;
    Ok(VgpuHost {
        helper,
        types: FakeVgpuTypes {
            state: state.clone(),
            log: log.map(Path::to_path_buf),
        },
        state,
        sriov_manage,
    })
}

/// What [`vgpu_host`] made.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VgpuHost {
    /// The helper wrapper.
    pub helper: PathBuf,
    /// The state file, showing its VFs in the fake sysfs.
    pub state: StateFile,
    /// The fake `sriov-manage`.
    pub sriov_manage: PathBuf,
    /// The driver's side of a VF's type write.
    pub types: FakeVgpuTypes,
}

/// The driver's side of a VF's `current_vgpu_type` write on the fake's cards: the write is
/// refused as the driver refuses it ([`StateFile::write_vgpu_type`]: `EIO` where the card cannot
/// create the type now, `EPERM` on a VF that has a vGPU), else the state changes and the fake
/// sysfs shows it. Each write is logged (`current_vgpu_type <gpu> virtfn<N> <id>`, with ` EIO`
/// or the errno's name where refused).
#[derive(Debug, Clone)]
pub struct FakeVgpuTypes {
    state: StateFile,
    log: Option<PathBuf>,
}

impl gpu_host_probe::vf::VgpuTypes for FakeVgpuTypes {
    fn write(
        &self,
        _sysfs_root: &Path,
        file: gpu_host_probe::vf::VfTypeFile,
        id: Option<gpu_partition_types::VgpuTypeId>,
    ) -> std::io::Result<()> {
        let id = id.map_or(0, gpu_partition_types::VgpuTypeId::get);
        let answer = self
            .state
            .write_vgpu_type(&file.gpu.to_string(), file.index, id)
            .map_err(std::io::Error::other)?;
        if let Some(log) = &self.log {
            let refused = match answer {
                Ok(()) => String::new(),
                Err(errno) => format!(" {:?}", nix::errno::Errno::from_raw(errno)),
            };
            crate::call_log::append_to(
                log,
                &format!(
                    "current_vgpu_type {} virtfn{} {id}{refused}",
                    file.gpu, file.index
                ),
            );
        }
        answer.map_err(std::io::Error::from_raw_os_error)
    }
}

/// A helper wrapper in `dir`: the fake library of `build_of` installed as
/// `dir/lib/libnvidia-ml.so.1`, `scenario` written to `dir/scenario.json`, and `dir/helper`, a
/// script that runs the real helper binary with `LD_LIBRARY_PATH` and `FAKE_NVML_SCENARIO` set
/// (and `FAKE_NVML_LOG` when `log` is given). Answers the wrapper's path.
pub fn helper_wrapper(
    dir: &Path,
    scenario: &str,
    build_of: Build,
    log: Option<&Path>,
) -> Result<PathBuf, SupportError> {
    wrapper(dir, scenario, build_of, log, None)
}

/// A helper wrapper in `dir` that runs the real helper in fixture mode (`--fixture-dir
/// fixtures`, and `--page-size` when `page_size` is given): NVML is not loaded at all, and the
/// fixture directory is given on the command line because a probe clears the environment.
/// Answers the wrapper's path.
pub fn fixture_helper_wrapper(
    dir: &Path,
    fixtures: &Path,
    page_size: Option<usize>,
) -> Result<PathBuf, SupportError> {
    let paging = page_size
        .map(|n| format!(" --page-size {n}"))
        .unwrap_or_default();
    let script = format!(
        "#!/bin/sh\nexec {} --fixture-dir {}{paging} \"$@\"\n",
        quoted(&helper_binary()?),
        quoted(fixtures),
    );
    let wrapper = dir.join("helper");
    write_executable(&wrapper, &script).map_err(written(&wrapper))?;
    Ok(wrapper)
}

fn wrapper(
    dir: &Path,
    scenario: &str,
    build_of: Build,
    log: Option<&Path>,
    state: Option<(&Path, Option<&Path>)>,
) -> Result<PathBuf, SupportError> {
    let lib_dir = dir.join("lib");
    std::fs::create_dir_all(&lib_dir).map_err(written(&lib_dir))?;
    let library = library(build_of)?;
    let installed = lib_dir.join("libnvidia-ml.so.1");
    std::fs::copy(&library, &installed).map_err(written(&installed))?;
    let scenario_path = dir.join("scenario.json");
    std::fs::write(&scenario_path, scenario).map_err(written(&scenario_path))?;
    let mut log_line = log
        .map(|log| format!("export FAKE_NVML_LOG={}\n", quoted(log)))
        .unwrap_or_default();
    if let Some((state, sysfs)) = state {
        log_line.push_str(&format!("export FAKE_NVML_STATE={}\n", quoted(state)));
        if let Some(sysfs) = sysfs {
            log_line.push_str(&format!("export FAKE_NVML_SYSFS={}\n", quoted(sysfs)));
        }
    }
    let script = format!(
        "#!/bin/sh\nexport LD_LIBRARY_PATH={}\nexport FAKE_NVML_SCENARIO={}\n{log_line}exec {} \"$@\"\n",
        quoted(&lib_dir),
        quoted(&scenario_path),
        quoted(&helper_binary()?),
    );
    let wrapper = dir.join("helper");
    write_executable(&wrapper, &script).map_err(written(&wrapper))?;
    Ok(wrapper)
}

/// [`SupportError::Write`] of `path`.
fn written(path: &Path) -> impl FnOnce(std::io::Error) -> SupportError {
    let path = path.to_owned();
    move |source| SupportError::Write { path, source }
}

/// A scenario of several cards, each the first device of a scenario file (`template`) put at
/// another bus ID; the driver versions are those of the first template. Answers the JSON.
pub fn scenario_of(cards: &[(&str, &str)]) -> Result<String, SupportError> {
    let mut devices = Vec::new();
    let mut versions = None;
    for (index, (bus_id, template)) in cards.iter().enumerate() {
        let mut parsed: serde_json::Value = serde_json::from_str(template)
            .map_err(|source| SupportError::TemplateJson { index, source })?;
        versions.get_or_insert_with(|| {
            (
                parsed["driver_version"].clone(),
                parsed["nvml_version"].clone(),
            )
        });
        let mut device = parsed
            .get_mut("devices")
            .and_then(|devices| devices.get_mut(0))
            .map(serde_json::Value::take)
            .unwrap_or_default();
        if !device.is_object() {
            return Err(SupportError::Template { index });
        }
        device["pci_bus_id"] = (*bus_id).into();
        devices.push(device);
    }
    let (driver_version, nvml_version) = versions.unwrap_or_default();
    let scenario = serde_json::json!({
        "driver_version": driver_version,
        "nvml_version": nvml_version,
        "devices": devices,
    });
    Scenario::from_json(scenario.to_string().as_bytes()).map_err(SupportError::Scenario)?;
    Ok(scenario.to_string())
}

/// A test host's `/proc` as the host crates read it (`host_sync::Host::with_proc_root`,
/// warm-reset's backends): its boot id, `sys/kernel/random/boot_id`, which tells one boot from
/// the next. The directory may hold more (processes, the driver's files); this writes the boot
/// id only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRoot {
    root: PathBuf,
}

impl ProcRoot {
    /// The `/proc` at `root` (nothing is written yet).
    pub fn at(root: impl Into<PathBuf>) -> ProcRoot {
        ProcRoot { root: root.into() }
    }

    /// The `/proc` at `root`, booted as `boot_id` ([`ProcRoot::boot`]).
    pub fn booted(root: impl Into<PathBuf>, boot_id: &str) -> Result<ProcRoot, SupportError> {
        let proc_root = ProcRoot::at(root);
        proc_root.boot(boot_id)?;
        Ok(proc_root)
    }

    /// Its directory, to give a host as its proc root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The boot id file (`sys/kernel/random/boot_id`).
    pub fn boot_id_file(&self) -> PathBuf {
        self.root.join("sys/kernel/random/boot_id")
    }

    /// Boots the host as `boot_id`: the boot id file says it (as the kernel writes it, with a
    /// newline), its directories made as needed.
    pub fn boot(&self, boot_id: &str) -> Result<(), SupportError> {
        let file = self.boot_id_file();
        let dir = file
            .parent()
            .ok_or_else(|| SupportError::NoParent(file.clone()))?;
        std::fs::create_dir_all(dir).map_err(written(dir))?;
        std::fs::write(&file, format!("{boot_id}\n")).map_err(written(&file))
    }
}

/// A reboot of a test host: the fake's cards as a reboot leaves them ([`StateFile::reboot`]:
/// no instance survives, the MIG mode only where the part keeps it), then the new boot id in
/// `proc_root` ([`ProcRoot::boot`]), so a sync after it sees another boot.
pub fn reboot(state: &StateFile, proc_root: &ProcRoot, boot_id: &str) -> Result<(), SupportError> {
    state.reboot().map_err(SupportError::State)?;
    proc_root.boot(boot_id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_reboot_writes_the_new_boot_id_and_leaves_no_instance() {
        let dir = tempfile::tempdir().unwrap();
        let proc_root = ProcRoot::booted(dir.path().join("proc"), "11111111-aaaa").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("proc/sys/kernel/random/boot_id")).unwrap(),
            "11111111-aaaa\n"
        );
        let state = StateFile::new(dir.path().join("state.json"));
        state
            .write(&Scenario::from_json(crate::scenarios::A100_MIG_ON_CARVED.as_bytes()).unwrap())
            .unwrap();
        reboot(&state, &proc_root, "22222222-bbbb").unwrap();
        assert_eq!(
            std::fs::read_to_string(proc_root.boot_id_file()).unwrap(),
            "22222222-bbbb\n"
        );
        assert!(state.read().unwrap().devices[0].gpu_instances.is_empty());
    }

    #[test]
    fn a_template_without_a_device_is_an_error_naming_it_not_a_panic() {
        for template in ["{}", "[]", "{\"devices\": 7}", "{\"devices\": []}"] {
            assert!(
                matches!(
                    scenario_of(&[("0000:3b:00.0", template)]),
                    Err(SupportError::Template { index: 0 })
                ),
                "{template}"
            );
        }
    }
}
