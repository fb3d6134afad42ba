//! A toolstack divides a host's AMD Instinct GPUs through `mig-layout`, on eight simulated
//! MI300X GPUs in one XGMI hive: it shows the plan as data, applies a ROCm Device Config
//! Manager profile (CPX with NPS4: eight memory requests, one driver reload for the hive, the
//! compute partitions the reload sets), asserts it, reads each GPU's partitions back from
//! sysfs, and leaves partitioning (SPX with NPS1) — the same calls, with the same arguments in
//! the same order, as the MIG and vGPU examples make.
//!
//! The GPUs are the fake amdgpu's (`host_sync::fake_amdgpu`), which renders them into the
//! host's own test sysfs tree and carries the writes (the kernel's rules, in one process); the
//! fake comes with the host it belongs to and is handed to the run. On a real host the same
//! code takes `AmdWith::default()` (the kernel's files under `/sys` and `/sbin/modprobe`) and a
//! `Host` over the machine's roots; a run on a test tree given no writers is refused before
//! any write.
//!
//! Run it with `cargo run -p examples --example amd-embedded`.

use gpu_host_probe::amdgpu::{MemoryPartition, read_partitions};
use gpu_host_probe::helper::HelperConfig;
use host_sync::MemoryStore;
use host_sync::fake_amdgpu::{FakeAmdgpu, MI300X, SharedAmdgpu};
use host_sync::fake_sysfs::FakeSysfs;
use mig_layout::amd::{AmdWith, DcmDocument, apply_amd, assert_amd, leave_amd};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyRun, AssertRun, GpuWork, Helper, Host, Method, Pool, ResetWith,
};
use std::error::Error;

/// The toolstack's Device Config Manager file, as DCM reads it.
const DCM: &str = r#"{
  "gpu-config-profiles": {
    "cpx-nps4": {
      "skippedGPUs": {"ids": []},
      "profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]
    }
  },
  "gpuClientSystemdServices": {"names": ["amd-metrics-exporter"]}
}"#;

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    // Eight MI300X in one hive, in NPS1 (SPX, as a driver load in NPS1 sets), rendered into
    // the host's sysfs tree.
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    let mut fake = FakeAmdgpu::new(sysfs.clone());
    let gpus: Vec<String> = (0..8)
        .map(|index| format!("0000:{:02x}:00.0", 0x05 + index * 0x10))
        .collect();
    for bdf in &gpus {
        fake.gpu(bdf, MI300X, MemoryPartition::Nps1, Some(42))?;
    }
    let fake = SharedAmdgpu::new(fake);
    let boot = work.path().join("proc/sys/kernel/random");
    std::fs::create_dir_all(&boot)?;
    std::fs::write(
        boot.join("boot_id"),
        "11111111-2222-3333-4444-555555555555\n",
    )?;

    let host = Host::new(work.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(work.path().join("proc"));
    // An AMD host runs no helper; the run names one all the same, as every vendor's does.
    let helper = Helper::new(HelperConfig::new(work.path().join("no-helper")));
    let mut store = MemoryStore::default();
    let document = DcmDocument::from_text(DCM)?;
    let profile = document.profile("cpx-nps4").ok_or("no cpx-nps4")?;
    // `Some(profile)` applies it, `None` leaves partitioning: the same arguments, in order.
    let run = |options: &ApplyOptions,
               profile: Option<&mig_layout::amd::DcmProfile>,
               store: &mut MemoryStore| {
        // A warm reset is NVIDIA's: an AMD run never starts one, so the PCI method's backend
        // over the host's own roots stands in.
        let mut backend = warm_reset::SysfsBackend::of(warm_reset::pci::SysfsHost::new(
            host.sysfs_root(),
            host.proc_root(),
            work.path().join("kmsg"),
        ));
        let reset = ResetWith::new(Method::Pci, &mut backend);
        let with = AmdWith {
            writes: Some(&fake),
            client_services: document.client_services.clone(),
            ..AmdWith::default()
        };
        let run = ApplyRun::new(&host, &helper, store, reset).amd(with);
        match profile {
            Some(profile) => apply_amd(run, "cpx-nps4", profile, options),
            None => leave_amd(run, options),
        }
    };

    // 1. The plan, as data: a dry run writes nothing.
    let planned = run(
        &ApplyOptions::new(Pool::Enabled).dry_run(true),
        Some(profile),
        &mut store,
    )?;
    println!("driver reload planned: {}", planned.reload_planned);
    for gpu in &planned.gpus {
        if let GpuWork::Amd(work) = &gpu.work {
            let steps: Vec<String> = work.plan.iter().map(ToString::to_string).collect();
            println!("plan for {}: {}", gpu.device, steps.join("; "));
        }
    }

    // 2. The apply.
    let applied = run(&ApplyOptions::new(Pool::Enabled), Some(profile), &mut store)?;
    println!(
        "apply cpx-nps4: {} ({} write(s), {} driver reload(s))",
        applied.outcome,
        applied.writes(),
        applied.reloads
    );
    if applied.outcome != ApplyOutcome::Done {
        return Err(format!("the apply ended {}: {:?}", applied.outcome, applied.detail).into());
    }

    // 3. The assert: the same arguments as a MIG or vGPU assert.
    let options = ApplyOptions::new(Pool::Enabled);
    let asserted = assert_amd(
        AssertRun::new(&host, &helper, &mut store),
        "cpx-nps4",
        profile,
        &options,
    )?;
    println!("assert cpx-nps4: {}", asserted.outcome.as_str());
    if asserted.outcome != mig_layout::AssertOutcome::Applied {
        return Err(format!("the assert says {:?}", asserted.gpus).into());
    }

    // 4. What the toolstack gives its VMs: each GPU's partitions, as sysfs says.
    for bdf in &gpus {
        if let Some(read) = read_partitions(host.sysfs_root(), bdf.parse()?)? {
            let memory = read
                .memory
                .map_or_else(|| "no memory partition".to_owned(), |m| m.to_string());
            println!("  {bdf}: {} with {memory}", read.compute);
        }
    }

    // 5. Leaving partitioning: SPX with NPS1 on every GPU, one reload.
    let left = run(&ApplyOptions::new(Pool::Enabled), None, &mut store)?;
    println!(
        "leave: {} ({} driver reload(s))",
        left.outcome, left.reloads
    );
    if left.outcome != ApplyOutcome::Done {
        return Err(format!("the leave ended {}: {:?}", left.outcome, left.detail).into());
    }
    Ok(())
}
