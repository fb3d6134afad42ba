//! A virtual function's vGPU type, written: [`VfTypeFile`] names the file
//! (`<sysfs>/bus/pci/devices/<gpu>/virtfn<N>/nvidia/current_vgpu_type`, NVIDIA's per-VF
//! interface from Ampere on), and a [`VgpuTypes`] carries the write — [`SysfsTypes`], the
//! kernel's file (what every real host uses), or a test's fake driver, which answers as the
//! driver does (`EIO` where the card cannot create the type now).

use gpu_partition_types::{Bdf, VgpuTypeId};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The vGPU type file of virtual function `index` of the GPU `gpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VfTypeFile {
    /// The GPU (the VFs' physical function).
    pub gpu: Bdf,
    /// The VF's number: `virtfn<index>`.
    pub index: u32,
}

impl VfTypeFile {
    /// Its path under `sysfs_root`.
    pub fn path(&self, sysfs_root: &Path) -> PathBuf {
        sysfs_root
            .join("bus/pci/devices")
            .join(self.gpu.to_string())
            .join(format!("virtfn{}/nvidia/current_vgpu_type", self.index))
    }
}

/// What carries the write of a VF's vGPU type.
pub trait VgpuTypes: Send + Sync {
    /// Writes the type `id` to `file` under `sysfs_root` (`None`: the VF's vGPU removed, which
    /// the kernel's file takes as `0`: no type ID is 0, so a write of a type is never a
    /// removal); the driver's refusal is the write's error (its errno).
    fn write(
        &self,
        sysfs_root: &Path,
        file: VfTypeFile,
        id: Option<VgpuTypeId>,
    ) -> std::io::Result<()>;
}

/// The kernel's file: the ID in decimal and a newline, in one `write(2)`, as `echo` does (the
/// driver parses it with `kstrtol`, base 10).
#[derive(Debug, Clone, Copy, Default)]
pub struct SysfsTypes;

impl VgpuTypes for SysfsTypes {
    fn write(
        &self,
        sysfs_root: &Path,
        file: VfTypeFile,
        id: Option<VgpuTypeId>,
    ) -> std::io::Result<()> {
        let mut opened = std::fs::OpenOptions::new()
            .write(true)
            .open(file.path(sysfs_root))?;
        let number = id.map_or(0, VgpuTypeId::get);
        opened.write_all(format!("{number}\n").as_bytes())
    }
}
