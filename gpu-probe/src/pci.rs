//! [`PciIdentity`]: what a PCI function is, as sysfs shows it, and [`read_pci_identity`], the
//! one reader of those files. Every crate that needs a function's IDs (the sync's scan, the
//! reset's before-and-after check, a layout's `device-filter`) reads them here.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// NVIDIA's PCI vendor ID.
pub const NVIDIA_VENDOR: u16 = 0x10de;

/// AMD's PCI vendor ID (ATI's, which amdgpu binds).
pub const AMD_VENDOR: u16 = 0x1002;

/// Whether a class code (`0x030200`) is a display controller's: base class `0x03` (VGA, 3D,
/// other display).
pub fn is_display_class(class: u32) -> bool {
    class >> 16 == 0x03
}

/// Whether a class code is a processing accelerator's (base class `0x12`): what AMD Instinct
/// parts from MI300 on enumerate as (amdgpu binds the class, `PCI_CLASS_ACCELERATOR_PROCESSING`,
/// in `amdgpu_drv.c`'s `pciidlist`), where earlier GPUs are display class.
pub fn is_accelerator_class(class: u32) -> bool {
    class >> 16 == 0x12
}

/// A function's subsystem: the board maker's IDs (`subsystem_vendor`, `subsystem_device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PciSubsystem {
    /// `subsystem_vendor`.
    pub vendor: u16,
    /// `subsystem_device`.
    pub device: u16,
}

/// What a PCI function is: its IDs and class. Read again after a reset, they must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PciIdentity {
    /// `vendor` (`0x10de`).
    pub vendor: u16,
    /// `device` (`0x2335`).
    pub device: u16,
    /// `class`, 24 bits (`0x030200`: a 3D controller).
    pub class: u32,
    /// The subsystem, where sysfs has the files.
    #[serde(default)]
    pub subsystem: Option<PciSubsystem>,
}

impl PciIdentity {
    /// A function with these IDs and no subsystem.
    pub fn new(vendor: u16, device: u16, class: u32) -> Self {
        Self {
            vendor,
            device,
            class,
            subsystem: None,
        }
    }

    /// The same with a subsystem.
    pub fn subsystem(mut self, subsystem: PciSubsystem) -> Self {
        self.subsystem = Some(subsystem);
        self
    }

    /// A display controller (base class `0x03`: VGA, 3D, other display).
    pub fn is_display(&self) -> bool {
        is_display_class(self.class)
    }

    /// An NVIDIA function, by vendor ID (never by driver: pass-through unbinds the driver).
    pub fn is_nvidia(&self) -> bool {
        self.vendor == NVIDIA_VENDOR
    }

    /// An AMD function, by vendor ID.
    pub fn is_amd(&self) -> bool {
        self.vendor == AMD_VENDOR
    }
}

impl fmt::Display for PciIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:04x} class {:06x}",
            self.vendor, self.device, self.class
        )?;
        if let Some(subsystem) = self.subsystem {
            write!(
                f,
                " subsystem {:04x}:{:04x}",
                subsystem.vendor, subsystem.device
            )?;
        }
        Ok(())
    }
}

/// An ID file that could not be read, or that holds what sysfs does not write there: the two
/// ways a file can fail, so the enum is complete.
#[derive(Debug, thiserror::Error)]
pub enum PciIdError {
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file holds something else than sysfs writes there.
    #[error("{}: {content:?} is not {expected}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What it held, trimmed.
        content: String,
        /// What sysfs writes there.
        expected: &'static str,
    },
}

const ID: &str = "a 16-bit ID such as 0x10de";
const CLASS: &str = "a class code such as 0x030200";

/// `<dir>/<name>`'s text; `None` when the file is absent.
fn text_if_there(path: &Path) -> Result<Option<String>, PciIdError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PciIdError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// `0x` and exactly `digits` hexadecimal digits (either case), as the kernel writes an ID.
fn hex(path: &Path, text: &str, digits: usize, expected: &'static str) -> Result<u32, PciIdError> {
    let value = text.trim();
    value
        .strip_prefix("0x")
        .filter(|hex| hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| PciIdError::Malformed {
            path: path.to_path_buf(),
            content: value.to_owned(),
            expected,
        })
}

/// A file that must be there.
fn required(
    dir: &Path,
    name: &str,
    digits: usize,
    expected: &'static str,
) -> Result<u32, PciIdError> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).map_err(|source| PciIdError::Read {
        path: path.clone(),
        source,
    })?;
    hex(&path, &text, digits, expected)
}

/// A 16-bit ID (four hexadecimal digits always fit).
fn narrow(value: u32) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

/// Reads the class code of the function at `dir` alone (`0x030200`): what a scan of every
/// function asks first, so that a function that is no display controller costs one read.
pub fn read_pci_class(dir: &Path) -> Result<u32, PciIdError> {
    required(dir, "class", 6, CLASS)
}

/// Reads the IDs of the function at `dir` (a `bus/pci/devices/<address>` entry): `vendor`,
/// `device` and `class` must read; `subsystem_vendor` and `subsystem_device` are read where
/// they are (both, or neither). A file that does not read, or reads as anything but what the
/// kernel writes (`0x10de`, `0x030200`), is an error naming it, never a default.
pub fn read_pci_identity(dir: &Path) -> Result<PciIdentity, PciIdError> {
    let class = read_pci_class(dir)?;
    let vendor = narrow(required(dir, "vendor", 4, ID)?);
    let device = narrow(required(dir, "device", 4, ID)?);
    let optional = |name: &str| -> Result<Option<u16>, PciIdError> {
        let path = dir.join(name);
        text_if_there(&path)?
            .map(|text| hex(&path, &text, 4, ID).map(narrow))
            .transpose()
    };
    let subsystem = match (optional("subsystem_vendor")?, optional("subsystem_device")?) {
        (Some(vendor), Some(device)) => Some(PciSubsystem { vendor, device }),
        (None, None) => None,
        (Some(_), None) => return Err(missing(dir, "subsystem_device")),
        (None, Some(_)) => return Err(missing(dir, "subsystem_vendor")),
    };
    Ok(PciIdentity {
        vendor,
        device,
        class,
        subsystem,
    })
}

/// One subsystem file without the other.
fn missing(dir: &Path, name: &str) -> PciIdError {
    PciIdError::Read {
        path: dir.join(name),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "absent while the other subsystem file is there",
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn function(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const H100: [(&str, &str); 3] = [
        ("vendor", "0x10de\n"),
        ("device", "0x2330\n"),
        ("class", "0x030200\n"),
    ];

    #[test]
    fn the_ids_the_kernel_writes_read_with_their_subsystem() {
        let mut files = H100.to_vec();
        files.extend([
            ("subsystem_vendor", "0x10de\n"),
            ("subsystem_device", "0x16c1\n"),
        ]);
        let dir = function(&files);
        let identity = read_pci_identity(dir.path()).unwrap();
        assert_eq!(
            identity,
            PciIdentity::new(0x10de, 0x2330, 0x030200).subsystem(PciSubsystem {
                vendor: 0x10de,
                device: 0x16c1
            })
        );
        assert!(identity.is_nvidia() && identity.is_display());
        assert_eq!(
            identity.to_string(),
            "10de:2330 class 030200 subsystem 10de:16c1"
        );
    }

    #[test]
    fn a_function_without_subsystem_files_has_no_subsystem() {
        let dir = function(&H100);
        assert_eq!(read_pci_identity(dir.path()).unwrap().subsystem, None);
    }

    #[test]
    fn an_id_that_is_not_what_the_kernel_writes_is_an_error_naming_the_file() {
        for bad in ["10de\n", "0x10d\n", "0x10dex\n", "0x010de\n", "\n"] {
            let mut files = H100.to_vec();
            files[0] = ("vendor", bad);
            let dir = function(&files);
            let error = read_pci_identity(dir.path()).unwrap_err();
            assert!(
                matches!(&error, PciIdError::Malformed { path, .. } if path.ends_with("vendor")),
                "{bad:?}: {error}"
            );
        }
    }

    #[test]
    fn an_absent_vendor_is_an_error_never_vendor_zero() {
        let dir = function(&H100[1..]);
        let error = read_pci_identity(dir.path()).unwrap_err();
        assert!(matches!(&error, PciIdError::Read { path, .. } if path.ends_with("vendor")));
    }

    #[test]
    fn one_subsystem_file_without_the_other_is_an_error_naming_the_absent_one() {
        let mut files = H100.to_vec();
        files.push(("subsystem_vendor", "0x10de\n"));
        let dir = function(&files);
        let error = read_pci_identity(dir.path()).unwrap_err();
        assert!(error.to_string().contains("subsystem_device"), "{error}");
    }
}
