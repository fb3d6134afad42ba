//! Finding the binaries the end-to-end tests run.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gpu-partition-helper"))
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `mxctl`, built beside this package's binary (`cargo test --workspace` builds it; a test run
/// of this package alone builds it here).
pub fn mxctl() -> PathBuf {
    let path = helper().with_file_name("mxctl");
    if !path.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "mxctl", "--manifest-path"])
            .arg(manifest)
            .status()
            .unwrap();
        assert!(status.success(), "cannot build mxctl");
    }
    path
}

/// A two-line wrapper that runs the helper in fixture mode: the probe clears the environment,
/// so the fixture directory is given on the command line.
pub fn wrapper(dir: &Path, page_size: Option<usize>) -> PathBuf {
    let path = dir.join("helper");
    let paging = page_size
        .map(|n| format!(" --page-size {n}"))
        .unwrap_or_default();
    gpu_host_probe::test_util::write_executable(
        &path,
        &format!(
            "#!/bin/sh\nexec {} --fixture-dir {}{paging} \"$@\"\n",
            helper().display(),
            fixtures().display()
        ),
    )
    .unwrap();
    path
}
