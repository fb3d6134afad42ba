//! The kernel's rules for AMD Instinct partitions (`aqua_vanjaram.c`): the modes a GPU of N
//! XCCs supports, the partitions each makes, and which memory modes each runs with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::Token;
use layout_model::amd::{ComputePartition as C, MemoryPartition as M};
use proptest::prelude::*;

#[test]
fn an_eight_xcc_gpu_supports_spx_dpx_qpx_and_cpx_and_cpx_makes_eight_partitions() {
    assert_eq!(C::supported(8), [C::Spx, C::Dpx, C::Qpx, C::Cpx]);
    assert_eq!(C::Cpx.partitions(8), Some(8));
    assert_eq!(C::Qpx.partitions(8), Some(4));
    assert_eq!(C::Tpx.partitions(8), None);
}

#[test]
fn a_six_xcc_gpu_supports_tpx_and_no_dpx_or_qpx() {
    assert_eq!(C::supported(6), [C::Spx, C::Tpx, C::Cpx]);
    assert_eq!(C::Tpx.partitions(6), Some(3));
    assert_eq!(C::Dpx.partitions(6), None);
}

#[test]
fn spx_runs_with_nps1_only_and_cpx_with_nps1_or_nps4() {
    assert!(!C::Spx.runs_with(M::Nps4));
    assert!(C::Spx.runs_with(M::Nps1));
    assert!(C::Dpx.runs_with(M::Nps2));
    assert!(C::Cpx.runs_with(M::Nps4));
    assert!(!C::Cpx.runs_with(M::Nps2));
}

proptest! {
    /// AMD's MI300X rule, that a GPU has no more memory partitions than compute partitions,
    /// holds of every pair the kernel's table allows on a GPU of 8 XCCs.
    #[test]
    fn no_pair_the_kernel_allows_has_more_memory_than_compute_partitions(
        compute in prop::sample::select(C::ALL.to_vec()),
        memory in prop::sample::select(M::ALL.to_vec()),
    ) {
        if let Some(partitions) = compute.partitions(8) {
            if compute.runs_with(memory) {
                prop_assert!(memory.count() <= partitions, "{compute} {memory}");
            }
        }
    }
}
