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

    /// Adds an SR-IOV virtual function of `parent` (a `physfn` link), with the parent's ids.
    pub fn virtual_function(
        &self,
        bdf: &str,
        parent: &str,
        driver: Option<&str>,
    ) -> io::Result<&Self> {
        self.function(bdf, "0x10de", "0x2336", "0x030200", driver)?;
        let dir = self.root.join("devices/pci0000:00").join(bdf);
        symlink(format!("../{parent}"), dir.join("physfn"))?;
        Ok(self)
    }
}
