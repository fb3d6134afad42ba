//! A host for `mxctl sync`, `status` and `probe`: a built sysfs tree, a boot id, a state
//! directory, and helpers (a recording shell script, or the real helper through the fake NVML).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::machine::Machine;
use fake_nvml::support;
use gpu_host_probe::test_util::FakeHelper;
use std::path::{Path, PathBuf};
use std::process::Command;

/// NVML scenarios of the helper's tests (A100-SXM4-40GB, the real profile table).
pub const CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_CARVED;
pub const NONE_CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_NONE_CARVED;
pub const ON_PENDING: &str = fake_nvml::scenarios::A100_MIG_OFF_ON_PENDING;
pub const NO_MIG: &str = fake_nvml::scenarios::L40S_NO_MIG;

machine_host!(SyncHost);

impl SyncHost {
    pub fn new() -> SyncHost {
        SyncHost {
            machine: Machine::new(),
        }
    }

    pub fn reboot(&self) {
        self.boot("99999999-2222-3333-4444-555555555555");
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
        self.mxctl(args)
    }

    pub fn run(&self, args: &[&str]) -> (i32, serde_json::Value) {
        super::run_json(self.command(args))
    }

    /// `mxctl --json sync --pool enabled --helper HELPER`: a sync that reads the cards.
    pub fn sync_enabled(&self, helper: &Path) -> (i32, serde_json::Value) {
        self.sync_pool("enabled", helper)
    }

    /// [`Self::sync_enabled`], which must exit 0 (its document in the failure): its document.
    #[track_caller]
    pub fn synced(&self, helper: &Path) -> serde_json::Value {
        let (code, sync) = self.sync_enabled(helper);
        assert_eq!(code, 0, "{sync}");
        sync
    }

    /// `mxctl --json sync --pool POOL --helper HELPER`.
    pub fn sync_pool(&self, pool: &str, helper: &Path) -> (i32, serde_json::Value) {
        self.run(&["sync", "--pool", pool, "--helper", helper.to_str().unwrap()])
    }

    /// `mxctl --json probe --device 0000:3b:00.0 OPTIONS… --helper HELPER`: a probe of the
    /// one card the probe tests read.
    pub fn probe_command(&self, helper: &Path, options: &[&str]) -> Command {
        let mut command = self.command(&["probe", "--device", "0000:3b:00.0"]);
        command.args(options).arg("--helper").arg(helper);
        command
    }

    /// Runs [`Self::probe_command`].
    pub fn probe(&self, helper: &Path, options: &[&str]) -> (i32, serde_json::Value) {
        super::run_json(self.probe_command(helper, options))
    }
}

impl SyncHost {
    /// The calls the fake helper received.
    pub fn helper_calls(&self) -> Vec<String> {
        FakeHelper::calls(self.dir.path())
    }
}
