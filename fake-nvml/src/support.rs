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

/// Something the support could not find or build.
#[derive(Debug)]
pub struct SupportError(pub String);

impl std::fmt::Display for SupportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SupportError {}

/// The running program's profile directory (`target/debug`, `target/release`).
fn profile_dir() -> Result<PathBuf, SupportError> {
    let exe = std::env::current_exe()
        .map_err(|error| SupportError(format!("cannot find the running program: {error}")))?;
    let dir = exe
        .parent()
        .ok_or_else(|| SupportError(format!("{} has no directory", exe.display())))?;
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
fn build(package: &str, features: &[&str], name: &str) -> Result<PathBuf, SupportError> {
    let workspace = own_workspace().ok_or_else(|| {
        SupportError(format!(
            "cannot build {package}: fake-nvml was not built from a checkout of its workspace; \
             set {} to a built one",
            match package {
                "gpu-partition-helper" => "FAKE_NVML_HELPER",
                "fake-nvml" => "FAKE_NVML_LIBRARY (and FAKE_NVML_BINARY)",
                _ => "the variable of fake_nvml::support",
            }
        ))
    })?;
    let profile = profile_dir()?;
    let target = profile
        .parent()
        .ok_or_else(|| SupportError(format!("{} has no parent", profile.display())))?
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
    let output = command
        .output()
        .map_err(|error| SupportError(format!("cannot run cargo: {error}")))?;
    if !output.status.success() {
        return Err(SupportError(format!(
            "cargo build -p {package} (in {}) failed: {}",
            workspace.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(target.join(if is_release(&profile) {
        "release"
    } else {
        "debug"
    }))
}

/// The file the variable `name` names, when it is set (and not empty).
fn from_env(name: &str) -> Result<Option<PathBuf>, SupportError> {
    match std::env::var_os(name).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(path) => {
            let path = PathBuf::from(path);
            if path.is_file() {
                Ok(Some(path))
            } else {
                Err(SupportError(format!(
                    "{name} names {}, which is no file",
                    path.display()
                )))
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
            let built = build("fake-nvml", &[], "fake-nvml-support")?;
            first(&[built], &[NAME])
        }
        Build::WithoutProfileInfoV => {
            let built = build(
                "fake-nvml",
                &["without-profile-info-v"],
                "fake-nvml-without-profile-info-v",
            )?;
            first(&[built], &[NAME])
        }
    }
    .ok_or_else(|| SupportError(format!("no {NAME} after the build")))
}

/// The built `gpu-partition-helper` binary.
pub fn helper_binary() -> Result<PathBuf, SupportError> {
    const NAME: &str = "gpu-partition-helper";
    if let Some(set) = from_env("FAKE_NVML_HELPER")? {
        return Ok(set);
    }
    let profile = profile_dir()?;
    if let Some(found) = first(&[profile], &[NAME]) {
        return Ok(found);
    }
    let built = build(NAME, &[], "fake-nvml-support")?;
    first(&[built], &[NAME]).ok_or_else(|| SupportError(format!("no {NAME} after the build")))
}

/// `'text'` for `sh`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The built `fake-nvml` binary (`fake-nvml reset --device BDF`).
pub fn fake_nvml_binary() -> Result<PathBuf, SupportError> {
    const NAME: &str = "fake-nvml";
    if let Some(set) = from_env("FAKE_NVML_BINARY")? {
        return Ok(set);
    }
    let profile = profile_dir()?;
    if let Some(found) = first(&[profile], &[NAME]) {
        return Ok(found);
    }
    let built = build(NAME, &[], "fake-nvml-support")?;
    first(&[built], &[NAME]).ok_or_else(|| SupportError(format!("no {NAME} after the build")))
}

/// A helper wrapper in `dir` whose fake keeps its state in `dir/state.json` (made from
/// `scenario` by the first run): consecutive runs see each other's writes, and `fake-nvml
/// reset` with the same `FAKE_NVML_STATE` resets a GPU in it. Answers the wrapper's path and
/// the state file.
pub fn stateful_helper_wrapper(
    dir: &Path,
    scenario: &str,
    log: Option<&Path>,
) -> Result<(PathBuf, PathBuf), SupportError> {
    let state = dir.join("state.json");
    let wrapper = wrapper(dir, scenario, Build::Current, log, Some(&state))?;
    // The state exists from the start, so what reads it besides the library (the test reset
    // backend, `fake-nvml reset`) sees the scenario before any run.
    let parsed = crate::scenario::Scenario::from_json(scenario.as_bytes())
        .map_err(|error| SupportError(format!("the scenario: {error}")))?;
    crate::store::write(&state, &parsed).map_err(|error| SupportError(error.to_string()))?;
    Ok((wrapper, state))
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

fn wrapper(
    dir: &Path,
    scenario: &str,
    build_of: Build,
    log: Option<&Path>,
    state: Option<&Path>,
) -> Result<PathBuf, SupportError> {
    let io = |what: &str, path: &Path, error: std::io::Error| {
        SupportError(format!("cannot {what} {}: {error}", path.display()))
    };
    let lib_dir = dir.join("lib");
    std::fs::create_dir_all(&lib_dir).map_err(|e| io("create", &lib_dir, e))?;
    let library = library(build_of)?;
    let installed = lib_dir.join("libnvidia-ml.so.1");
    std::fs::copy(&library, &installed).map_err(|e| io("copy the library to", &installed, e))?;
    let scenario_path = dir.join("scenario.json");
    std::fs::write(&scenario_path, scenario).map_err(|e| io("write", &scenario_path, e))?;
    let mut log_line = log
        .map(|log| format!("export FAKE_NVML_LOG={}\n", quoted(log)))
        .unwrap_or_default();
    if let Some(state) = state {
        log_line.push_str(&format!("export FAKE_NVML_STATE={}\n", quoted(state)));
    }
    let script = format!(
        "#!/bin/sh\nexport LD_LIBRARY_PATH={}\nexport FAKE_NVML_SCENARIO={}\n{log_line}exec {} \"$@\"\n",
        quoted(&lib_dir),
        quoted(&scenario_path),
        quoted(&helper_binary()?),
    );
    let wrapper = dir.join("helper");
    write_executable(&wrapper, &script).map_err(|e| io("write", &wrapper, e))?;
    Ok(wrapper)
}

/// A scenario of several cards, each the first device of a scenario file (`template`) put at
/// another bus ID; the driver versions are those of the first template. Answers the JSON.
pub fn scenario_of(cards: &[(&str, &str)]) -> Result<String, SupportError> {
    let bad = |why: String| SupportError(format!("cannot build the scenario: {why}"));
    let mut devices = Vec::new();
    let mut versions = None;
    for (bus_id, template) in cards {
        let mut parsed: serde_json::Value =
            serde_json::from_str(template).map_err(|error| bad(error.to_string()))?;
        versions.get_or_insert_with(|| {
            (
                parsed["driver_version"].clone(),
                parsed["nvml_version"].clone(),
            )
        });
        let mut device = parsed["devices"][0].take();
        if !device.is_object() {
            return Err(bad("a template without a device".to_owned()));
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
    crate::scenario::Scenario::from_json(scenario.to_string().as_bytes())
        .map_err(|error| bad(error.to_string()))?;
    Ok(scenario.to_string())
}
