//! NVIDIA's older vGPU interface, mediated devices (mdev), as sysfs shows it: a parent (the GPU
//! on cards before Ampere, each VF on Ampere hosts managed this way) lists the vGPU types it
//! offers under `mdev_supported_types/<type>/` (`name`, `available_instances`, and `devices/`
//! linking to the mdevs made of that type, named by UUID). Read so that a host managed this way
//! says what it is; the per-VF interface is [`crate::sriov`]'s. Samples: `tests/samples/vgpu/`.

use crate::sriov::SriovError;
use gpu_partition_types::Bdf;
use gpu_partition_types::VgpuTypeId;
use std::path::Path;

/// One type a parent offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MdevType {
    /// Its directory's name, the kernel's ID of the type (`nvidia-285`).
    pub id: String,
    /// The vGPU type ID in an NVIDIA type's name (`nvidia-<id>`: the same number
    /// `creatable_vgpu_types` gives); `None` for another vendor's type.
    pub vgpu_type: Option<VgpuTypeId>,
    /// Its name (`GRID P40-8C`).
    pub name: String,
    /// How many more can be made now.
    pub available_instances: u32,
    /// The mdevs made of it, by UUID, sorted.
    pub devices: Vec<String>,
}

/// The mdev types of the PCI function at `bdf`, sorted by directory name; `None` for a
/// function that is no mdev parent (no `mdev_supported_types`).
pub fn read_mdev_types(sysfs_root: &Path, bdf: Bdf) -> Result<Option<Vec<MdevType>>, SriovError> {
    let dir = sysfs_root
        .join("bus/pci/devices")
        .join(bdf.to_string())
        .join("mdev_supported_types");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SriovError::Io { path, source }
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SriovError::Io { path: dir, source }),
    };
    let mut types = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(&dir))?;
        let at = entry.path();
        let id = entry.file_name().to_string_lossy().into_owned();
        let name_path = at.join("name");
        let name = std::fs::read_to_string(&name_path).map_err(io(&name_path))?;
        let name = name
            .strip_suffix('\n')
            .filter(|name| !name.trim().is_empty() && !name.contains('\n'))
            .ok_or_else(|| SriovError::Unreadable {
                path: name_path.clone(),
                line: None,
                problem: "not one line naming the type",
                text: name.clone(),
            })?
            .to_owned();
        let count_path = at.join("available_instances");
        let count = std::fs::read_to_string(&count_path).map_err(io(&count_path))?;
        let available_instances = count
            .strip_suffix('\n')
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| SriovError::Unreadable {
                path: count_path.clone(),
                line: None,
                problem: "not a decimal number and a newline",
                text: count.clone(),
            })?;
        let devices_dir = at.join("devices");
        let mut devices = Vec::new();
        match std::fs::read_dir(&devices_dir) {
            Ok(list) => {
                for device in list {
                    let device = device.map_err(io(&devices_dir))?;
                    devices.push(device.file_name().to_string_lossy().into_owned());
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(SriovError::Io {
                    path: devices_dir,
                    source,
                });
            }
        }
        devices.sort();
        let vgpu_type = id
            .strip_prefix("nvidia-")
            .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<std::num::NonZeroU32>().ok())
            .map(VgpuTypeId);
        types.push(MdevType {
            vgpu_type,
            id,
            name,
            available_instances,
            devices,
        });
    }
    types.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Some(types))
}
