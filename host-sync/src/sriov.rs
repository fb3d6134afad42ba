//! A GPU's SR-IOV virtual functions as the kernel shows them in sysfs, and the vGPU files
//! NVIDIA's driver adds to each (`<vf>/nvidia/`), read without NVML.
//!
//! The kernel's side (`drivers/pci/iov.c`): a physical function that can do SR-IOV has
//! `sriov_totalvfs` and `sriov_numvfs`, each a decimal number and a newline; the VFs it has
//! enabled are its `virtfn0` … `virtfn<numvfs-1>` links, and each VF links back with `physfn`.
//! NVIDIA's side (vGPU on Linux KVM from Ampere on; published sessions in
//! `tests/samples/vgpu/`): `nvidia/current_vgpu_type` is the vGPU type ID on the VF, `0` for
//! none; `nvidia/creatable_vgpu_types` lists what the VF can be given now, a header line
//! `ID    : vGPU Name` then one `<id> : <name>` line per type (only the header when nothing
//! fits); `nvidia/gpu_instance_id` and `nvidia/placement_id` say where a MIG-backed vGPU sits,
//! and fail with `ENXIO` while the VF has none.
//!
//! Every reader fails closed: a file that holds what the kernel or the driver does not write
//! is an error naming the file (and the line), never a guess.

use gpu_partition_types::{Bdf, VgpuTypeId};
use std::path::{Path, PathBuf};

/// One line of `creatable_vgpu_types`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatableType {
    /// Its type ID.
    pub id: VgpuTypeId,
    /// Its name (`NVIDIA A100-1-5C`).
    pub name: String,
}

/// What NVIDIA's driver shows of one VF (`<vf>/nvidia/`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VfVgpu {
    /// The vGPU type on the VF; `None`: none (`0`).
    pub current_type: Option<VgpuTypeId>,
    /// The types the VF can be given now (it shrinks as the card's capacity is used).
    pub creatable: Vec<CreatableType>,
    /// The GPU instance a MIG-backed vGPU on the VF sits on; `None` while there is none
    /// (`ENXIO`, or no such file: a driver or card without MIG-backed vGPU).
    pub gpu_instance_id: Option<u32>,
    /// Its placement in that GPU instance; `None` as above.
    pub placement_id: Option<u32>,
}

/// One virtual function.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualFunction {
    /// Its number (`virtfn<index>`).
    pub index: u32,
    /// Its address.
    pub bdf: Bdf,
    /// The bound driver's name (`nvidia`, `vfio-pci`), if any.
    pub driver: Option<String>,
    /// Its IOMMU group (`/dev/vfio/<group>` is what a VM holds open), if it has one.
    pub iommu_group: Option<u32>,
    /// NVIDIA's vGPU files; `None` where the VF has no `nvidia/` directory.
    pub vgpu: Option<VfVgpu>,
}

impl VirtualFunction {
    /// The file a VM holds open while it uses the VF (`/dev/vfio/<group>`, the VFIO group's
    /// device); `None` for a VF with no IOMMU group.
    pub fn vfio_group_file(&self) -> Option<std::path::PathBuf> {
        self.iommu_group.map(vfio_group_file)
    }
}

/// The device of IOMMU group `group` (`/dev/vfio/<group>`): what a VM using a function of the
/// group holds open.
pub fn vfio_group_file(group: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/vfio/{group}"))
}

/// A physical function's SR-IOV state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sriov {
    /// How many VFs the function can have (`sriov_totalvfs`).
    pub total_vfs: u32,
    /// The VFs enabled, by index (as many as `sriov_numvfs` says).
    pub vfs: Vec<VirtualFunction>,
}

/// Why a function's SR-IOV state could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SriovError {
    /// A file or link could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// What could not be read.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file that holds what the kernel or the driver does not write there.
    #[error("{}{}: {problem} (it holds {text:?})", path.display(), line.map(|line| format!(", line {line}")).unwrap_or_default())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The line at fault (1-based), for a file of several lines.
        line: Option<usize>,
        /// What is wrong.
        problem: &'static str,
        /// What it holds (the line, for a list).
        text: String,
    },
    /// A link or file that went away while it was read (VFs being enabled or disabled): read
    /// again.
    #[error("{} went away while it was read (VFs being enabled or disabled?): read again", path.display())]
    Changed {
        /// What went away.
        path: PathBuf,
    },
    /// `sriov_numvfs` above `sriov_totalvfs`.
    #[error("{}: sriov_numvfs {enabled} is above sriov_totalvfs {total}", function.display())]
    MoreThanTotal {
        /// The physical function's directory.
        function: PathBuf,
        /// `sriov_numvfs`.
        enabled: u32,
        /// `sriov_totalvfs`.
        total: u32,
    },
    /// The `virtfn` links are not `virtfn0` … `virtfn<numvfs-1>` (VFs being enabled or
    /// disabled while read: read again).
    #[error(
        "{}: sriov_numvfs says {enabled} VFs, the virtfn links are {links:?}",
        function.display()
    )]
    LinksDisagree {
        /// The physical function's directory.
        function: PathBuf,
        /// `sriov_numvfs`.
        enabled: u32,
        /// The link numbers found, sorted.
        links: Vec<u32>,
    },
    /// A VF whose `physfn` does not lead back to the function that lists it.
    #[error("{}: its physfn {}, not to {parent}", vf.display(), physfn.as_ref().map_or("is missing".to_owned(), |to| format!("leads to {}", to.display())))]
    NotItsParent {
        /// The VF's directory.
        vf: PathBuf,
        /// Where its `physfn` leads; `None` where it has none.
        physfn: Option<PathBuf>,
        /// The function that lists it.
        parent: Bdf,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SriovError + '_ {
    move |source| SriovError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A file that holds one decimal number and a newline, as the kernel's `%u\n`.
fn read_number(path: &Path) -> Result<u32, SriovError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    number_in(text, path)
}

/// [`read_number`], `None` where [`nothing_there`].
fn read_number_unless_enxio(path: &Path) -> Result<Option<u32>, SriovError> {
    match std::fs::read_to_string(path) {
        Ok(text) => number_in(text, path).map(Some),
        Err(error) if nothing_there(&error) => Ok(None),
        Err(source) => Err(io(path)(source)),
    }
}

/// Whether a read of `gpu_instance_id` or `placement_id` failed because there is nothing to
/// say: `ENXIO`, the driver's answer while the VF has no vGPU, or no such file (a driver or
/// card without MIG-backed vGPU). Any other failure (`EIO`, `EACCES`) is one.
fn nothing_there(error: &std::io::Error) -> bool {
    error.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32)
        || error.kind() == std::io::ErrorKind::NotFound
}

fn number_in(text: String, path: &Path) -> Result<u32, SriovError> {
    parse_number(&text).ok_or_else(|| SriovError::Unreadable {
        path: path.to_path_buf(),
        line: None,
        problem: "not a decimal number and a newline",
        text,
    })
}

/// A decimal number and one newline (the kernel's `%u\n`), nothing else.
fn parse_number(text: &str) -> Option<u32> {
    let digits = text.strip_suffix('\n')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `current_vgpu_type`'s text: the type ID, `None` for `0`.
pub fn parse_current_vgpu_type(text: &str, path: &Path) -> Result<Option<VgpuTypeId>, SriovError> {
    let number = parse_number(text).ok_or_else(|| SriovError::Unreadable {
        path: path.to_path_buf(),
        line: None,
        problem: "not a vGPU type ID and a newline",
        text: text.to_owned(),
    })?;
    Ok(std::num::NonZeroU32::new(number).map(VgpuTypeId))
}

/// `creatable_vgpu_types`' text: the header `ID : vGPU Name` (any spacing), then one
/// `<id> : <name>` line each, the ID decimal digits. Anything else — no header, an ID that is
/// not a nonzero number, a line without a name, an empty line, a carriage return, one ID twice —
/// is an error naming the line (its number and text). The last line's newline may be missing.
pub fn parse_creatable_vgpu_types(
    text: &str,
    path: &Path,
) -> Result<Vec<CreatableType>, SriovError> {
    let bad = |problem: &'static str, at: usize, line: &str| SriovError::Unreadable {
        path: path.to_path_buf(),
        line: Some(at),
        problem,
        text: line.to_owned(),
    };
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut lines = body
        .split('\n')
        .enumerate()
        .map(|(at, line)| (at + 1, line));
    let (_, header) = lines.next().unwrap_or((1, ""));
    if header.is_empty() && body.is_empty() {
        return Err(bad("empty: no header line", 1, ""));
    }
    let words: Vec<&str> = header.split_whitespace().collect();
    if words != ["ID", ":", "vGPU", "Name"] || header.contains('\r') {
        return Err(bad(
            "the first line is not the header `ID : vGPU Name`",
            1,
            header,
        ));
    }
    let mut types: Vec<CreatableType> = Vec::new();
    for (at, line) in lines {
        if line.contains('\r') {
            return Err(bad(
                "a carriage return, which the driver does not write",
                at,
                line,
            ));
        }
        if line.trim().is_empty() {
            return Err(bad("an empty line", at, line));
        }
        let (id, name) = line
            .split_once(':')
            .ok_or_else(|| bad("a line without `:`", at, line))?;
        let id = id.trim();
        let id = id
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| id.parse::<std::num::NonZeroU32>().ok())
            .flatten()
            .ok_or_else(|| bad("a type ID that is not a nonzero decimal number", at, line))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("a type without a name", at, line));
        }
        if types.iter().any(|known| known.id.0 == id) {
            return Err(bad("a type ID listed twice", at, line));
        }
        types.push(CreatableType {
            id: VgpuTypeId(id),
            name: name.to_owned(),
        });
    }
    Ok(types)
}

/// The name of the directory a link leads to (a driver, a device, an IOMMU group).
fn link_name(link: &Path) -> Result<Option<String>, SriovError> {
    match std::fs::read_link(link) {
        Ok(target) => Ok(target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io(link)(source)),
    }
}

/// `<vf>/nvidia/`, or `None` where the VF has none.
fn read_vf_vgpu(vf: &Path) -> Result<Option<VfVgpu>, SriovError> {
    let dir = vf.join("nvidia");
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io(&dir)(source)),
    }
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path)
            .map_err(io(&path))
            .map(|text| (text, path))
    };
    let (text, path) = read("current_vgpu_type")?;
    let current_type = parse_current_vgpu_type(&text, &path)?;
    let (text, path) = read("creatable_vgpu_types")?;
    let creatable = parse_creatable_vgpu_types(&text, &path)?;
    Ok(Some(VfVgpu {
        current_type,
        creatable,
        gpu_instance_id: read_number_unless_enxio(&dir.join("gpu_instance_id"))?,
        placement_id: read_number_unless_enxio(&dir.join("placement_id"))?,
    }))
}

/// The SR-IOV state of the physical function at `bdf` under `sysfs_root`; `None` for a
/// function without SR-IOV (no `sriov_totalvfs`).
pub fn read_sriov(sysfs_root: &Path, bdf: Bdf) -> Result<Option<Sriov>, SriovError> {
    let function = sysfs_root.join("bus/pci/devices").join(bdf.to_string());
    let total_path = function.join("sriov_totalvfs");
    if let Err(error) = std::fs::symlink_metadata(&total_path) {
        return match error.kind() {
            std::io::ErrorKind::NotFound => Ok(None),
            _ => Err(io(&total_path)(error)),
        };
    }
    let total = read_number(&total_path)?;
    let enabled = read_number(&function.join("sriov_numvfs"))?;
    if enabled > total {
        return Err(SriovError::MoreThanTotal {
            function,
            enabled,
            total,
        });
    }
    let mut links: Vec<u32> = Vec::new();
    for entry in std::fs::read_dir(&function).map_err(io(&function))? {
        let entry = entry.map_err(io(&function))?;
        let name = entry.file_name();
        if let Some(number) = name.to_str().and_then(|n| n.strip_prefix("virtfn")) {
            match number.parse::<u32>() {
                Ok(index) if number == index.to_string() => links.push(index),
                _ => {
                    return Err(SriovError::Unreadable {
                        path: entry.path(),
                        line: None,
                        problem: "a virtfn link whose number does not read",
                        text: number.to_owned(),
                    });
                }
            }
        }
    }
    links.sort_unstable();
    if !links.iter().copied().eq(0..enabled) {
        return Err(SriovError::LinksDisagree {
            function,
            enabled,
            links,
        });
    }
    let mut vfs = Vec::with_capacity(links.len());
    for index in links {
        let link = function.join(format!("virtfn{index}"));
        let name = link_name(&link)?.ok_or_else(|| SriovError::Changed { path: link.clone() })?;
        let vf_bdf: Bdf = name.parse().map_err(|_| SriovError::Unreadable {
            path: link.clone(),
            line: None,
            problem: "a virtfn link that does not lead to a PCI address",
            text: name.clone(),
        })?;
        let physfn = link.join("physfn");
        let back = link_name(&physfn)?;
        if back.as_deref().and_then(|name| name.parse::<Bdf>().ok()) != Some(bdf) {
            return Err(SriovError::NotItsParent {
                vf: link,
                physfn: std::fs::read_link(&physfn).ok(),
                parent: bdf,
            });
        }
        let iommu_group = match link_name(&link.join("iommu_group"))? {
            None => None,
            Some(group) => Some(group.parse::<u32>().map_err(|_| SriovError::Unreadable {
                path: link.join("iommu_group"),
                line: None,
                problem: "an IOMMU group that is not a number",
                text: group,
            })?),
        };
        vfs.push(VirtualFunction {
            index,
            bdf: vf_bdf,
            driver: link_name(&link.join("driver"))?,
            iommu_group,
            vgpu: read_vf_vgpu(&link)?,
        });
    }
    Ok(Some(Sriov {
        total_vfs: total,
        vfs,
    }))
}

/// What the GPU's virtual functions hold, as the declaration compares it
/// (`layout_model::DeclaredGpu::vf_drift`): the vGPU type of each VF, none where the GPU has
/// no SR-IOV, or why it did not read.
pub fn read_vf_types(sysfs_root: &Path, bdf: Bdf) -> layout_model::VfsRead {
    vf_types(&read_sriov(sysfs_root, bdf))
}

/// The same, of an SR-IOV state [`read_sriov`] gave (for a caller that needs the state too).
pub fn vf_types(read: &Result<Option<Sriov>, SriovError>) -> layout_model::VfsRead {
    match read {
        Ok(None) => layout_model::VfsRead::Read(Vec::new()),
        Ok(Some(sriov)) => layout_model::VfsRead::Read(
            sriov
                .vfs
                .iter()
                .map(|vf| {
                    layout_model::VfFound::new(
                        vf.index,
                        vf.vgpu.as_ref().and_then(|vgpu| vgpu.current_type),
                    )
                    .on_instance(vf.vgpu.as_ref().and_then(|vgpu| vgpu.gpu_instance_id))
                })
                .collect(),
        ),
        Err(error) => {
            layout_model::VfsRead::Unreadable(gpu_host_probe::chain::Chain(error).to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nothing_there;
    use nix::errno::Errno;

    #[test]
    fn enxio_and_a_missing_file_say_nothing_is_there_and_other_failures_are_failures() {
        let raw = |errno: Errno| std::io::Error::from_raw_os_error(errno as i32);
        assert!(nothing_there(&raw(Errno::ENXIO)));
        assert!(nothing_there(&raw(Errno::ENOENT)));
        assert!(!nothing_there(&raw(Errno::EIO)));
        assert!(!nothing_there(&raw(Errno::EACCES)));
    }
}
