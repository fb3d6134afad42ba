//! The fake's virtual functions as sysfs shows them (`FAKE_NVML_SYSFS` names the root, a tree
//! of `host_sync::fake_sysfs`): after every change of the state, each card with SR-IOV has
//! `sriov_totalvfs` and `sriov_numvfs`, its `virtfn<N>` links to VFs bound to `nvidia` (each
//! with `physfn`), and on each VF the `nvidia/` files — `current_vgpu_type`,
//! `creatable_vgpu_types` as the fake's rules (`src/rules/sriov.rs`) list it, and where the
//! vGPU sits.
//!
//! A VF's address is its GPU's routing ID plus the First VF Offset, 4, plus its number (stride
//! 1): `virtfn0 -> ../0000:41:00.4` … `virtfn31 -> ../0000:41:04.3` on an A100 in the
//! OpenNebula documentation's listing (the workspace's
//! `host-sync/tests/samples/vgpu/pf-virtfn-links-opennebula-docs.txt`).

use crate::rules::sriov;
use crate::scenario::{Device, Scenario, parse_bus_id};
use host_sync::fake_sysfs::{FakeSysfs, write_vgpu_files};
use std::os::unix::fs::symlink;
use std::path::Path;

/// The First VF Offset of the parts modelled.
const FIRST_VF_OFFSET: u32 = 4;

/// A device's address as sysfs names it (`0000:3b:00.0`).
fn sysfs_address(domain: u32, bus: u32, devfn: u32) -> String {
    format!(
        "{domain:04x}:{bus:02x}:{:02x}.{:x}",
        (devfn >> 3) & 0x1f,
        devfn & 0x7
    )
}

/// The sysfs address of the GPU at `bus_id` (either form NVML knows).
pub fn gpu_address(bus_id: &str) -> Option<String> {
    let (domain, bus, device, function) = parse_bus_id(bus_id)?;
    Some(sysfs_address(
        domain,
        u32::from(bus),
        (u32::from(device) << 3) | u32::from(function),
    ))
}

/// The sysfs address of VF `index` of the GPU at `bus_id`.
pub fn vf_address(bus_id: &str, index: u32) -> Option<String> {
    let (domain, bus, device, function) = parse_bus_id(bus_id)?;
    let routing = (u32::from(bus) << 8) | (u32::from(device) << 3) | u32::from(function);
    let vf = routing.checked_add(FIRST_VF_OFFSET)?.checked_add(index)?;
    (vf >> 8 <= 0xff).then(|| sysfs_address(domain, vf >> 8, vf & 0xff))
}

/// Shows every SR-IOV card of `devices` under `root` as its state says.
pub(crate) fn render(root: &Path, devices: &[Device]) -> std::io::Result<()> {
    let sysfs = FakeSysfs::new(root)?;
    for device in devices {
        render_device(&sysfs, device)?;
    }
    Ok(())
}

fn render_device(sysfs: &FakeSysfs, device: &Device) -> std::io::Result<()> {
    let Some(sriov) = &device.sriov else {
        return Ok(());
    };
    let bad = || std::io::Error::other(format!("{} is no bus ID", device.pci_bus_id));
    let gpu = gpu_address(&device.pci_bus_id).ok_or_else(bad)?;
    let listed = sysfs.root().join("bus/pci/devices");
    // A tree of `host_sync::fake_sysfs` lists each function as a link into `devices/`; a tree of
    // directories in `bus/pci/devices` itself (the reboot bed's, bind-mounted over the real
    // one) keeps every function there, its VFs too.
    let flat = listed
        .join(&gpu)
        .symlink_metadata()
        .is_ok_and(|meta| meta.is_dir());
    let dir = if flat {
        listed.join(&gpu)
    } else {
        sysfs.device_dir(&gpu)
    };
    if !dir.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not in the fake sysfs ({}): add the GPU first",
            gpu,
            dir.display()
        )));
    }
    std::fs::write(dir.join("sriov_totalvfs"), format!("{}\n", sriov.total_vfs))?;
    let shown = std::fs::read_to_string(dir.join("sriov_numvfs"))
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok());
    if shown != Some(sriov.vfs.len()) {
        if flat {
            flat_virtual_functions(&listed, &gpu, device, sriov.vfs.len())?;
        } else {
            if dir.join("sriov_numvfs").exists() {
                sysfs.remove_virtual_functions(&gpu)?;
            } else {
                std::fs::write(dir.join("sriov_numvfs"), "0\n")?;
            }
            for index in 0..sriov.vfs.len() {
                let vf = vf_of(device, index).ok_or_else(bad)?;
                sysfs.virtual_function(&vf, &gpu, Some("nvidia"))?;
            }
        }
    }
    for index in 0..sriov.vfs.len() {
        let address = vf_of(device, index).ok_or_else(bad)?;
        let vf_dir = if flat {
            listed.join(&address)
        } else {
            sysfs.device_dir(&address)
        };
        let shown = VfShown::of(device, index);
        write_vgpu_files(&vf_dir, shown.current, &shown.creatable(), shown.placed)?;
    }
    Ok(())
}

/// What a VF shows in its `nvidia/` files.
struct VfShown {
    /// Its type (`0`: none).
    current: u32,
    /// The types it can take now, ID and name, as `src/rules/sriov.rs` lists them.
    creatable: Vec<(u32, String)>,
    /// Where its vGPU sits: GPU instance and placement.
    placed: Option<(u32, u32)>,
}

impl VfShown {
    /// What VF `index` of `device` shows now.
    fn of(device: &Device, index: usize) -> VfShown {
        let vf = device.sriov.as_ref().and_then(|sriov| sriov.vfs.get(index));
        VfShown {
            current: vf.and_then(|vf| vf.type_id).unwrap_or(0),
            creatable: sriov::creatable_on_vf(device, index)
                .into_iter()
                .filter_map(|id| {
                    device
                        .vgpu_types
                        .iter()
                        .find(|kind| kind.id == id)
                        .map(|kind| (id, kind.name.clone()))
                })
                .collect(),
            placed: vf.and_then(|vf| vf.gpu_instance_id.zip(vf.placement_id)),
        }
    }

    fn creatable(&self) -> Vec<(u32, &str)> {
        self.creatable
            .iter()
            .map(|(id, name)| (*id, name.as_str()))
            .collect()
    }
}

/// The card of `state` with SR-IOV that sysfs names `address` (`0000:41:00.0`).
pub fn sriov_card_at<'a>(state: &'a Scenario, address: &str) -> Option<&'a Device> {
    state.devices.iter().find(|device| {
        device.sriov.is_some() && gpu_address(&device.pci_bus_id).as_deref() == Some(address)
    })
}

/// The card of `state` and the number of its VF that sysfs names `address` (`0000:41:00.4`),
/// among the VFs it has now.
pub fn vf_at<'a>(state: &'a Scenario, address: &str) -> Option<(&'a Device, u32)> {
    state.devices.iter().find_map(|device| {
        let count = device.sriov.as_ref()?.vfs.len();
        (0..count).find_map(|index| {
            (vf_of(device, index).as_deref() == Some(address))
                .then(|| Some((device, u32::try_from(index).ok()?)))
                .flatten()
        })
    })
}

/// The text of `file` in the `nvidia/` directory of VF `index` of `device` as the driver shows
/// it now (`None`: no such file there), as the fake writes it in a sysfs tree.
pub fn vf_file(device: &Device, index: u32, file: &str) -> Option<String> {
    let shown = VfShown::of(device, usize::try_from(index).ok()?);
    host_sync::fake_sysfs::vgpu_files(shown.current, &shown.creatable(), shown.placed)
        .into_iter()
        .find(|(name, _)| *name == file)
        .and_then(|(_, text)| text)
}

/// The VFs of `gpu` in a tree of directories (`listed` is its `bus/pci/devices`): the old ones
/// removed, `count` made (each a directory with the GPU's IDs, its `physfn`, bound to the GPU's
/// driver), `sriov_numvfs` counting them.
fn flat_virtual_functions(
    listed: &Path,
    gpu: &str,
    device: &Device,
    count: usize,
) -> std::io::Result<()> {
    let dir = listed.join(gpu);
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with("virtfn") {
            continue;
        }
        if let Some(vf) = std::fs::read_link(entry.path())?.file_name() {
            let vf_dir = listed.join(vf);
            if vf_dir.is_dir() {
                std::fs::remove_dir_all(vf_dir)?;
            }
        }
        std::fs::remove_file(entry.path())?;
    }
    let driver = std::fs::read_link(dir.join("driver")).ok();
    let bad = || std::io::Error::other(format!("{} is no bus ID", device.pci_bus_id));
    for index in 0..count {
        let vf = vf_of(device, index).ok_or_else(bad)?;
        let vf_dir = listed.join(&vf);
        std::fs::create_dir_all(&vf_dir)?;
        for file in ["vendor", "device", "class"] {
            if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
                std::fs::write(vf_dir.join(file), text)?;
            }
        }
        symlink(format!("../{gpu}"), vf_dir.join("physfn"))?;
        if let Some(driver) = &driver {
            symlink(driver, vf_dir.join("driver"))?;
        }
        symlink(format!("../{vf}"), dir.join(format!("virtfn{index}")))?;
    }
    std::fs::write(dir.join("sriov_numvfs"), format!("{count}\n"))
}

fn vf_of(device: &Device, index: usize) -> Option<String> {
    vf_address(&device.pci_bus_id, u32::try_from(index).ok()?)
}
