//! `fake-nvml`: what the world does to the fake's state file (`FAKE_NVML_STATE`) between NVML
//! calls, for a program that is not Rust (a fake `nvidia-smi`, the Python binding's check).
//!
//! - `fake-nvml reset --device BDF`: a GPU reset — a pending MIG mode becomes current, and
//!   every instance is gone (`fake_nvml::StateFile::reset_gpu`). A test's fake `nvidia-smi
//!   --gpu-reset` calls it.
//! - `fake-nvml reboot`: a reboot (or a driver reload) of the whole host — no GPU instance
//!   survives, and the MIG mode survives only on parts that keep it (Ampere), as
//!   `fake_nvml::StateFile::reboot` says.
//!
//! - `fake-nvml sriov-manage -e|-d BDF|ALL`: NVIDIA's `/usr/lib/nvidia/sriov-manage` on the
//!   fake's cards (`fake_nvml::StateFile::sriov_manage`), printing what the script prints and
//!   exiting as it does; with `FAKE_NVML_SYSFS` set, the VFs appear and go in that fake sysfs.
//!   A test installs a script that runs it as the `sriov-manage` its program is given.
//!
//! Each starts from the state file, made from `FAKE_NVML_SCENARIO` when there is none yet (as
//! the library makes it at its first init: a host runs `sriov-manage -e` at boot, before any
//! NVML client). With `FAKE_NVML_LOG` set, each is logged there (`reset BDF`, `reboot`, `sriov-manage -e
//! BDF`), one whole line as the library logs its calls.

#[path = "call_log.rs"]
mod call_log;
#[path = "complain.rs"]
mod complain;

use fake_nvml::{Managed, StateFile};
use std::process::ExitCode;

const USAGE: &str = "usage: fake-nvml reset --device BDF | fake-nvml reboot | fake-nvml sriov-manage <-e|-d> <BDF|ALL>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args.as_slice() {
        [command, flag, device] if command == "reset" && flag == "--device" => {
            Command::Reset(device.clone())
        }
        [command] if command == "reboot" => Command::Reboot,
        [command, flag, device] if command == "sriov-manage" && (flag == "-e" || flag == "-d") => {
            Command::SriovManage {
                enable: flag == "-e",
                device: device.clone(),
            }
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(state) = StateFile::from_env() else {
        eprintln!("fake-nvml: FAKE_NVML_STATE names no state file");
        return ExitCode::from(2);
    };
    // Before any NVML client has run (a boot's `sriov-manage -e`), there is no state yet: it is
    // made from the scenario as the library makes it at its first init.
    if let Err(error) = state.load() {
        return failed(&error);
    }
    let (done, line) = match &command {
        Command::Reset(device) => (state.reset_gpu(device), format!("reset {device}")),
        Command::Reboot => (state.reboot(), "reboot".to_owned()),
        Command::SriovManage { enable, device } => {
            let flag = if *enable { "-e" } else { "-d" };
            call_log::append(&format!("sriov-manage {flag} {device}"));
            return sriov_manage(&state, *enable, device);
        }
    };
    match done {
        Ok(()) => {
            call_log::append(&line);
            ExitCode::SUCCESS
        }
        Err(error) => failed(&error),
    }
}

enum Command {
    Reset(String),
    Reboot,
    SriovManage { enable: bool, device: String },
}

/// `sriov-manage -e|-d` on one card or (`ALL`) each card with SR-IOV in bus order, stopping at
/// the first failure, as NVIDIA's script does.
fn sriov_manage(state: &StateFile, enable: bool, device: &str) -> ExitCode {
    let devices = if device == "ALL" {
        match state.read() {
            Ok(scenario) => scenario
                .devices
                .iter()
                .filter(|card| card.sriov.is_some())
                .filter_map(|card| fake_nvml::sysfs::gpu_address(&card.pci_bus_id))
                .collect(),
            Err(error) => return failed(&error),
        }
    } else {
        vec![device.to_owned()]
    };
    let cost = state
        .read()
        .map(|scenario| std::time::Duration::from_millis(scenario.costs.sriov_manage_ms))
        .unwrap_or_default();
    for bdf in devices {
        std::thread::sleep(cost);
        let managed = match state.sriov_manage(&bdf, enable) {
            Ok(managed) => managed,
            // NVIDIA's script ends so on an address `lspci` does not know.
            Err(fake_nvml::StateFileError::NoDevice { .. }) => return ExitCode::from(1),
            Err(error) => return failed(&error),
        };
        let code = match managed {
            Managed::Enabled | Managed::SilentlyFailed => {
                println!("Enabling VFs on {bdf}");
                0
            }
            Managed::Disabled => {
                println!("Disabling VFs on {bdf}");
                0
            }
            Managed::AlreadyEnabled => {
                println!("GPU at {bdf} already has VFs enabled.");
                0
            }
            Managed::AlreadyDisabled => {
                println!("GPU at {bdf} already has VFs disabled.");
                0
            }
            Managed::NoSriov => 0,
            Managed::FailedAsAtBoot => {
                println!("Enabling VFs on {bdf}");
                eprintln!(
                    "awk: (FILENAME=- FNR=1) warning: error writing standard output: File exists"
                );
                1
            }
            Managed::Held => {
                eprintln!("Cannot obtain unbindLock for {bdf}");
                1
            }
            _ => 1,
        };
        if code != 0 {
            return ExitCode::from(code);
        }
    }
    ExitCode::SUCCESS
}

/// Says why on stderr, as the library does ([`complain::complain`]), and ends with 1.
fn failed(error: &dyn std::error::Error) -> ExitCode {
    complain::complain(error);
    ExitCode::from(1)
}
