//! Which files a driver serves, and what each answers.

use crate::Drivers;
use nix::libc;
use std::path::Path;

/// The mount's own file through which the tests' `modprobe` unloads and loads the fake
/// amdgpu (at the mount's root; not a kernel file).
pub const MODPROBE_FILE: &str = ".fake-amdgpu-modprobe";

/// NVIDIA's files on a VF, in its `nvidia/` directory.
const VF_FILES: [&str; 4] = [
    "current_vgpu_type",
    "creatable_vgpu_types",
    "gpu_instance_id",
    "placement_id",
];

/// The VF's files that say where its vGPU sits.
const PLACED_FILES: [&str; 2] = ["gpu_instance_id", "placement_id"];

/// amdgpu's partition files on a GPU.
const AMD_FILES: [&str; 4] = [
    "current_compute_partition",
    "available_compute_partition",
    "current_memory_partition",
    "available_memory_partition",
];

/// A file a driver serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum File {
    /// A VF's file of NVIDIA's (`nvidia/<name>` in the VF at `address`).
    Vf { address: String, name: &'static str },
    /// A PF's `sriov_numvfs` (the GPU at `address`).
    NumVfs { address: String },
    /// An amdgpu partition file of the GPU at `address`.
    Amd { address: String, name: &'static str },
    /// The stand-in `modprobe`'s file.
    Modprobe,
}

impl File {
    /// Whether a write of it changes a driver's state (the others are read only).
    pub(crate) fn writable(&self) -> bool {
        match self {
            File::Vf { name, .. } => *name == "current_vgpu_type",
            File::Amd { name, .. } => name.starts_with("current_"),
            File::NumVfs { .. } | File::Modprobe => true,
        }
    }
}

/// The drivers, answering their files.
#[derive(Debug)]
pub(crate) struct Served {
    drivers: Drivers,
}

/// How a served file answers: its text, or the errno of the call.
pub(crate) type Answer<T> = Result<T, i32>;

impl Served {
    pub(crate) fn new(drivers: Drivers) -> Self {
        Self { drivers }
    }

    /// The driver's file at `path` (relative to the tree's root), by its name and the device
    /// directory it is in, where that driver is served. Whether the driver has the device is
    /// told by [`Served::read`] and [`Served::write`] (`None`: the tree's file).
    pub(crate) fn file(&self, path: &Path) -> Option<File> {
        let file = Self::named(path)?;
        let served = match &file {
            File::Vf { .. } | File::NumVfs { .. } => self.drivers.nvidia.is_some(),
            File::Amd { .. } | File::Modprobe => self.drivers.amdgpu.is_some(),
        };
        served.then_some(file)
    }

    /// What a driver's file at `path` would be, by its name and where it is.
    fn named(path: &Path) -> Option<File> {
        let name = path.file_name()?.to_str()?;
        let parent = path.parent()?;
        if parent.as_os_str().is_empty() {
            return (name == MODPROBE_FILE).then_some(File::Modprobe);
        }
        let device = |dir: &Path| dir.file_name()?.to_str().map(str::to_owned);
        if let Some(name) = VF_FILES.iter().find(|file| **file == name) {
            let nvidia = parent.file_name()? == "nvidia";
            let address = device(parent.parent()?)?;
            return nvidia.then_some(File::Vf { address, name });
        }
        if name == "sriov_numvfs" {
            return Some(File::NumVfs {
                address: device(parent)?,
            });
        }
        let name = AMD_FILES.iter().find(|file| **file == name)?;
        Some(File::Amd {
            address: device(parent)?,
            name,
        })
    }

    /// The text `file` reads now, from one read of the driver's state: `ENOENT` where the
    /// driver's state shows no such file, `EIO` where it does not read; `None` where the file
    /// is the tree's (a device the driver does not have).
    pub(crate) fn read(&self, file: &File) -> Option<Answer<String>> {
        match file {
            File::Vf { address, name } => {
                let state = match self.nvidia_state() {
                    Ok(state) => state,
                    Err(errno) => return Some(Err(errno)),
                };
                let (device, index) = fake_nvml::sysfs::vf_at(&state, address)?;
                // Where the vGPU sits is there on every VF, and reads `ENXIO` until a vGPU
                // does (the workspace's `host-sync/tests/samples/vgpu/README.md`, §2).
                let absent = if PLACED_FILES.contains(name) {
                    libc::ENXIO
                } else {
                    libc::ENOENT
                };
                Some(fake_nvml::sysfs::vf_file(device, index, name).ok_or(absent))
            }
            File::NumVfs { address } => {
                let state = match self.nvidia_state() {
                    Ok(state) => state,
                    Err(errno) => return Some(Err(errno)),
                };
                let card = fake_nvml::sysfs::sriov_card_at(&state, address)?;
                let count = card.sriov.as_ref().map_or(0, |sriov| sriov.vfs.len());
                Some(Ok(format!("{count}\n")))
            }
            File::Amd { address, name } => {
                let fake = match self
                    .amdgpu()
                    .and_then(|file| file.load().map_err(|_| libc::EIO))
                {
                    Ok(fake) => fake,
                    Err(errno) => return Some(Err(errno)),
                };
                if !fake.gpus.iter().any(|gpu| gpu.bdf == *address) {
                    return None;
                }
                Some(fake.file_text(address, name).ok_or(libc::ENOENT))
            }
            File::Modprobe => Some(Ok(String::new())),
        }
    }

    /// Whether `file` is there now (a file the driver's state shows; where the vGPU sits is
    /// there while it reads `ENXIO`); `None` where it is the tree's.
    pub(crate) fn exists(&self, file: &File) -> Option<Answer<bool>> {
        Some(match self.read(file)? {
            Ok(_) | Err(libc::ENXIO) => Ok(true),
            Err(libc::ENOENT) => Ok(false),
            Err(errno) => Err(errno),
        })
    }

    /// `text` written to `file` in one `write(2)`: the driver's errno where it refuses; `None`
    /// where the file is the tree's (a device the driver does not have).
    pub(crate) fn write(&self, file: &File, text: &str) -> Option<Answer<()>> {
        // Whether the driver has the device; what the file reads now is not needed.
        let _now = self.read(file)?;
        Some(self.store(file, text))
    }

    /// `text` stored by the driver of `file`, a device it has.
    fn store(&self, file: &File, text: &str) -> Answer<()> {
        match file {
            File::Vf { address, name } if *name == "current_vgpu_type" => {
                let nvidia = self.nvidia()?;
                let state = self.nvidia_state()?;
                let (device, index) =
                    fake_nvml::sysfs::vf_at(&state, address).ok_or(libc::ENOENT)?;
                // The driver reads the ID with `kstrtol`, base 10 (as `gpu_host_probe::vf` writes
                // it); what that refuses is `EINVAL`, the kernel's number readers' answer.
                let id: u32 = text
                    .trim_end_matches('\n')
                    .parse()
                    .map_err(|_| libc::EINVAL)?;
                nvidia
                    .write_vgpu_type(&device.pci_bus_id, index, id)
                    .map_err(|_| libc::EIO)?
            }
            File::NumVfs { address } => {
                let nvidia = self.nvidia()?;
                let state = self.nvidia_state()?;
                let card = fake_nvml::sysfs::sriov_card_at(&state, address).ok_or(libc::ENOENT)?;
                nvidia
                    .write_numvfs(&card.pci_bus_id, text)
                    .map_err(|_| libc::EIO)?
            }
            File::Amd { address, name } if name.starts_with("current_") => {
                let compute = *name == "current_compute_partition";
                self.amdgpu()?
                    .change(|fake| {
                        if compute {
                            fake.write_compute(address, text)
                        } else {
                            fake.write_memory(address, text)
                        }
                    })
                    .map_err(|_| libc::EIO)?
                    .map_err(|errno| errno as i32)
            }
            File::Modprobe => match text.trim_end() {
                // The fake reloads at the unload (every request holds, AUTO sets each compute
                // partition); the load that follows has nothing left to do.
                "unload" => self
                    .amdgpu()?
                    .change(host_sync::fake_amdgpu::FakeAmdgpu::reload_driver)
                    .map_err(|_| libc::EIO)?
                    .map_err(|_| libc::EBUSY),
                "load" => Ok(()),
                _ => Err(libc::EINVAL),
            },
            // A read-only attribute (mode 0444): the kernel refuses the open for writing.
            File::Vf { .. } | File::Amd { .. } => Err(libc::EACCES),
        }
    }

    fn nvidia(&self) -> Answer<&fake_nvml::StateFile> {
        self.drivers.nvidia.as_ref().ok_or(libc::ENOENT)
    }

    fn nvidia_state(&self) -> Answer<fake_nvml::Scenario> {
        self.nvidia()?.read().map_err(|_| libc::EIO)
    }

    fn amdgpu(&self) -> Answer<&host_sync::fake_amdgpu::FakeAmdgpuFile> {
        self.drivers.amdgpu.as_ref().ok_or(libc::ENOENT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vfs_vgpu_type_is_a_drivers_file_only_inside_its_nvidia_directory() {
        assert_eq!(
            Served::named(Path::new(
                "devices/pci0000:00/0000:3c:00.4/nvidia/current_vgpu_type"
            )),
            Some(File::Vf {
                address: "0000:3c:00.4".to_owned(),
                name: "current_vgpu_type"
            })
        );
        assert_eq!(
            Served::named(Path::new(
                "devices/pci0000:00/0000:3c:00.4/current_vgpu_type"
            )),
            None
        );
    }

    #[test]
    fn the_modprobe_file_is_served_only_at_the_root_and_only_with_amdgpu() {
        let with_amdgpu = Served::new(Drivers {
            nvidia: None,
            amdgpu: Some(host_sync::fake_amdgpu::FakeAmdgpuFile::new(
                "/nonexistent/amdgpu.json",
                "/nonexistent",
            )),
        });
        assert_eq!(
            with_amdgpu.file(Path::new(MODPROBE_FILE)),
            Some(File::Modprobe)
        );
        assert_eq!(
            with_amdgpu.file(&Path::new("devices").join(MODPROBE_FILE)),
            None
        );
        assert_eq!(
            Served::new(Drivers::default()).file(Path::new(MODPROBE_FILE)),
            None
        );
    }

    #[test]
    fn a_driver_whose_state_does_not_read_answers_its_files_with_eio() {
        let unreadable = Served::new(Drivers {
            nvidia: Some(fake_nvml::StateFile::new("/nonexistent/state.json")),
            amdgpu: None,
        });
        let path = Path::new("devices/pci0000:00/0000:3c:00.0/sriov_numvfs");
        let file = unreadable.file(path);
        assert_eq!(
            file,
            Some(File::NumVfs {
                address: "0000:3c:00.0".to_owned()
            })
        );
        assert_eq!(
            file.and_then(|file| unreadable.read(&file)),
            Some(Err(libc::EIO))
        );
        let without_nvidia = Served::new(Drivers::default());
        assert_eq!(without_nvidia.file(path), None);
    }

    #[test]
    fn only_the_current_files_take_a_write() {
        let vf = |name| File::Vf {
            address: String::new(),
            name,
        };
        assert!(vf("current_vgpu_type").writable());
        assert!(!vf("creatable_vgpu_types").writable());
        let amd = |name| File::Amd {
            address: String::new(),
            name,
        };
        assert!(amd("current_memory_partition").writable());
        assert!(!amd("available_compute_partition").writable());
    }
}
