//! A sysfs tree built on disk with the real layout, for tests, examples and benchmarks:
//! `bus/pci/devices/<bdf>` links into `devices/pci0000:00/<bdf>`, whose `driver` links to
//! `bus/pci/drivers/<name>` and whose `physfn` (for a virtual function) links to its parent.

use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A PCI sysfs tree under a root of the caller's.
#[derive(Debug, Clone)]
pub struct FakeSysfs {
    root: PathBuf,
}

impl FakeSysfs {
    /// An empty PCI bus under `root` (created).
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(root.join("bus/pci/devices"))?;
        std::fs::create_dir_all(root.join("bus/pci/drivers"))?;
        std::fs::create_dir_all(root.join("devices/pci0000:00"))?;
        Ok(Self { root })
    }

    /// The tree already under `root` (nothing created).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Gives the GPU `bdf` its DRM render node, `drm/renderD<minor>` (what a ROCm process opens
    /// as `/dev/dri/renderD<minor>`), as the kernel's DRM core makes it under the device.
    pub fn render_node(&self, bdf: &str, minor: u32) -> io::Result<&Self> {
        std::fs::create_dir_all(self.device_dir(bdf).join(format!("drm/renderD{minor}")))?;
        Ok(self)
    }

    /// The root, to pass as `--sysfs-root`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Adds a physical function with these ids (as sysfs writes them, e.g. `0x10de`) and
    /// driver.
    pub fn function(
        &self,
        bdf: &str,
        vendor: &str,
        device: &str,
        class: &str,
        driver: Option<&str>,
    ) -> io::Result<&Self> {
        let dir = self.root.join("devices/pci0000:00").join(bdf);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("vendor"), format!("{vendor}\n"))?;
        std::fs::write(dir.join("device"), format!("{device}\n"))?;
        std::fs::write(dir.join("class"), format!("{class}\n"))?;
        if let Some(driver) = driver {
            std::fs::create_dir_all(self.root.join("bus/pci/drivers").join(driver))?;
            symlink(
                format!("../../../bus/pci/drivers/{driver}"),
                dir.join("driver"),
            )?;
        }
        symlink(
            format!("../../../devices/pci0000:00/{bdf}"),
            self.root.join("bus/pci/devices").join(bdf),
        )?;
        Ok(self)
    }

    /// The directory of a function added with [`FakeSysfs::function`] (to break it on purpose).
    pub fn device_dir(&self, bdf: &str) -> PathBuf {
        self.root.join("devices/pci0000:00").join(bdf)
    }

    /// Adds an entry of `bus/pci/devices` whose device is gone: a dangling link, as a virtual
    /// function removed during a scan leaves for a moment.
    pub fn vanished(&self, bdf: &str) -> io::Result<&Self> {
        symlink(
            format!("../../../devices/pci0000:00/{bdf}"),
            self.root.join("bus/pci/devices").join(bdf),
        )?;
        Ok(self)
    }

    /// Adds an NVIDIA 3D controller (`0x10de`, `0x2335`, class `0x030200`).
    pub fn nvidia(&self, bdf: &str, driver: Option<&str>) -> io::Result<&Self> {
        self.function(bdf, "0x10de", "0x2335", "0x030200", driver)
    }

    /// An AMD Instinct GPU at `bdf` (vendor `0x1002`, device `device`, class `0x120000`, a
    /// processing accelerator, bound to `amdgpu`) with the partition files as amdgpu writes
    /// them (`gpu_host_probe::amdgpu`): the compute partition and those offered (none: `Not
    /// supported`), the memory partition with those offered (`None`: no memory files; an empty
    /// list: no `available_memory_partition`, a part of one mode), and the XGMI hive's ID (the
    /// fake gives every member its own `xgmi_hive_info` directory, where the kernel makes one
    /// under the first member and links the others to it).
    pub fn amd_instinct(
        &self,
        bdf: &str,
        device: &str,
        compute: (
            gpu_host_probe::amdgpu::ComputePartition,
            &[gpu_host_probe::amdgpu::ComputePartition],
        ),
        memory: Option<(
            gpu_host_probe::amdgpu::MemoryPartition,
            &[gpu_host_probe::amdgpu::MemoryPartition],
        )>,
        hive: Option<u64>,
    ) -> io::Result<&Self> {
        fn list<T: std::fmt::Display>(modes: &[T]) -> String {
            if modes.is_empty() {
                return "Not supported\n".to_owned();
            }
            let names: Vec<String> = modes.iter().map(ToString::to_string).collect();
            format!("{}\n", names.join(", "))
        }
        self.function(bdf, "0x1002", device, "0x120000", Some("amdgpu"))?;
        let dir = self.device_dir(bdf);
        std::fs::write(
            dir.join("current_compute_partition"),
            format!("{}\n", compute.0),
        )?;
        std::fs::write(dir.join("available_compute_partition"), list(compute.1))?;
        if let Some((current, offered)) = memory {
            std::fs::write(dir.join("current_memory_partition"), format!("{current}\n"))?;
            if !offered.is_empty() {
                std::fs::write(dir.join("available_memory_partition"), list(offered))?;
            }
        }
        if let Some(hive) = hive {
            std::fs::create_dir_all(dir.join("xgmi_hive_info"))?;
            std::fs::write(dir.join("xgmi_hive_info/xgmi_hive_id"), format!("{hive}\n"))?;
        }
        Ok(self)
    }

    /// Makes the physical function `bdf` SR-IOV capable: `sriov_totalvfs` is `total`,
    /// `sriov_numvfs` 0 until [`FakeSysfs::virtual_function`] adds VFs.
    pub fn sriov(&self, bdf: &str, total: u32) -> io::Result<&Self> {
        let dir = self.device_dir(bdf);
        std::fs::write(dir.join("sriov_totalvfs"), format!("{total}\n"))?;
        std::fs::write(dir.join("sriov_numvfs"), "0\n")?;
        Ok(self)
    }

    /// Adds an SR-IOV virtual function of `parent` (a `physfn` link), with the parent's ids.
    /// Where the parent is SR-IOV capable ([`FakeSysfs::sriov`]), the VF is its next
    /// `virtfn<N>` and `sriov_numvfs` counts it, as the kernel shows VFs it enabled.
    pub fn virtual_function(
        &self,
        bdf: &str,
        parent: &str,
        driver: Option<&str>,
    ) -> io::Result<&Self> {
        self.function(bdf, "0x10de", "0x2336", "0x030200", driver)?;
        let dir = self.device_dir(bdf);
        symlink(format!("../{parent}"), dir.join("physfn"))?;
        let parent_dir = self.device_dir(parent);
        let numvfs = parent_dir.join("sriov_numvfs");
        if let Ok(text) = std::fs::read_to_string(&numvfs) {
            let enabled: u32 = text.trim().parse().map_err(io::Error::other)?;
            symlink(
                format!("../{bdf}"),
                parent_dir.join(format!("virtfn{enabled}")),
            )?;
            std::fs::write(&numvfs, format!("{}\n", enabled + 1))?;
        }
        Ok(self)
    }

    /// Removes every virtual function of `parent` (its `virtfn<N>` links, the VFs' entries and
    /// directories) and sets `sriov_numvfs` to 0, as the kernel does when VFs are disabled.
    pub fn remove_virtual_functions(&self, parent: &str) -> io::Result<&Self> {
        let parent_dir = self.device_dir(parent);
        for entry in std::fs::read_dir(&parent_dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if !name.to_string_lossy().starts_with("virtfn") {
                continue;
            }
            let link = entry.path();
            if let Some(vf) = std::fs::read_link(&link)?.file_name() {
                let listed = self.root.join("bus/pci/devices").join(vf);
                if listed.symlink_metadata().is_ok() {
                    std::fs::remove_file(listed)?;
                }
                let dir = self.root.join("devices/pci0000:00").join(vf);
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
            }
            std::fs::remove_file(link)?;
        }
        std::fs::write(parent_dir.join("sriov_numvfs"), "0\n")?;
        Ok(self)
    }

    /// Gives the VF `bdf` NVIDIA's vGPU files: `nvidia/current_vgpu_type` (`0` for none) and
    /// `nvidia/creatable_vgpu_types` (the header, then `<id> : <name>` lines); where `placed`
    /// is `Some((gpu instance, placement))`, `gpu_instance_id` and `placement_id` too (a real
    /// driver answers `ENXIO` for them while the VF has no vGPU; here they are absent, and
    /// removed where a call before wrote them).
    pub fn vgpu(
        &self,
        bdf: &str,
        current: u32,
        creatable: &[(u32, &str)],
        placed: Option<(u32, u32)>,
    ) -> io::Result<&Self> {
        write_vgpu_files(&self.device_dir(bdf), current, creatable, placed)?;
        Ok(self)
    }

    /// Puts the function `bdf` in IOMMU group `group` (an `iommu_group` link into
    /// `kernel/iommu_groups/<group>`).
    pub fn iommu_group(&self, bdf: &str, group: u32) -> io::Result<&Self> {
        std::fs::create_dir_all(self.root.join(format!("kernel/iommu_groups/{group}")))?;
        symlink(
            format!("../../../kernel/iommu_groups/{group}"),
            self.device_dir(bdf).join("iommu_group"),
        )?;
        Ok(self)
    }

    /// Makes the function `bdf` an mdev parent offering the type `id` (`nvidia-285`) named
    /// `name`, with `available` more to make and the mdevs `devices` (UUIDs) made of it.
    pub fn mdev_type(
        &self,
        bdf: &str,
        id: &str,
        name: &str,
        available: u32,
        devices: &[&str],
    ) -> io::Result<&Self> {
        let dir = self.device_dir(bdf).join("mdev_supported_types").join(id);
        std::fs::create_dir_all(dir.join("devices"))?;
        std::fs::write(dir.join("name"), format!("{name}\n"))?;
        std::fs::write(dir.join("available_instances"), format!("{available}\n"))?;
        std::fs::write(dir.join("device_api"), "vfio-pci\n")?;
        for uuid in devices {
            let device = self.device_dir(bdf).join(uuid);
            std::fs::create_dir_all(&device)?;
            symlink(format!("../../../{uuid}"), dir.join("devices").join(uuid))?;
        }
        Ok(self)
    }
}

/// Writes NVIDIA's vGPU files of the VF whose directory is `device` (as [`FakeSysfs::vgpu`]
/// says), wherever the tree keeps it.
pub fn write_vgpu_files(
    device: &Path,
    current: u32,
    creatable: &[(u32, &str)],
    placed: Option<(u32, u32)>,
) -> io::Result<()> {
    let dir = device.join("nvidia");
    std::fs::create_dir_all(&dir)?;
    for (file, text) in vgpu_files(current, creatable, placed) {
        match text {
            Some(text) => std::fs::write(dir.join(file), text)?,
            None => match std::fs::remove_file(dir.join(file)) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                _ => {}
            },
        }
    }
    Ok(())
}

/// The files of a VF's `nvidia/` directory as [`write_vgpu_files`] writes them, each with its
/// text (`None`: the file is not there): what a test's driver serves when it answers them.
pub fn vgpu_files(
    current: u32,
    creatable: &[(u32, &str)],
    placed: Option<(u32, u32)>,
) -> [(&'static str, Option<String>); 4] {
    let mut list = String::from("ID    : vGPU Name\n");
    for (id, name) in creatable {
        list.push_str(&format!("{id:<5} : {name}\n"));
    }
    [
        ("current_vgpu_type", Some(format!("{current}\n"))),
        ("creatable_vgpu_types", Some(list)),
        (
            "gpu_instance_id",
            placed.map(|(gpu_instance, _)| format!("{gpu_instance}\n")),
        ),
        (
            "placement_id",
            placed.map(|(_, placement)| format!("{placement}\n")),
        ),
    ]
}
