//! [`MetaxTarget`]: what a reset ID names on a MetaX host, and the listing it is verified
//! against.

use super::mx_smi::{GpuRow, Topology};
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// The GPUs a reset names, and every GPU listed before it (all are verified after it: the
/// kernel driver resets a whole interconnect group, which `mx-smi -L` does not show).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetaxTarget {
    /// What is passed to `mx-smi -r -i`: the node ID, or `all`.
    pub mx_smi_id: String,
    /// The GPUs the ID names.
    pub named: Vec<GpuRow>,
    /// Every GPU listed before the reset.
    pub before: Vec<GpuRow>,
    /// The MetaXLink links before the reset, when `mx-smi topo -m` read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
}

impl MetaxTarget {
    /// Resolves `id` against a listing: `all`, a node ID, a PCI address (any case), or a UUID
    /// (any case, with or without its `GPU-` prefix). `None` when it names no GPU.
    pub fn resolve(id: &str, listing: &[GpuRow]) -> Option<MetaxTarget> {
        let id = id.trim();
        let named: Vec<GpuRow> = if id.eq_ignore_ascii_case("all") {
            listing.to_vec()
        } else {
            let bdf = id.parse::<Bdf>().ok();
            let bare = |uuid: &str| uuid.trim_start_matches("GPU-").to_ascii_lowercase();
            listing
                .iter()
                .filter(|row| {
                    id.parse::<u32>().ok() == Some(row.node)
                        || bdf == Some(row.bdf)
                        || row
                            .uuid
                            .as_deref()
                            .is_some_and(|uuid| bare(uuid) == bare(id))
                })
                .cloned()
                .collect()
        };
        let first = named.first()?;
        let mx_smi_id = if id.eq_ignore_ascii_case("all") {
            "all".to_owned()
        } else {
            first.node.to_string()
        };
        Some(MetaxTarget {
            mx_smi_id,
            named,
            before: listing.to_vec(),
            topology: None,
        })
    }

    /// The interconnect groups of the named GPUs (node IDs, sorted), when the topology read and
    /// names them: what the kernel driver resets together.
    pub fn group(&self) -> Option<Vec<u32>> {
        let topology = self.topology.as_ref()?;
        let mut group = std::collections::BTreeSet::new();
        for row in &self.named {
            group.extend(topology.group_of(row.node)?);
        }
        Some(group.into_iter().collect())
    }

    /// The PCI addresses of the named GPUs.
    pub fn devices(&self) -> Vec<Bdf> {
        self.named.iter().map(|row| row.bdf).collect()
    }

    /// The PCI addresses of every GPU listed before the reset (each is verified after it).
    pub fn verified(&self) -> Vec<Bdf> {
        self.before.iter().map(|row| row.bdf).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::metax::mx_smi::GpuState;

    fn listing() -> Vec<GpuRow> {
        (0..3)
            .map(|n| {
                GpuRow::new(
                    n,
                    "MXC500",
                    format!("0000:0{}:00.0", n + 6).parse().unwrap(),
                    GpuState::Available,
                    Some(&format!("GPU-aaaa-{n}")),
                )
            })
            .collect()
    }

    #[test]
    fn a_node_id_names_that_gpu_and_is_passed_as_is() {
        let target = MetaxTarget::resolve("1", &listing()).unwrap();
        assert_eq!((target.mx_smi_id.as_str(), target.named.len()), ("1", 1));
    }

    #[test]
    fn a_pci_address_in_any_case_names_its_gpu_by_node_id() {
        assert_eq!(
            MetaxTarget::resolve("0000:08:00.0", &listing())
                .unwrap()
                .mx_smi_id,
            "2"
        );
        assert_eq!(MetaxTarget::resolve("0000:0A:00.0", &listing()), None);
    }

    #[test]
    fn a_uuid_with_or_without_its_prefix_names_its_gpu() {
        assert_eq!(
            MetaxTarget::resolve("GPU-AAAA-0", &listing())
                .unwrap()
                .mx_smi_id,
            "0"
        );
        assert_eq!(
            MetaxTarget::resolve("aaaa-2", &listing())
                .unwrap()
                .mx_smi_id,
            "2"
        );
    }

    #[test]
    fn all_names_every_gpu() {
        let target = MetaxTarget::resolve("all", &listing()).unwrap();
        assert_eq!((target.mx_smi_id.as_str(), target.named.len()), ("all", 3));
    }

    #[test]
    fn an_id_that_names_no_gpu_resolves_to_nothing() {
        assert_eq!(MetaxTarget::resolve("7", &listing()), None);
        assert_eq!(MetaxTarget::resolve("", &listing()), None);
    }
}
