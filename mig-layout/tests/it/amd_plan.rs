//! The plan of an AMD partition layout: memory requests, one driver reload, then the compute
//! partitions; nothing where the GPUs hold the layout; refused before any write for what the
//! kernel or the GPU does not take, a hive split, and a GPU in use.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::Holder;
use gpu_host_probe::amdgpu::AmdPartitions;
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_partition_types::Bdf;
use mig_layout::amd::{AmdCard, AmdRefusal, AmdStep, AmdWant, plan_amd};
use proptest::prelude::*;

fn bdf(index: usize) -> Bdf {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
        .parse()
        .unwrap()
}

/// What an MI300X offers in `memory` (the mainline table: NPS1 → SPX, DPX, QPX, CPX; NPS4 →
/// QPX, CPX), in hive 7.
fn mi300x(compute: C, memory: M) -> AmdPartitions {
    let offered = match memory {
        M::Nps4 => vec![C::Qpx, C::Cpx],
        M::Nps2 => vec![C::Dpx],
        _ => vec![C::Spx, C::Dpx, C::Qpx, C::Cpx],
    };
    AmdPartitions::new(
        (compute, offered),
        Some(memory),
        vec![M::Nps1, M::Nps2, M::Nps4],
        Some(7),
    )
}

fn cards<'a>(read: &'a [AmdPartitions], holders: &'a [Vec<Holder>]) -> Vec<AmdCard<'a>> {
    read.iter()
        .zip(holders)
        .enumerate()
        .map(|(index, (partitions, holders))| AmdCard {
            device: bdf(index),
            partitions,
            holders,
            requested: None,
        })
        .collect()
}

fn all(count: usize, compute: C, memory: M) -> Vec<(Bdf, AmdWant)> {
    (0..count)
        .map(|index| (bdf(index), AmdWant::new(compute, memory)))
        .collect()
}

fn hive(compute: C, memory: M) -> Vec<AmdPartitions> {
    vec![mi300x(compute, memory); 8]
}

fn idle() -> Vec<Vec<Holder>> {
    vec![Vec::new(); 8]
}

#[test]
fn cpx_and_nps4_on_a_hive_of_eight_requests_memory_reloads_once_then_sets_compute() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let steps = plan_amd(&cards(&read, &holders), &all(8, C::Cpx, M::Nps4)).unwrap();
    let reload = steps
        .iter()
        .position(|s| *s == AmdStep::ReloadDriver)
        .unwrap();
    assert_eq!(
        steps
            .iter()
            .filter(|s| **s == AmdStep::ReloadDriver)
            .count(),
        1
    );
    assert!(
        steps[..reload]
            .iter()
            .all(|s| matches!(s, AmdStep::RequestMemory { mode: M::Nps4, .. }))
    );
    assert!(
        steps[reload + 1..]
            .iter()
            .all(|s| matches!(s, AmdStep::SetCompute { mode: C::Cpx, .. }))
    );
    assert_eq!((reload, steps.len()), (8, 17));
}

#[test]
fn gpus_that_hold_the_layout_get_no_step() {
    let (read, holders) = (hive(C::Cpx, M::Nps4), idle());
    assert_eq!(
        plan_amd(&cards(&read, &holders), &all(8, C::Cpx, M::Nps4)).unwrap(),
        []
    );
}

#[test]
fn spx_with_nps4_is_refused_citing_the_kernels_rule() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let error = plan_amd(&cards(&read, &holders), &all(8, C::Spx, M::Nps4)).unwrap_err();
    assert!(matches!(
        error,
        AmdRefusal::Incompatible {
            compute: C::Spx,
            memory: M::Nps4,
            ..
        }
    ));
    assert_eq!(
        error.to_string(),
        "0000:05:00.0: SPX with NPS4 is refused by the kernel: SPX runs with NPS1 \
         (aqua_vanjaram.c; a GPU has no more memory partitions than compute partitions)"
    );
}

#[test]
fn a_memory_partition_the_gpu_does_not_offer_is_refused_naming_what_it_offers() {
    // An MI355-like part whose firmware offers NPS1 and NPS2 (AMD: SPX+NPS1 and DPX+NPS2).
    let read = vec![AmdPartitions::new(
        (C::Spx, vec![C::Spx, C::Dpx, C::Qpx, C::Cpx]),
        Some(M::Nps1),
        vec![M::Nps1, M::Nps2],
        None,
    )];
    let holders = vec![Vec::new()];
    let error = plan_amd(&cards(&read, &holders), &all(1, C::Cpx, M::Nps4)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "0000:05:00.0: NPS4 is not offered: the GPU offers NPS1, NPS2 (available_memory_partition)"
    );
}

#[test]
fn a_compute_partition_not_offered_with_the_memory_partition_now_is_refused() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let error = plan_amd(&cards(&read, &holders), &all(8, C::Tpx, M::Nps1)).unwrap_err();
    assert!(
        matches!(error, AmdRefusal::ComputeNotOffered { wanted: C::Tpx, .. }),
        "{error:?}"
    );
}

#[test]
fn a_compute_partition_not_offered_once_the_memory_partition_changes_is_refused_before_the_reload()
{
    // An MI300X offers QPX and CPX in NPS4 (8 XCCs: the only count that offers SPX, DPX, QPX
    // and CPX in NPS1): TPX, which runs with NPS4 by the kernel's table, is not offered there.
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let error = plan_amd(&cards(&read, &holders), &all(8, C::Tpx, M::Nps4)).unwrap_err();
    let AmdRefusal::ComputeNotOffered {
        wanted,
        offered,
        with_memory,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (*wanted, offered.as_slice(), *with_memory),
        (C::Tpx, &[C::Qpx, C::Cpx][..], Some(M::Nps4))
    );
    assert_eq!(
        error.to_string(),
        "0000:05:00.0: TPX is not offered once its memory partition is NPS4: it offers QPX, CPX \
         (available_compute_partition now, and __aqua_vanjaram_update_available_partition_mode \
         for the memory partition asked for)"
    );
}

#[test]
fn a_compute_partition_offered_only_once_the_memory_partition_changes_is_planned() {
    // In NPS4 an MI300X offers QPX and CPX; DPX with NPS2 is offered after the reload.
    let (read, holders) = (hive(C::Cpx, M::Nps4), idle());
    let steps = plan_amd(&cards(&read, &holders), &all(8, C::Dpx, M::Nps2)).unwrap();
    assert!(steps.contains(&AmdStep::ReloadDriver));
    assert!(steps.contains(&AmdStep::SetCompute {
        device: bdf(0),
        mode: C::Dpx
    }));
}

#[test]
fn a_memory_change_for_part_of_a_hive_is_refused_naming_a_member_left_out() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let error = plan_amd(&cards(&read, &holders), &all(4, C::Cpx, M::Nps4)).unwrap_err();
    assert!(
        matches!(error, AmdRefusal::HiveMemberLeft { hive: 7, left, left_memory: Some(M::Nps1), .. } if left == bdf(4)),
        "{error:?}"
    );
}

#[test]
fn a_hive_asked_for_two_memory_partitions_is_refused() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let mut wants = all(8, C::Cpx, M::Nps4);
    wants[7].1 = AmdWant::new(C::Spx, M::Nps1);
    let error = plan_amd(&cards(&read, &holders), &wants).unwrap_err();
    assert!(
        matches!(error, AmdRefusal::HiveSplit { hive: 7, .. }),
        "{error:?}"
    );
}

fn qemu(pid: u32) -> Holder {
    Holder::new(pid, "rocm-app", "/dev/dri/renderD128")
}

#[test]
fn a_process_on_any_gpu_blocks_a_reload_naming_it_and_only_its_gpu_blocks_a_compute_change() {
    let read = hive(C::Spx, M::Nps1);
    let mut holders = idle();
    holders[5] = vec![qemu(4242)];
    let error = plan_amd(&cards(&read, &holders), &all(8, C::Cpx, M::Nps4)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{} is in use: pid 4242 (rocm-app)", bdf(5))
    );
    // A compute change on GPUs 0 to 3 alone (no reload) leaves GPU 5 alone.
    let wants: Vec<(Bdf, AmdWant)> = all(4, C::Dpx, M::Nps1);
    assert_eq!(plan_amd(&cards(&read, &holders), &wants).unwrap().len(), 4);
}

/// What the plan's steps leave: each request holds after the reload, and the reload sets the
/// compute partition anew (SPX here, whatever it was: the plan must set it again).
fn carry_out(read: &mut [AmdPartitions], steps: &[AmdStep]) {
    for step in steps {
        let at = |device: Bdf| (0..read.len()).find(|i| bdf(*i) == device).unwrap();
        match *step {
            AmdStep::RequestMemory { device, mode } => read[at(device)].memory = Some(mode),
            AmdStep::ReloadDriver => read.iter_mut().for_each(|gpu| gpu.compute = C::Spx),
            AmdStep::SetCompute { device, mode } => read[at(device)].compute = mode,
            _ => unreachable!(),
        }
    }
    for gpu in read.iter_mut() {
        *gpu = mi300x(gpu.compute, gpu.memory.unwrap());
    }
}

proptest! {
    /// From any state of a hive, a layout the kernel takes plans requests, at most one reload,
    /// then compute partitions, in that order; carried out, planning it again is no step.
    #[test]
    fn a_plan_carried_out_leaves_nothing_to_do(
        start in prop::sample::select(vec![(C::Spx, M::Nps1), (C::Dpx, M::Nps2), (C::Cpx, M::Nps4), (C::Qpx, M::Nps1)]),
        want in prop::sample::select(vec![(C::Spx, M::Nps1), (C::Dpx, M::Nps2), (C::Cpx, M::Nps4), (C::Qpx, M::Nps4), (C::Cpx, M::Nps1)]),
    ) {
        let mut read = hive(start.0, start.1);
        let holders = idle();
        let wants = all(8, want.0, want.1);
        let steps = plan_amd(&cards(&read, &holders), &wants).unwrap();
        let kind = |s: &AmdStep| match s { AmdStep::RequestMemory { .. } => 0, AmdStep::ReloadDriver => 1, _ => 2 };
        prop_assert!(steps.windows(2).all(|pair| kind(&pair[0]) <= kind(&pair[1])));
        prop_assert!(steps.iter().filter(|s| **s == AmdStep::ReloadDriver).count() <= 1);
        carry_out(&mut read, &steps);
        prop_assert_eq!(plan_amd(&cards(&read, &holders), &wants).unwrap(), vec![]);
    }
}

/// The plan's steps carried out on the fake amdgpu, reading the GPUs again after the reload
/// and planning the rest from what they show, as an executor does.
fn apply_on_fake(
    amd: &mut host_sync::fake_amdgpu::FakeAmdgpu,
    sysfs: &host_sync::fake_sysfs::FakeSysfs,
    wants: &[(Bdf, AmdWant)],
) -> Vec<AmdStep> {
    let devices: Vec<Bdf> = amd
        .gpus
        .iter()
        .map(|gpu| gpu.bdf.parse().unwrap())
        .collect();
    let read_all = || -> Vec<(Bdf, AmdPartitions)> {
        devices
            .iter()
            .map(|device| {
                let read = gpu_host_probe::amdgpu::read_partitions(sysfs.root(), *device)
                    .unwrap()
                    .unwrap();
                (*device, read)
            })
            .collect()
    };
    let plan_now = |read: &[(Bdf, AmdPartitions)]| {
        let cards: Vec<AmdCard<'_>> = read
            .iter()
            .map(|(device, partitions)| AmdCard::unheld(*device, partitions))
            .collect();
        plan_amd(&cards, wants).unwrap()
    };
    let mut done = Vec::new();
    let mut steps = plan_now(&read_all());
    while let Some(step) = steps.first().copied() {
        match step {
            AmdStep::RequestMemory { device, mode } => {
                amd.write_memory(&device.to_string(), &format!("{mode}\n"))
                    .unwrap();
                steps.remove(0);
            }
            AmdStep::ReloadDriver => {
                amd.reload_driver().unwrap();
                // The reload set every compute partition anew: plan the rest again.
                steps = plan_now(&read_all());
            }
            AmdStep::SetCompute { device, mode } => {
                amd.write_compute(&device.to_string(), &format!("{mode}\n"))
                    .unwrap();
                steps.remove(0);
            }
            _ => unreachable!(),
        }
        done.push(step);
    }
    done
}

#[test]
fn cpx_nps4_carried_out_on_a_fake_hive_of_eight_reloads_once_and_holds_then_writes_nothing() {
    use host_sync::fake_amdgpu::{FakeAmdgpu, MI300X};
    let dir = tempfile::tempdir().unwrap();
    let sysfs = host_sync::fake_sysfs::FakeSysfs::new(dir.path()).unwrap();
    let mut amd = FakeAmdgpu::new(sysfs.clone());
    for index in 0..8 {
        amd.gpu(&bdf(index).to_string(), MI300X, M::Nps1, Some(7))
            .unwrap();
    }
    let wants = all(8, C::Cpx, M::Nps4);
    let done = apply_on_fake(&mut amd, &sysfs, &wants);
    assert_eq!(
        done.iter().filter(|s| **s == AmdStep::ReloadDriver).count(),
        1
    );
    // The reload's AUTO rule already gave NPS4 the CPX wanted: no compute write was needed.
    assert_eq!(done.len(), 9, "{done:?}");
    assert!(
        amd.gpus
            .iter()
            .all(|gpu| gpu.compute == Some(C::Cpx) && gpu.memory == M::Nps4)
    );
    assert_eq!(apply_on_fake(&mut amd, &sysfs, &wants), []);
    // QPX on the same memory partition: compute writes alone, no reload.
    let done = apply_on_fake(&mut amd, &sysfs, &all(8, C::Qpx, M::Nps4));
    assert!(
        done.iter()
            .all(|s| matches!(s, AmdStep::SetCompute { mode: C::Qpx, .. }))
    );
}

#[test]
fn a_request_for_another_mode_waiting_over_a_gpu_in_the_wanted_mode_is_refused_naming_it() {
    let (read, holders) = (hive(C::Spx, M::Nps1), idle());
    let mut with_request = cards(&read, &holders);
    with_request[2].requested = Some(M::Nps4);
    let error = plan_amd(&with_request, &all(8, C::Spx, M::Nps1)).unwrap_err();
    assert!(
        matches!(
            error,
            AmdRefusal::RequestPending {
                requested: M::Nps4,
                wanted: M::Nps1,
                ..
            }
        ),
        "{error:?}"
    );
    // A request for the mode wanted is the plan's own: it is made again, and the reload lands it.
    with_request[2].requested = Some(M::Nps4);
    let steps = plan_amd(&with_request, &all(8, C::Cpx, M::Nps4)).unwrap();
    assert!(steps.contains(&AmdStep::ReloadDriver));
}
