//! A host for `mxctl sync`, `status` and `probe`: a built sysfs tree, a boot id, a state
//! directory, and helpers (a recording shell script, or the real helper through the fake NVML).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::support;
use gpu_host_probe::test_util::FakeHelper;
use host_sync::fake_sysfs::FakeSysfs;
use std::path::PathBuf;
use std::process::Command;

/// NVML scenarios of the helper's tests (A100-SXM4-40GB, the real profile table).
pub const CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_CARVED;
pub const NONE_CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_NONE_CARVED;
pub const ON_PENDING: &str = fake_nvml::scenarios::A100_MIG_OFF_ON_PENDING;
pub const NO_MIG: &str = fake_nvml::scenarios::L40S_NO_MIG;

pub struct SyncHost {
    pub dir: tempfile::TempDir,
    pub sysfs: FakeSysfs,
}

impl SyncHost {
    pub fn new() -> SyncHost {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        let proc_dir = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(
            proc_dir.join("boot_id"),
            "11111111-2222-3333-4444-555555555555\n",
        )
        .unwrap();
        SyncHost { dir, sysfs }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn reboot(&self) {
        std::fs::write(
            self.path("proc/sys/kernel/random/boot_id"),
            "99999999-2222-3333-4444-555555555555\n",
        )
        .unwrap();
    }

    /// A fake helper that replies MIG on with one instance to every read, and does what
    /// `configure` adds (per-device acts); every call is recorded (see [`Self::helper_calls`]).
    pub fn helper(&self, configure: impl FnOnce(FakeHelper) -> FakeHelper) -> PathBuf {
        configure(FakeHelper::new(self.dir.path())).write().unwrap()
    }

    /// The real helper reading the cards through the fake NVML, each a carved A100 (MIG on,
    /// two GPU instances), as the sync's default helper script answers.
    pub fn nvml_helper(&self, cards: &[&str]) -> PathBuf {
        self.nvml_helper_of(&cards.iter().map(|bdf| (*bdf, CARVED)).collect::<Vec<_>>())
    }

    /// The real helper reading each card as its scenario file says.
    pub fn nvml_helper_of(&self, cards: &[(&str, &str)]) -> PathBuf {
        let scenario = support::scenario_of(cards).unwrap();
        let dir = self.path("nvml");
        std::fs::create_dir_all(&dir).unwrap();
        support::helper_wrapper(&dir, &scenario, support::Build::Current, None).unwrap()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
        command
            .args(["--config", "/dev/null", "--json"])
            .arg("--sysfs-root")
            .arg(self.sysfs.root())
            .arg("--proc-root")
            .arg(self.path("proc"))
            .arg("--state-dir")
            .arg(self.path("state"))
            .args(args);
        command
    }

    pub fn run(&self, args: &[&str]) -> (i32, serde_json::Value) {
        super::run_json(self.command(args))
    }
}

impl SyncHost {
    /// The calls the fake helper received.
    pub fn helper_calls(&self) -> Vec<String> {
        FakeHelper::calls(self.dir.path())
    }
}
