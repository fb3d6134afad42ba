//! [`AmdGpuState`]: what sysfs says of one AMD GPU now (`<sysfs>/bus/pci/devices/<bdf>/`): its
//! IDs, its driver, its XGMI hive (read by [`gpu_host_probe::read_xgmi_hive_id`]), its render
//! nodes, and whether its partition files read — amdgpu answers `EPERM` for them while the GPU
//! is in reset (`amdgpu_gfx_get_current_compute_partition`, `current_memory_partition_show`).

use crate::pci::{SysfsError, device_entries, link_name};
use gpu_host_probe::amdgpu::DRIVER;
use gpu_host_probe::{
    PciIdentity, is_accelerator_class, is_display_class, read_pci_identity, read_xgmi_hive_id,
};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};

/// The device file every ROCm process holds: a GPU reset ends every process holding it, whatever
/// GPU it uses (AMD's warning on `amd-smi reset`).
pub const KFD: &str = "/dev/kfd";

/// Whether a function is a GPU this method resets: AMD's vendor ID and a processing
/// accelerator's class (Instinct MI300 on) or a display controller's (earlier Instinct parts).
pub fn is_amd_gpu(identity: &PciIdentity) -> bool {
    identity.is_amd() && (is_accelerator_class(identity.class) || is_display_class(identity.class))
}

/// A partition file of a GPU, as it reads now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionFile {
    /// The part has none (no partition manager).
    Absent,
    /// What it holds, without its newline.
    Reads(String),
    /// The kernel answers `EPERM`: the GPU is in reset.
    InReset,
}

impl PartitionFile {
    /// What it held before a reset, for the target's facts: `None` when absent.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Reads(text) => Some(text),
            Self::Absent | Self::InReset => None,
        }
    }
}

/// One AMD GPU as sysfs shows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdGpuState {
    /// Its address.
    pub bdf: Bdf,
    /// Its IDs.
    pub identity: PciIdentity,
    /// The bound driver (the `driver` link's name), if any.
    pub driver: Option<String>,
    /// Its XGMI hive; `None`: in no hive.
    pub hive: Option<u64>,
    /// Its render nodes' numbers (`drm/renderD<N>`: `/dev/dri/renderD<N>`).
    pub render_nodes: Vec<u32>,
    /// `current_compute_partition`.
    pub compute_partition: PartitionFile,
    /// `current_memory_partition`.
    pub memory_partition: PartitionFile,
}

impl AmdGpuState {
    /// A GPU bound to amdgpu with these IDs and hive, one render node, and its partitions (for
    /// simulators and tests).
    pub fn new(bdf: Bdf, identity: PciIdentity, hive: Option<u64>, render_node: u32) -> Self {
        Self {
            bdf,
            identity,
            driver: Some(DRIVER.to_owned()),
            hive,
            render_nodes: vec![render_node],
            compute_partition: PartitionFile::Reads("SPX".to_owned()),
            memory_partition: PartitionFile::Reads("NPS1".to_owned()),
        }
    }

    /// Whether amdgpu drives it.
    pub fn on_amdgpu(&self) -> bool {
        self.driver.as_deref() == Some(DRIVER)
    }

    /// Whether the kernel says it is in reset (a partition file answers `EPERM`).
    pub fn in_reset(&self) -> bool {
        self.compute_partition == PartitionFile::InReset
            || self.memory_partition == PartitionFile::InReset
    }

    /// Its render nodes' device files.
    pub fn render_files(&self) -> Vec<PathBuf> {
        render_files(&self.render_nodes)
    }
}

/// The device files of render nodes `nodes` (`/dev/dri/renderD<N>`).
pub fn render_files(nodes: &[u32]) -> Vec<PathBuf> {
    nodes
        .iter()
        .map(|node| PathBuf::from(format!("/dev/dri/renderD{node}")))
        .collect()
}

fn unreadable(path: &Path, source: std::io::Error) -> SysfsError {
    SysfsError::Read {
        path: path.to_path_buf(),
        source: source.into(),
    }
}

fn partition_file(path: &Path) -> Result<PartitionFile, SysfsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(PartitionFile::Reads(
            text.strip_suffix('\n').unwrap_or(&text).to_owned(),
        )),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(PartitionFile::Absent),
        Err(error) if error.raw_os_error() == Some(nix::errno::Errno::EPERM as i32) => {
            Ok(PartitionFile::InReset)
        }
        Err(error) => Err(unreadable(path, error)),
    }
}

/// The render nodes' numbers under `<dir>/drm` (a `bus/pci/devices/<bdf>` entry; none when the
/// directory is absent: no DRM device), sorted: the one reader of them (the layout executor's
/// holders' check reads them here too).
pub fn render_nodes(dir: &Path) -> Result<Vec<u32>, SysfsError> {
    let drm = dir.join("drm");
    let entries = match std::fs::read_dir(&drm) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(unreadable(&drm, error)),
    };
    let mut nodes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| unreadable(&drm, error))?;
        let name = entry.file_name();
        if let Some(node) = name
            .to_str()
            .and_then(|name| name.strip_prefix("renderD"))
            .and_then(|number| number.parse::<u32>().ok())
        {
            nodes.push(node);
        }
    }
    nodes.sort_unstable();
    Ok(nodes)
}

/// Reads the function at `dir` (a `bus/pci/devices/<bdf>` entry) as an AMD GPU; `None` when it
/// is not there (or its entry is a dangling link, as a device being removed leaves it).
pub fn read_gpu(dir: &Path, bdf: Bdf) -> Result<Option<AmdGpuState>, SysfsError> {
    if !dir.exists() {
        return Ok(None);
    }
    Ok(Some(AmdGpuState {
        bdf,
        identity: read_pci_identity(dir)?,
        driver: link_name(&dir.join("driver"))?,
        hive: read_xgmi_hive_id(dir)?,
        render_nodes: render_nodes(dir)?,
        compute_partition: partition_file(&dir.join("current_compute_partition"))?,
        memory_partition: partition_file(&dir.join("current_memory_partition"))?,
    }))
}

/// The addresses of every AMD GPU under `devices` (a `bus/pci/devices` directory), sorted: the
/// physical functions (a virtual function is left out, as the sync's PCI scan leaves it).
pub fn list_gpus(devices: &Path) -> Result<Vec<Bdf>, SysfsError> {
    let mut found = Vec::new();
    for entry in device_entries(devices)? {
        let (bdf, dir) = entry?;
        // A dangling entry (a device being removed), or an SR-IOV virtual function (its
        // `physfn`): no GPU of the host's to reset.
        if !dir.exists() || dir.join("physfn").symlink_metadata().is_ok() {
            continue;
        }
        if is_amd_gpu(&read_pci_identity(&dir)?) {
            found.push(bdf);
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    fn function(root: &Path, name: &str, vendor: &str, class: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), format!("{vendor}\n")).unwrap();
        std::fs::write(dir.join("device"), "0x74a1\n").unwrap();
        std::fs::write(dir.join("class"), format!("{class}\n")).unwrap();
        dir
    }

    #[test]
    fn a_gpu_reads_its_driver_hive_render_nodes_and_partitions() {
        let root = tempfile::tempdir().unwrap();
        let dir = function(root.path(), "0000:05:00.0", "0x1002", "0x120000");
        std::fs::create_dir_all(dir.join("drm/renderD128")).unwrap();
        std::fs::create_dir_all(dir.join("drm/card0")).unwrap();
        std::fs::create_dir_all(dir.join("xgmi_hive_info")).unwrap();
        std::fs::write(dir.join("xgmi_hive_info/xgmi_hive_id"), "4242\n").unwrap();
        std::fs::write(dir.join("current_compute_partition"), "CPX\n").unwrap();
        symlink("../../../bus/pci/drivers/amdgpu", dir.join("driver")).unwrap();
        let gpu = read_gpu(&dir, "0000:05:00.0".parse().unwrap())
            .unwrap()
            .unwrap();
        assert!(gpu.on_amdgpu());
        assert_eq!(gpu.hive, Some(4242));
        assert_eq!(gpu.render_files(), [PathBuf::from("/dev/dri/renderD128")]);
        assert_eq!(gpu.compute_partition, PartitionFile::Reads("CPX".into()));
        assert_eq!(gpu.memory_partition, PartitionFile::Absent);
        assert!(!gpu.in_reset());
    }

    #[test]
    fn only_amd_accelerators_and_display_controllers_are_listed() {
        let root = tempfile::tempdir().unwrap();
        function(root.path(), "0000:05:00.0", "0x1002", "0x120000");
        function(root.path(), "0000:06:00.0", "0x1002", "0x038000");
        function(root.path(), "0000:05:00.1", "0x1002", "0x040300");
        function(root.path(), "0000:3b:00.0", "0x10de", "0x030200");
        symlink(root.path().join("gone"), root.path().join("0000:07:00.0")).unwrap();
        let listed: Vec<String> = list_gpus(root.path())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(listed, ["0000:05:00.0", "0000:06:00.0"]);
    }

    #[test]
    fn a_virtual_function_of_an_amd_gpu_is_not_listed() {
        let root = tempfile::tempdir().unwrap();
        let pf = function(root.path(), "0000:05:00.0", "0x1002", "0x120000");
        let vf = function(root.path(), "0000:05:02.0", "0x1002", "0x120000");
        symlink(&pf, vf.join("physfn")).unwrap();
        let listed: Vec<String> = list_gpus(root.path())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(listed, ["0000:05:00.0"]);
    }
}
