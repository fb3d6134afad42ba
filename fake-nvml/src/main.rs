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
//! With `FAKE_NVML_LOG` set, each is logged there (`reset BDF`, `reboot`), one whole line as
//! the library logs its calls.

#[path = "call_log.rs"]
mod call_log;

use fake_nvml::StateFile;
use std::process::ExitCode;

const USAGE: &str = "usage: fake-nvml reset --device BDF | fake-nvml reboot";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args.as_slice() {
        [command, flag, device] if command == "reset" && flag == "--device" => {
            Command::Reset(device.clone())
        }
        [command] if command == "reboot" => Command::Reboot,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(state) = StateFile::from_env() else {
        eprintln!("fake-nvml: FAKE_NVML_STATE names no state file");
        return ExitCode::from(2);
    };
    let (done, line) = match &command {
        Command::Reset(device) => (state.reset_gpu(device), format!("reset {device}")),
        Command::Reboot => (state.reboot(), "reboot".to_owned()),
    };
    match done {
        Ok(()) => {
            call_log::append(&line);
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut text = format!("fake-nvml: {error}");
            let mut cause = std::error::Error::source(&error);
            while let Some(next) = cause {
                text.push_str(&format!(": {next}"));
                cause = next.source();
            }
            eprintln!("{text}");
            ExitCode::from(1)
        }
    }
}

enum Command {
    Reset(String),
    Reboot,
}
