//! The kernel's rules for AMD Instinct partitions (`aqua_vanjaram.c`): the modes a GPU of N
//! XCCs supports, the partitions each makes, and which memory modes each runs with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_partition_types::Token;
use layout_model::amd::{compute_modes, partitions, runs_with};
use proptest::prelude::*;

#[test]
fn an_eight_xcc_gpu_supports_spx_dpx_qpx_and_cpx_and_cpx_makes_eight_partitions() {
    assert_eq!(compute_modes(8), [C::Spx, C::Dpx, C::Qpx, C::Cpx]);
    assert_eq!(partitions(C::Cpx, 8), Some(8));
    assert_eq!(partitions(C::Qpx, 8), Some(4));
    assert_eq!(partitions(C::Tpx, 8), None);
}

#[test]
fn a_six_xcc_gpu_supports_tpx_and_no_dpx_or_qpx() {
    assert_eq!(compute_modes(6), [C::Spx, C::Tpx, C::Cpx]);
    assert_eq!(partitions(C::Tpx, 6), Some(3));
    assert_eq!(partitions(C::Dpx, 6), None);
}

#[test]
fn a_gpu_of_an_odd_xcc_count_is_never_split_in_two_or_four() {
    // One XCC: CPX is the one partition SPX is; three, five or seven: no mode the kernel has
    // (`__aqua_vanjaram_update_supported_modes` lists none), so every compute write is refused.
    assert_eq!(compute_modes(1), [C::Spx, C::Cpx]);
    for xccs in [3, 5, 7] {
        assert_eq!(compute_modes(xccs), [], "{xccs} XCCs");
        assert_eq!(partitions(C::Dpx, xccs), None);
    }
}

#[test]
fn spx_runs_with_nps1_only_and_cpx_with_nps1_or_nps4() {
    assert!(!runs_with(C::Spx, M::Nps4));
    assert!(runs_with(C::Spx, M::Nps1));
    assert!(runs_with(C::Dpx, M::Nps2));
    assert!(runs_with(C::Cpx, M::Nps4));
    assert!(!runs_with(C::Cpx, M::Nps2));
}

proptest! {
    /// AMD's MI300X rule, that a GPU has no more memory partitions than compute partitions,
    /// holds of every pair the kernel's table allows on a GPU of 8 XCCs.
    #[test]
    fn no_pair_the_kernel_allows_has_more_memory_than_compute_partitions(
        compute in prop::sample::select(C::ALL.to_vec()),
        memory in prop::sample::select(M::ALL.to_vec()),
    ) {
        if let Some(partitions) = partitions(compute, 8) {
            if runs_with(compute, memory) {
                prop_assert!(memory.count() <= partitions, "{compute} {memory}");
            }
        }
    }
}

mod declared {
    use super::{C, M};
    use gpu_partition_types::Bdf;
    use layout_model::amd::{AmdDeclared, AmdHeld, AmdRead, AmdWant};
    use layout_model::{Declaration, DeclaredGpu, DifferenceKind, Fact, Seen};
    use proptest::prelude::*;

    fn device() -> Bdf {
        "0000:05:00.0".parse().unwrap()
    }

    fn declared() -> DeclaredGpu {
        DeclaredGpu::Amd(AmdDeclared::new(AmdWant::new(C::Cpx, M::Nps4), Vec::new()))
    }

    fn drift(gpu: &DeclaredGpu, seen: &AmdRead) -> Vec<layout_model::Difference> {
        gpu.compare(device(), Seen::Amd(seen)).differences
    }

    #[test]
    fn an_amd_gpu_that_holds_its_declared_partitions_has_no_difference() {
        let held = AmdRead::Held(AmdHeld::new(C::Cpx, Some(M::Nps4), None));
        assert_eq!(drift(&declared(), &held), []);
    }

    #[test]
    fn each_axis_that_differs_is_a_difference_and_a_request_waiting_is_named_with_it() {
        let held = AmdRead::Held(AmdHeld::new(C::Spx, Some(M::Nps1), Some(M::Nps4)));
        let found = drift(&declared(), &held);
        let kinds: Vec<DifferenceKind> = found.iter().map(|d| d.kind()).collect();
        assert_eq!(
            kinds,
            [
                DifferenceKind::ComputePartition,
                DifferenceKind::MemoryPartition
            ]
        );
        assert_eq!(
            found[1].message(),
            "the memory partition is NPS1, NPS4 requested and waiting for a driver reload; \
             the layout wants NPS4"
        );
    }

    #[test]
    fn partitions_that_did_not_read_are_one_difference_with_why_and_no_remedy_of_ours() {
        let found = drift(&declared(), &AmdRead::Unreadable("in reset".into()));
        assert_eq!(
            found.iter().map(|d| &d.fact).collect::<Vec<_>>(),
            [&Fact::PartitionsUnread {
                why: "in reset".into()
            }]
        );
        assert_eq!(found[0].remedy(), layout_model::Remedy::None);
    }

    #[test]
    fn an_amd_gpu_where_an_nvidia_one_is_declared_is_one_vendor_difference() {
        let nvidia = DeclaredGpu::Nvidia(layout_model::NvidiaDeclared::disabled(
            layout_model::Board::default(),
        ));
        let found = drift(&nvidia, &AmdRead::NotPartitionable);
        assert_eq!(
            found.iter().map(|d| &d.fact).collect::<Vec<_>>(),
            [&Fact::Vendor {
                found: layout_model::Vendor::Amd,
                wanted: layout_model::Vendor::Nvidia,
            }]
        );
        assert_eq!(found[0].remedy(), layout_model::Remedy::NewLayout);
    }

    #[test]
    fn a_host_declared_spx_nps1_alone_is_declared_out_of_partitioning() {
        let gpus = |want| {
            let gpu = DeclaredGpu::Amd(AmdDeclared::new(want, Vec::new()));
            [(device(), gpu)].into_iter().collect()
        };
        let undivided = Declaration::new("spx", 1, None, gpus(AmdWant::new(C::Spx, M::Nps1)));
        let divided = Declaration::new("qpx", 1, None, gpus(AmdWant::new(C::Qpx, M::Nps1)));
        assert!(undivided.is_disabled());
        assert!(!divided.is_disabled());
    }

    fn compute() -> impl Strategy<Value = C> {
        prop::sample::select(vec![C::Spx, C::Dpx, C::Tpx, C::Qpx, C::Cpx])
    }

    fn memory() -> impl Strategy<Value = M> {
        prop::sample::select(vec![M::Nps1, M::Nps2, M::Nps3, M::Nps4, M::Nps6, M::Nps8])
    }

    proptest! {
        #[test]
        fn a_declared_amd_gpu_and_its_differences_read_back_as_they_were_written(
            wanted_compute in compute(),
            wanted_memory in memory(),
            found_compute in compute(),
            found_memory in prop::option::of(memory()),
            requested in prop::option::of(memory()),
        ) {
            let want = AmdWant::new(wanted_compute, wanted_memory);
            let gpu = DeclaredGpu::Amd(AmdDeclared::new(want, vec!["amd-metrics-exporter".into()]));
            let text = serde_json::to_string(&gpu).unwrap();
            prop_assert_eq!(&serde_json::from_str::<DeclaredGpu>(&text).unwrap(), &gpu);
            let held = AmdRead::Held(AmdHeld::new(found_compute, found_memory, requested));
            for difference in drift(&gpu, &held) {
                let text = serde_json::to_string(&difference).unwrap();
                prop_assert_eq!(
                    serde_json::from_str::<layout_model::Difference>(&text).unwrap(),
                    difference
                );
            }
        }
    }
}
