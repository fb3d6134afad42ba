//! `nvidia-smi --query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader`: one GPU per line.
//!
//! ```text
//! 0, 00000000:DE:00.0, GPU-737e2423-874a-23a4-1126-dfbe3e77c294, NVIDIA PG506-230
//! ```

use super::bus_id::parse_bus_id;
use crate::parse_error::{ParseError, csv_rows};
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

const OUTPUT: &str = "nvidia-smi --query-gpu";

/// One GPU as `nvidia-smi` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NvidiaGpu {
    /// Its index (what `nvidia-smi -i` takes; may change between boots).
    pub index: u32,
    /// Its bus ID as `nvidia-smi` printed it (what `--gpu-reset -i` is given).
    pub bus_id: String,
    /// Its PCI address.
    pub bdf: Bdf,
    /// Its UUID (`GPU-…`).
    pub uuid: String,
    /// Its name.
    pub name: String,
}

impl NvidiaGpu {
    /// A GPU (for simulators and tests).
    pub fn new(index: u32, bus_id: &str, uuid: &str, name: &str) -> Option<Self> {
        Some(Self {
            index,
            bus_id: bus_id.to_owned(),
            bdf: parse_bus_id(bus_id)?,
            uuid: uuid.to_owned(),
            name: name.to_owned(),
        })
    }

    /// The line `--query-gpu` prints for it.
    pub fn to_line(&self) -> String {
        format!(
            "{}, {}, {}, {}",
            self.index, self.bus_id, self.uuid, self.name
        )
    }
}

/// Reads the CSV lines; an empty output is no GPU.
pub fn parse_gpus(text: &str) -> Result<Vec<NvidiaGpu>, ParseError> {
    csv_rows(OUTPUT, text, |line, bad| {
        let fields: Vec<&str> = line.splitn(4, ',').map(str::trim).collect();
        let [index, bus_id, uuid, name] = fields.as_slice() else {
            return Err(bad(
                "not four comma-separated fields (index, bus id, uuid, name)",
            ));
        };
        let index = index
            .parse::<u32>()
            .map_err(|_| bad("the index is not a number"))?;
        let bdf = parse_bus_id(bus_id).ok_or_else(|| bad("the bus id is not a PCI address"))?;
        if !uuid.starts_with("GPU-") {
            return Err(bad("the uuid does not start with GPU-"));
        }
        if name.is_empty() {
            return Err(bad("the name is empty"));
        }
        Ok(NvidiaGpu {
            index,
            bus_id: (*bus_id).to_owned(),
            bdf,
            uuid: (*uuid).to_owned(),
            name: (*name).to_owned(),
        })
    })
}
