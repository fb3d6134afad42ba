//! [`FunctionState`]: what sysfs says of one PCI function now (`<sysfs>/bus/pci/devices/<bdf>/`):
//! its IDs (read by [`gpu_host_probe::read_pci_identity`]), its driver, its reset methods and
//! its IOMMU group.

use super::error::SysfsError;
use gpu_host_probe::{PciIdentity, read_pci_identity};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};

/// The drivers that hold a function for a guest or for nobody: a reset cannot pull a device
/// from under a host driver's feet while one of these is bound.
pub const STUB_DRIVERS: [&str; 4] = ["vfio-pci", "pciback", "xen-pciback", "pci-stub"];

/// The vendor ID a function that fell off the bus reads.
pub const GONE_VENDOR: u16 = 0xffff;

/// One PCI function, as sysfs shows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FunctionState {
    /// Its address.
    pub bdf: Bdf,
    /// Its IDs.
    pub identity: PciIdentity,
    /// The bound driver (the `driver` link's name), if any.
    pub driver: Option<String>,
    /// `reset_method`, in the kernel's order: `None` when the file is absent (an old kernel or
    /// no method), empty when resets are disabled.
    pub reset_methods: Option<Vec<String>>,
    /// The IOMMU group (the `iommu_group` link's number), if any.
    pub iommu_group: Option<u32>,
}

impl FunctionState {
    /// Whether a host driver is bound (not a stub, not none).
    pub fn host_driver(&self) -> Option<&str> {
        self.driver
            .as_deref()
            .filter(|driver| !STUB_DRIVERS.contains(driver))
    }

    /// The VFIO group file a guest's VMM holds for it (`/dev/vfio/<group>`).
    pub fn vfio_file(&self) -> Option<PathBuf> {
        self.iommu_group
            .map(|group| PathBuf::from(format!("/dev/vfio/{group}")))
    }
}

/// The last component of a link, when the link is there.
pub(crate) fn link_name(path: &Path) -> Result<Option<String>, SysfsError> {
    match std::fs::read_link(path) {
        Ok(target) => Ok(target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SysfsError::Read {
            path: path.to_path_buf(),
            source: source.into(),
        }),
    }
}

/// The entries under `devices` (a `bus/pci/devices` directory) named by a PCI address, each with
/// its address and path, read one at a time; an entry named otherwise is passed over.
pub(crate) fn device_entries(
    devices: &Path,
) -> Result<impl Iterator<Item = Result<(Bdf, PathBuf), SysfsError>> + '_, SysfsError> {
    let unreadable = move |source: std::io::Error| SysfsError::Read {
        path: devices.to_path_buf(),
        source: source.into(),
    };
    let entries = std::fs::read_dir(devices).map_err(unreadable)?;
    Ok(entries.filter_map(move |entry| match entry {
        Err(source) => Some(Err(unreadable(source))),
        Ok(entry) => entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<Bdf>().ok())
            .map(|bdf| Ok((bdf, entry.path()))),
    }))
}

/// Reads the function at `dir` (a `bus/pci/devices/<bdf>` entry); `None` when it is not there.
pub fn read_function(dir: &Path, bdf: Bdf) -> Result<Option<FunctionState>, SysfsError> {
    if !dir.exists() {
        return Ok(None);
    }
    let identity = read_pci_identity(dir)?;
    let reset_methods = match std::fs::read_to_string(dir.join("reset_method")) {
        Ok(text) => Some(text.split_whitespace().map(str::to_owned).collect()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(SysfsError::Read {
                path: dir.join("reset_method"),
                source: source.into(),
            });
        }
    };
    let group_path = dir.join("iommu_group");
    let iommu_group = match link_name(&group_path)? {
        None => None,
        Some(name) => Some(name.parse::<u32>().map_err(|_| SysfsError::Unexpected {
            path: group_path.clone(),
            text: name,
            expected: "a link to an IOMMU group number",
        })?),
    };
    Ok(Some(FunctionState {
        bdf,
        identity,
        driver: link_name(&dir.join("driver"))?,
        reset_methods,
        iommu_group,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    fn device(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("vendor"), "0x10de\n").unwrap();
        std::fs::write(dir.join("device"), "0x2330\n").unwrap();
        std::fs::write(dir.join("class"), "0x030200\n").unwrap();
    }

    /// A sysfs directory of one device, `0000:3b:00.0`, in a directory removed when dropped.
    fn device_dir() -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("0000:3b:00.0");
        device(&dir);
        (root, dir)
    }

    #[test]
    fn a_function_reads_its_ids_driver_methods_and_group() {
        let (_root, dir) = device_dir();
        std::fs::write(dir.join("reset_method"), "flr bus\n").unwrap();
        symlink("../../../bus/pci/drivers/vfio-pci", dir.join("driver")).unwrap();
        symlink("../../../kernel/iommu_groups/12", dir.join("iommu_group")).unwrap();
        let function = read_function(&dir, "0000:3b:00.0".parse().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(function.identity.to_string(), "10de:2330 class 030200");
        assert_eq!(function.host_driver(), None);
        assert_eq!(
            function.reset_methods,
            Some(vec!["flr".to_owned(), "bus".to_owned()])
        );
        assert_eq!(function.vfio_file(), Some(PathBuf::from("/dev/vfio/12")));
    }

    #[test]
    fn an_empty_reset_method_file_is_no_method_and_an_absent_one_is_unknown() {
        let (_root, dir) = device_dir();
        let bdf = "0000:3b:00.0".parse().unwrap();
        assert_eq!(
            read_function(&dir, bdf).unwrap().unwrap().reset_methods,
            None
        );
        std::fs::write(dir.join("reset_method"), "\n").unwrap();
        assert_eq!(
            read_function(&dir, bdf).unwrap().unwrap().reset_methods,
            Some(vec![])
        );
    }

    #[test]
    fn a_vendor_file_that_is_not_hexadecimal_is_an_error_naming_it() {
        let (_root, dir) = device_dir();
        std::fs::write(dir.join("vendor"), "nvidia\n").unwrap();
        let error = read_function(&dir, "0000:3b:00.0".parse().unwrap()).unwrap_err();
        assert!(
            error.to_string().contains("vendor holds \"nvidia\""),
            "{error}"
        );
    }

    #[test]
    fn a_host_driver_is_any_driver_but_a_stub() {
        let (_root, dir) = device_dir();
        symlink("../../../bus/pci/drivers/nvidia", dir.join("driver")).unwrap();
        let function = read_function(&dir, "0000:3b:00.0".parse().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(function.host_driver(), Some("nvidia"));
    }
}
