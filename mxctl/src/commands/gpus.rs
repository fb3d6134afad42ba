//! `mxctl gpus`: the display-class PCI functions of this host.

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::{Output, table};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
struct GpusReport {
    gpus: Vec<Gpu>,
}

#[derive(Debug, Serialize)]
struct Gpu {
    device: String,
    vendor: String,
    device_id: String,
    class: String,
    driver: Option<String>,
    nvidia: bool,
}

/// Lists the GPUs; writes nothing.
pub fn run(sysfs_root: &Path, output: Output) -> Result<Exit, Failure> {
    let gpus: Vec<Gpu> = host_sync::scan_gpus(sysfs_root)?
        .into_iter()
        .map(|gpu| Gpu {
            device: gpu.bdf.to_string(),
            nvidia: gpu.is_nvidia(),
            vendor: format!("{:04x}", gpu.identity.vendor),
            device_id: format!("{:04x}", gpu.identity.device),
            class: format!("{:06x}", gpu.identity.class),
            driver: gpu.driver,
        })
        .collect();
    let text = if gpus.is_empty() {
        format!(
            "no display-class PCI function under {}\n",
            sysfs_root.display()
        )
    } else {
        let mut rows = vec![
            ["DEVICE", "VENDOR", "DEVICE-ID", "CLASS", "DRIVER", "NVIDIA"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for gpu in &gpus {
            rows.push(vec![
                gpu.device.clone(),
                gpu.vendor.clone(),
                gpu.device_id.clone(),
                gpu.class.clone(),
                gpu.driver.clone().unwrap_or_else(|| "-".to_owned()),
                if gpu.nvidia { "yes" } else { "no" }.to_owned(),
            ]);
        }
        table(&rows)
    };
    output.emit(&GpusReport { gpus }, &text)?;
    Ok(Exit::Done)
}
