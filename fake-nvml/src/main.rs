//! `fake-nvml`: what the world does to the fake's state file (`FAKE_NVML_STATE`) between NVML
//! calls.
//!
//! - `fake-nvml reset --device BDF`: a GPU reset — a pending MIG mode becomes current, and
//!   every instance is gone. A test's fake `nvidia-smi --gpu-reset` calls it.
//! - `fake-nvml reboot`: a reboot (or a driver reload) of the whole host — no GPU instance
//!   survives, and the MIG mode survives only on parts that keep it (Ampere), as
//!   `fake_nvml::rules::reboot` says.
//!
//! With `FAKE_NVML_LOG` set, each is logged there (`reset BDF`, `reboot`), as the library logs
//! its calls.

use fake_nvml::scenario::parse_bus_id;
use std::process::ExitCode;

const USAGE: &str = "usage: fake-nvml reset --device BDF | fake-nvml reboot";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args.as_slice() {
        [command, flag, device] if command == "reset" && flag == "--device" => {
            let Some(wanted) = parse_bus_id(device) else {
                eprintln!("fake-nvml: {device:?} is not a PCI bus ID");
                return ExitCode::from(2);
            };
            Command::Reset(device.clone(), wanted)
        }
        [command] if command == "reboot" => Command::Reboot,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(path) = fake_nvml::store::state_path() else {
        eprintln!("fake-nvml: FAKE_NVML_STATE names no state file");
        return ExitCode::from(2);
    };
    let changed = fake_nvml::store::change(
        &path,
        |_| std::time::Duration::ZERO,
        |state| match &command {
            Command::Reset(device, wanted) => {
                let card = state
                    .devices
                    .iter_mut()
                    .find(|d| parse_bus_id(&d.pci_bus_id) == Some(*wanted))
                    .ok_or_else(|| format!("no device {device} in {}", path.display()))?;
                fake_nvml::rules::gpu_reset(card);
                Ok::<(), String>(())
            }
            Command::Reboot => {
                state.devices.iter_mut().for_each(fake_nvml::rules::reboot);
                Ok(())
            }
        },
    );
    match changed {
        Ok(_) => {
            if let Some(log) = std::env::var_os("FAKE_NVML_LOG") {
                use std::io::Write;
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                {
                    let _ = match &command {
                        Command::Reset(device, _) => writeln!(file, "reset {device}"),
                        Command::Reboot => writeln!(file, "reboot"),
                    };
                }
            }
            ExitCode::SUCCESS
        }
        Err(fake_nvml::store::ChangeError::Refused(why)) => {
            eprintln!("fake-nvml: {why}");
            ExitCode::from(1)
        }
        Err(fake_nvml::store::ChangeError::State(error)) => {
            eprintln!("fake-nvml: {error}");
            ExitCode::from(1)
        }
    }
}

enum Command {
    Reset(String, (u32, u8, u8, u8)),
    Reboot,
}
