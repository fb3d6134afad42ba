//! `fake-nvml reset --device BDF`: what a GPU reset does to the fake's state file
//! (`FAKE_NVML_STATE`): a pending MIG mode becomes current, and every instance is gone. A test's
//! fake `nvidia-smi --gpu-reset` calls it. With `FAKE_NVML_LOG` set, the reset is logged there
//! (`reset BDF`), as the library logs its calls.

use fake_nvml::scenario::parse_bus_id;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let device = match args.as_slice() {
        [command, flag, device] if command == "reset" && flag == "--device" => device.clone(),
        _ => {
            eprintln!("usage: fake-nvml reset --device BDF");
            return ExitCode::from(2);
        }
    };
    let Some(path) = fake_nvml::store::state_path() else {
        eprintln!("fake-nvml: FAKE_NVML_STATE names no state file");
        return ExitCode::from(2);
    };
    let Some(wanted) = parse_bus_id(&device) else {
        eprintln!("fake-nvml: {device:?} is not a PCI bus ID");
        return ExitCode::from(2);
    };
    let reset = fake_nvml::store::change(
        &path,
        |_| std::time::Duration::ZERO,
        |state| {
            let card = state
                .devices
                .iter_mut()
                .find(|d| parse_bus_id(&d.pci_bus_id) == Some(wanted))
                .ok_or_else(|| format!("no device {device} in {}", path.display()))?;
            fake_nvml::rules::gpu_reset(card);
            Ok::<(), String>(())
        },
    );
    match reset {
        Ok(_) => {
            if let Some(log) = std::env::var_os("FAKE_NVML_LOG") {
                use std::io::Write;
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                {
                    let _ = writeln!(file, "reset {device}");
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
