//! [`MetaxTarget`]: what a reset ID names on a MetaX host, and the listing it is verified
//! against.

use super::mx_smi::{GpuRow, Topology};
use crate::reset_target::ResetTarget;
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
    /// Resolves `target` against a listing: `all`, or one GPU by its node ID, PCI address or
    /// UUID (`mx-smi -r -i` takes one ID). `None` when it names no GPU, or more than one ID.
    pub fn resolve(target: &ResetTarget, listing: &[GpuRow]) -> Option<MetaxTarget> {
        let (named, mx_smi_id): (Vec<GpuRow>, Option<String>) = match target {
            ResetTarget::All => (listing.to_vec(), Some("all".to_owned())),
            ResetTarget::Named(ids) => {
                let [id] = ids.as_slice() else {
                    return None;
                };
                let named: Vec<GpuRow> = listing
                    .iter()
                    .filter(|row| id.names(row.node, row.bdf, row.uuid.as_deref()))
                    .cloned()
                    .collect();
                let node = named.first().map(|row| row.node.to_string());
                (named, node)
            }
        };
        named.first()?;
        Some(MetaxTarget {
            mx_smi_id: mx_smi_id?,
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

    fn resolve(words: &str) -> Option<MetaxTarget> {
        MetaxTarget::resolve(&ResetTarget::parse(words).unwrap(), &listing())
    }

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

    /// The ID `mx-smi` is given for `id`, and how many GPUs it names.
    fn id_and_count(id: &str) -> (String, usize) {
        let target = resolve(id).unwrap();
        (target.mx_smi_id, target.named.len())
    }

    #[test]
    fn a_node_id_names_that_gpu_and_is_passed_as_is() {
        assert_eq!(id_and_count("1"), ("1".to_owned(), 1));
    }

    #[test]
    fn a_pci_address_in_any_case_names_its_gpu_by_node_id() {
        assert_eq!(resolve("0000:08:00.0").unwrap().mx_smi_id, "2");
        assert_eq!(resolve("0000:0A:00.0"), None);
    }

    #[test]
    fn a_uuid_with_or_without_its_prefix_names_its_gpu() {
        assert_eq!(resolve("GPU-AAAA-0").unwrap().mx_smi_id, "0");
        assert_eq!(resolve("aaaa-2").unwrap().mx_smi_id, "2");
    }

    #[test]
    fn all_names_every_gpu() {
        assert_eq!(id_and_count("all"), ("all".to_owned(), 3));
    }

    #[test]
    fn an_id_that_names_no_gpu_or_two_ids_resolve_to_nothing() {
        assert_eq!(resolve("7"), None);
        assert_eq!(resolve("0,1"), None, "mx-smi resets one ID a command");
    }
}
