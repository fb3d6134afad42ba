//! `mxctl gpus`: the GPU PCI functions of this host (display class, and AMD's processing
//! accelerators), with each one's SR-IOV virtual functions and the vGPU type on each (the
//! per-VF interface), or the mdev types it offers (the older interface), and an AMD Instinct
//! GPU's compute and memory partitions, as sysfs shows them.

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::{Output, table};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize)]
struct GpusReport {
    gpus: Vec<Gpu>,
    /// Why the holders of the VFs' VFIO groups could not be told (`None`: they were, or no VF
    /// has an IOMMU group): then every VF's `vfio_holders` is `null`.
    vfio_holders_unreadable: Option<String>,
    /// Why the stored state did not read (then no AMD GPU's memory request is shown).
    state_unreadable: Option<String>,
}

#[derive(Debug, Serialize)]
struct Gpu {
    device: String,
    vendor: String,
    device_id: String,
    class: String,
    driver: Option<String>,
    nvidia: bool,
    /// `None`: the function cannot do SR-IOV (or its state could not be read: then
    /// `sriov_unreadable` says why).
    sriov: Option<Sriov>,
    sriov_unreadable: Option<String>,
    /// `None`: the function is no mdev parent (or, with `mdev_unreadable`, could not be read).
    mdev_types: Option<Vec<MdevType>>,
    mdev_unreadable: Option<String>,
    /// An AMD GPU's partitions; `None`: not an AMD GPU amdgpu partitions (or, with
    /// `amd_partitions_unreadable`, they could not be read).
    amd_partitions: Option<AmdPartitions>,
    amd_partitions_unreadable: Option<String>,
}

#[derive(Debug, Serialize)]
struct AmdPartitions {
    compute: String,
    available_compute: Vec<String>,
    memory: Option<String>,
    available_memory: Vec<String>,
    /// The XGMI hive's ID, in decimal (a string: it may not fit a JSON reader's double).
    hive: Option<String>,
    /// A memory partition mxctl requested that waits for a driver reload, from the stored
    /// state (the kernel shows none); `None`: none recorded.
    requested_memory: Option<String>,
    /// The partition mode the files (and the request) give, by the sync's rule.
    partition_mode: gpu_partition_types::PartitionMode,
}

fn amd_view(
    read: gpu_host_probe::amdgpu::AmdPartitions,
    record: Option<&host_sync::GpuRecord>,
    boot: &gpu_host_probe::Boot,
) -> AmdPartitions {
    fn names<T: std::fmt::Display>(modes: &[T]) -> Vec<String> {
        modes.iter().map(ToString::to_string).collect()
    }
    // By the sync's own rule: a request still waits only in its boot, until the mode shows.
    let requested = record.and_then(|record| record.waiting_request(&read, boot));
    AmdPartitions {
        partition_mode: host_sync::modes::amd_mode(&read, requested),
        compute: read.compute.to_string(),
        available_compute: names(&read.available_compute),
        memory: read.memory.map(|mode| mode.to_string()),
        available_memory: names(&read.available_memory),
        hive: read.hive.map(|id| id.to_string()),
        requested_memory: requested.map(|mode| mode.to_string()),
    }
}

#[derive(Debug, Serialize)]
struct Sriov {
    total_vfs: u32,
    vfs: Vec<Vf>,
}

#[derive(Debug, Serialize)]
struct Vf {
    index: u32,
    device: String,
    driver: Option<String>,
    iommu_group: Option<u32>,
    /// The processes holding its VFIO group open (`/dev/vfio/<group>`: a running VM, say);
    /// `None` where the VF has no IOMMU group or they could not be told.
    vfio_holders: Option<Vec<VfioHolder>>,
    /// `None`: the VF has no `nvidia/` files (the vGPU manager does not serve it).
    vgpu: Option<VfVgpu>,
}

#[derive(Debug, Serialize)]
struct VfioHolder {
    pid: u32,
    name: Option<String>,
}

/// `/dev/vfio/<group>`: what a process holds open of a VF assigned to it.
#[derive(Debug, Serialize)]
struct VfVgpu {
    /// The vGPU type ID on the VF; `None`: no vGPU.
    current_type: Option<u32>,
    /// The types it can be given now.
    creatable: Vec<Creatable>,
    gpu_instance_id: Option<u32>,
    placement_id: Option<u32>,
}

#[derive(Debug, Serialize)]
struct Creatable {
    id: u32,
    name: String,
}

#[derive(Debug, Serialize)]
struct MdevType {
    id: String,
    /// The vGPU type ID of an NVIDIA type (`nvidia-<id>`).
    vgpu_type: Option<u32>,
    name: String,
    available_instances: u32,
    devices: Vec<String>,
}

fn sriov_view(sriov: host_sync::sriov::Sriov) -> Sriov {
    Sriov {
        total_vfs: sriov.total_vfs,
        vfs: sriov
            .vfs
            .into_iter()
            .map(|vf| Vf {
                index: vf.index,
                device: vf.bdf.to_string(),
                driver: vf.driver,
                iommu_group: vf.iommu_group,
                vfio_holders: None,
                vgpu: vf.vgpu.map(|files| VfVgpu {
                    current_type: files.current_type.map(|id| id.0.get()),
                    creatable: files
                        .creatable
                        .into_iter()
                        .map(|t| Creatable {
                            id: t.id.0.get(),
                            name: t.name,
                        })
                        .collect(),
                    gpu_instance_id: files.gpu_instance_id,
                    placement_id: files.placement_id,
                }),
            })
            .collect(),
    }
}

/// `Ok` as `(value, None)`, an error as `(None, Some(its chain))`, warned once.
fn split<T, E: std::error::Error>(read: Result<Option<T>, E>) -> (Option<T>, Option<String>) {
    match read {
        Ok(value) => (value, None),
        Err(error) => {
            let text = gpu_host_probe::chain::Chain(&error).to_string();
            tracing::warn!("{text}");
            (None, Some(text))
        }
    }
}

/// Fills each VF's `vfio_holders` from one look at every process under `proc_root`; answers
/// why they could not be told, if so.
fn fill_vfio_holders(gpus: &mut [Gpu], proc_root: &Path) -> Option<String> {
    let vfs = || {
        gpus.iter()
            .filter_map(|gpu| gpu.sriov.as_ref())
            .flat_map(|sriov| &sriov.vfs)
    };
    let files: Vec<PathBuf> = vfs()
        .filter_map(|vf| vf.iommu_group.map(host_sync::sriov::vfio_group_file))
        .collect();
    if files.is_empty() {
        return None;
    }
    let found = match gpu_host_probe::holders(proc_root, &files) {
        Ok(found) => found,
        Err(error) => {
            let text = gpu_host_probe::chain::Chain(&error).to_string();
            tracing::warn!("{text}");
            return Some(text);
        }
    };
    for vf in gpus
        .iter_mut()
        .filter_map(|gpu| gpu.sriov.as_mut())
        .flat_map(|sriov| &mut sriov.vfs)
    {
        vf.vfio_holders = vf
            .iommu_group
            .map(host_sync::sriov::vfio_group_file)
            .map(|file| {
                found
                    .iter()
                    .filter(|holder| holder.file == file)
                    .map(|holder| VfioHolder {
                        pid: holder.pid,
                        name: holder.name.clone(),
                    })
                    .collect()
            });
    }
    None
}

/// Each GPU's record as the stored state keeps it, for a memory request waiting (read only; a
/// state that does not read gives none, and says why).
fn records(
    host: &gpu_host_probe::Host,
) -> (
    std::collections::BTreeMap<gpu_partition_types::Bdf, host_sync::GpuRecord>,
    Option<String>,
) {
    use host_sync::StateStore;
    match host_sync::FileStore::read_only(host.state_dir()).load() {
        Ok(state) => (state.map(|state| state.gpus).unwrap_or_default(), None),
        Err(error) => (
            std::collections::BTreeMap::new(),
            Some(gpu_host_probe::chain::Chain(&error).to_string()),
        ),
    }
}

/// Lists the GPUs; writes nothing.
pub fn run(host: &gpu_host_probe::Host, output: Output) -> Result<Exit, Failure> {
    let (sysfs_root, proc_root) = (host.sysfs_root(), host.proc_root());
    let (stored, state_unreadable) = records(host);
    let boot = host.boot();
    let mut gpus: Vec<Gpu> = host_sync::scan_gpus(sysfs_root)?
        .into_iter()
        .map(|gpu| {
            let (sriov, sriov_unreadable) =
                split(host_sync::sriov::read_sriov(sysfs_root, gpu.bdf));
            let (mdev_types, mdev_unreadable) =
                split(host_sync::mdev::read_mdev_types(sysfs_root, gpu.bdf));
            let (amd_partitions, amd_partitions_unreadable) = if gpu.identity.is_amd() {
                split(gpu_host_probe::amdgpu::read_partitions(sysfs_root, gpu.bdf))
            } else {
                (None, None)
            };
            Gpu {
                device: gpu.bdf.to_string(),
                nvidia: gpu.is_nvidia(),
                vendor: format!("{:04x}", gpu.identity.vendor),
                device_id: format!("{:04x}", gpu.identity.device),
                class: format!("{:06x}", gpu.identity.class),
                driver: gpu.driver,
                sriov: sriov.map(sriov_view),
                sriov_unreadable,
                mdev_types: mdev_types.map(|types| {
                    types
                        .into_iter()
                        .map(|t| MdevType {
                            vgpu_type: t.vgpu_type.map(|id| id.0.get()),
                            id: t.id,
                            name: t.name,
                            available_instances: t.available_instances,
                            devices: t.devices,
                        })
                        .collect()
                }),
                mdev_unreadable,
                amd_partitions: amd_partitions
                    .map(|read| amd_view(read, stored.get(&gpu.bdf), &boot)),
                amd_partitions_unreadable,
            }
        })
        .collect();
    let vfio_holders_unreadable = fill_vfio_holders(&mut gpus, proc_root);
    let mut text = if gpus.is_empty() {
        format!("no GPU PCI function under {}\n", sysfs_root.display())
    } else {
        text(&gpus, vfio_holders_unreadable.as_deref())
    };
    let amd = gpus.iter().any(|gpu| gpu.amd_partitions.is_some());
    if let Some(why) = state_unreadable.as_ref().filter(|_| amd) {
        text.push_str(&format!(
            "the stored state did not read, so a memory partition waiting for a driver reload \
             is not shown: {why}\n"
        ));
    }
    output.emit(
        &GpusReport {
            gpus,
            vfio_holders_unreadable,
            state_unreadable,
        },
        &text,
    )?;
    Ok(Exit::Done)
}

/// The table, then one line per virtual function and per mdev type, and why the VFIO groups'
/// holders are unknown, when they are.
fn text(gpus: &[Gpu], holders_unreadable: Option<&str>) -> String {
    let mut rows = vec![
        [
            "DEVICE",
            "VENDOR",
            "DEVICE-ID",
            "CLASS",
            "DRIVER",
            "NVIDIA",
            "VFS",
            "PARTITION",
            "MODE",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for gpu in gpus {
        let vfs = match (&gpu.sriov, &gpu.sriov_unreadable) {
            (Some(sriov), _) => format!("{} of {}", sriov.vfs.len(), sriov.total_vfs),
            (None, Some(_)) => "unreadable".to_owned(),
            (None, None) => "-".to_owned(),
        };
        rows.push(vec![
            gpu.device.clone(),
            gpu.vendor.clone(),
            gpu.device_id.clone(),
            gpu.class.clone(),
            gpu.driver.clone().unwrap_or_else(|| "-".to_owned()),
            if gpu.nvidia { "yes" } else { "no" }.to_owned(),
            vfs,
            match (&gpu.amd_partitions, &gpu.amd_partitions_unreadable) {
                (Some(read), _) => {
                    let mut partitions = match &read.memory {
                        Some(memory) => format!("{} {memory}", read.compute),
                        None => read.compute.clone(),
                    };
                    if let Some(requested) = &read.requested_memory {
                        partitions.push_str(&format!(" ({requested} requested)"));
                    }
                    partitions
                }
                (None, Some(_)) => "unreadable".to_owned(),
                (None, None) => "-".to_owned(),
            },
            gpu.amd_partitions
                .as_ref()
                .map_or_else(|| "-".to_owned(), |read| read.partition_mode.to_string()),
        ]);
    }
    let mut text = table(&rows);
    if let Some(why) = holders_unreadable {
        text.push_str(&format!(
            "who holds the VFs' VFIO groups is unknown (a VM may hold one): {why}\n"
        ));
    }
    for gpu in gpus {
        if let Some(why) = &gpu.sriov_unreadable {
            text.push_str(&format!("{}: SR-IOV state unreadable: {why}\n", gpu.device));
        }
        if let Some(why) = &gpu.mdev_unreadable {
            text.push_str(&format!("{}: mdev types unreadable: {why}\n", gpu.device));
        }
        for vf in gpu.sriov.iter().flat_map(|sriov| &sriov.vfs) {
            let vgpu = match &vf.vgpu {
                None => "no vGPU files".to_owned(),
                Some(VfVgpu {
                    current_type: None,
                    creatable,
                    ..
                }) => format!("no vGPU, {} types creatable", creatable.len()),
                Some(VfVgpu {
                    current_type: Some(id),
                    gpu_instance_id,
                    ..
                }) => match gpu_instance_id {
                    Some(gi) => format!("vGPU type {id} on GPU instance {gi}"),
                    None => format!("vGPU type {id}"),
                },
            };
            let held = match &vf.vfio_holders {
                Some(holders) if !holders.is_empty() => {
                    let names: Vec<String> = holders
                        .iter()
                        .map(|h| match &h.name {
                            Some(name) => format!("{} {name}", h.pid),
                            None => format!("pid {}", h.pid),
                        })
                        .collect();
                    format!(", VFIO group held by {}", names.join(", "))
                }
                _ => String::new(),
            };
            text.push_str(&format!(
                "{} virtfn{} {} {}: {vgpu}{held}\n",
                gpu.device,
                vf.index,
                vf.device,
                vf.driver.as_deref().unwrap_or("no driver"),
            ));
        }
        for mdev in gpu.mdev_types.iter().flatten() {
            text.push_str(&format!(
                "{} mdev {} {}: {} made, {} more available\n",
                gpu.device,
                mdev.id,
                mdev.name,
                mdev.devices.len(),
                mdev.available_instances
            ));
        }
    }
    text
}
