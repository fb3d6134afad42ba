//! A toolstack makes a host a vGPU host through `mig-layout`, on a simulated A100-PCIE-40GB
//! with 16 SR-IOV virtual functions: it shows the plan in the driver's order, applies a
//! vgpu-device-manager config (`A100-1-5C: 7`: MIG on and its reset, `sriov-manage -e`, seven
//! GPU instances, a type on seven VFs), finds the VFs it will give its VMs, and leaves vGPU.
//!
//! The card, `sriov-manage` and the driver's side of each VF's type write are the fake's
//! (`fake_nvml::support::vgpu_host`): the real helper binary runs against the fake NVML, the
//! fake `sriov-manage` is a real process. On a real host the same code takes
//! `VgpuWith::default()` (NVIDIA's `/usr/lib/nvidia/sriov-manage` and the kernel's sysfs files),
//! `HelperConfig::new("/usr/libexec/gpu-partition-helper")` and `warm_reset::NvidiaSmiBackend`.
//!
//! Run it with `cargo run -p examples --example vgpu-embedded`.

use fake_nvml::scenarios::PART_A100_PCIE_40GB;
use gpu_host_probe::helper::HelperConfig;
use host_sync::MemoryStore;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::sriov::read_sriov;
use mig_layout::vgpu::{SriovManage, VgpuDocument, VgpuWith, apply_vgpu, leave_vgpu};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyRun, GpuWork, Helper, Host, Method, Pool, ResetWith,
};
use std::error::Error;
use std::sync::Arc;

/// The toolstack's config file, as vgpu-device-manager reads them.
const CONFIGS: &str = "version: v1
vgpu-configs:
  A100-1-5C:
    - devices: all
      vgpu-devices:
        A100-1-5C: 7
";

const CARD: &str = "0000:3b:00.0";

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    // The A100 bound to `nvidia`, SR-IOV capable, as the host's sysfs shows it.
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    sysfs
        .function(CARD, "0x10de", "0x20f1", "0x030200", Some("nvidia"))?
        .sriov(CARD, 16)?;
    let proc_root = fake_nvml::support::ProcRoot::booted(
        work.path().join("proc"),
        "11111111-2222-3333-4444-555555555555",
    )?;
    let nvml = work.path().join("nvml");
    std::fs::create_dir_all(&nvml)?;
    let fake = fake_nvml::support::vgpu_host(&nvml, PART_A100_PCIE_40GB, None, sysfs.root())?;

    let host = Host::new(work.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(proc_root.path());
    let helper = Helper::new(HelperConfig::new(fake.helper.clone()));
    let clock: Arc<dyn mig_layout::Clock> = Arc::new(gpu_host_probe::SystemClock::new());
    let mut backend = fake_nvml::backend(fake.state.path(), clock.clone());
    let mut store = MemoryStore::default();
    let document = VgpuDocument::from_text(CONFIGS)?;
    let specs = document.config("A100-1-5C").ok_or("no A100-1-5C")?;
    let mut run = |options: &ApplyOptions, apply: bool, store: &mut MemoryStore| {
        let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
        let with = VgpuWith {
            sriov_manage: SriovManage::at(fake.sriov_manage.clone()),
            types: &fake.types,
        };
        let run = ApplyRun::new(&host, &helper, store, reset).vgpu(with);
        if apply {
            apply_vgpu(run, "A100-1-5C", specs, options)
        } else {
            leave_vgpu(run, options)
        }
    };

    // 1. The plan in the driver's order, as data: a dry run writes nothing.
    let planned = run(
        &ApplyOptions::new(Pool::Enabled).dry_run(true),
        true,
        &mut store,
    )?;
    for gpu in &planned.gpus {
        println!("plan for {}:", gpu.device);
        if let GpuWork::Nvidia(work) = &gpu.work {
            for step in &work.vgpu_plan {
                println!("  {step}");
            }
        }
    }

    // 2. The apply.
    let applied = run(&ApplyOptions::new(Pool::Enabled), true, &mut store)?;
    println!(
        "apply A100-1-5C: {} ({} write(s), {} reset(s))",
        applied.outcome,
        applied.writes(),
        applied.resets.len()
    );
    if applied.outcome != ApplyOutcome::Done {
        return Err(format!("the apply ended {}: {:?}", applied.outcome, applied.detail).into());
    }

    // 3. The VFs the toolstack gives its VMs: each with its type, as sysfs says.
    let sriov = read_sriov(host.sysfs_root(), CARD.parse()?)?.ok_or("no SR-IOV")?;
    for vf in &sriov.vfs {
        if let Some(vgpu) = vf.vgpu.as_ref().filter(|vgpu| vgpu.current_type.is_some()) {
            let id = vgpu.current_type.map(|id| id.0.get()).unwrap_or_default();
            let on = vgpu.gpu_instance_id.map_or_else(
                || "no GPU instance".to_owned(),
                |gi| format!("GPU instance {gi}"),
            );
            println!("  virtfn{} {}: vGPU type {id} on {on}", vf.index, vf.bdf);
        }
    }

    // 4. Again: the card holds the config, nothing is written.
    let again = run(&ApplyOptions::new(Pool::Enabled), true, &mut store)?;
    println!(
        "apply again: {} ({} write(s))",
        again.outcome,
        again.writes()
    );

    // 5. Leaving vGPU: sriov-manage -d first, then MIG off.
    let left = run(&ApplyOptions::new(Pool::Enabled), false, &mut store)?;
    println!("leave: {} ({} reset(s))", left.outcome, left.resets.len());
    Ok(())
}
