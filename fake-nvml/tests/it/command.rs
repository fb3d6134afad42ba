//! The `fake-nvml` command as a host runs it: `sriov-manage -e` at boot, before any NVML client
//! has made the state file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::StateFile;
use fake_nvml::scenarios::PART_A100_PCIE_40GB;
use fake_nvml::support::fake_nvml_binary;

#[test]
fn sriov_manage_before_any_client_makes_the_state_from_the_scenario_and_enables_the_vfs() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, PART_A100_PCIE_40GB).unwrap();
    let state = dir.path().join("state.json");
    let out = std::process::Command::new(fake_nvml_binary().unwrap())
        .args(["sriov-manage", "-e", "0000:3b:00.0"])
        .env("FAKE_NVML_SCENARIO", &scenario)
        .env("FAKE_NVML_STATE", &state)
        .env_remove("FAKE_NVML_SYSFS")
        .env_remove("FAKE_NVML_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Enabling VFs on 0000:3b:00.0\n"
    );
    let card = StateFile::new(&state).read().unwrap().devices.remove(0);
    assert_eq!(card.sriov.unwrap().vfs.len(), 16);
}
