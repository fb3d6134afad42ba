//! A toolstack places VMs on partitions of one simulated H100 80GB with SR-IOV (20 VFs), one
//! partition at a time, through `mig-layout`'s partition calls and `host-sync`'s rows:
//!
//! 1. MIG turned on with nothing carved (a layout applied once);
//! 2. three VMs each given a partition (`partition::create` with the VM as owner): two
//!    MIG-backed vGPUs (each a GPU instance made for it, then its type on a VF; the VFs are
//!    enabled by the first, while the card holds no GPU instance) and one GPU instance; what
//!    still fits read after each (`layout_model::room::remaining`);
//! 3. the rows listed (`host_sync::partitions`): slot, placement, owner, the GPU's generation;
//! 4. a reboot of the fake (every instance and VF gone, Hopper's MIG mode lost), the boot's
//!    restore (`mig_layout::restore`, once per boot), which brings each partition back at its
//!    placement with its owner, each vGPU on its VF, and the generation the toolstack sees
//!    before and after;
//! 5. a destroy asked by another VM refused, naming the owner; the owner's own destroy, which
//!    writes that partition's only: its vGPU's type cleared, its compute instance and its GPU
//!    instance destroyed.
//!
//! The card is the fake NVML's (`fake-nvml`): the real helper binary runs against it. On a
//! real host the same code takes `HelperConfig::new("/usr/libexec/gpu-partition-helper")` and
//! `warm_reset::NvidiaSmiBackend`, and `VgpuWith::default()` for NVIDIA's `sriov-manage` and
//! the kernel's VF files.
//!
//! Run it with `cargo run -p examples --example toolstack-partitions`.

use fake_nvml::scenarios::PART_H100_80GB;
use fake_nvml::support::ProcRoot;
use gpu_host_probe::helper::HelperConfig;
use gpu_partition_types::Bdf;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{FileStore, GpuPartitions};
use layout_model::partition::{Partition, Slot};
use layout_model::room::{Geometry, remaining};
use layout_model::{Card, Owner, ProfileKey};
use mig_layout::partition::{CreatePartition, DestroyPartition, PartitionOutcome, Which};
use mig_layout::vgpu::{SriovManage, VgpuWith};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyRun, Document, Helper, Host, Method, Pool, ResetWith, Restore,
    StateStore,
};
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

const CARD: &str = "0000:3b:00.0";

/// MIG on, nothing carved: the GPU is the toolstack's to divide one partition at a time.
const MIG_ON: &str = "version: v1\nmig-configs:\n  mig-on:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {}\n";

/// The VMs and what each is given: a MIG-backed vGPU type, or a GPU instance profile.
const VMS: [(&str, Given); 3] = [
    ("vm-7f2a", Given::Vgpu("H100XM-3-40C")),
    ("vm-91c3", Given::Vgpu("H100XM-2-20C")),
    ("vm-c04e", Given::Instance("1g.10gb")),
];

/// What a VM is given.
#[derive(Clone, Copy)]
enum Given {
    /// A MIG-backed vGPU of this type.
    Vgpu(&'static str),
    /// A GPU instance of this profile.
    Instance(&'static str),
}

/// What still fits on the card now, as a toolstack's "remaining partition profiles": each
/// profile with how many more fit, where more than none do.
fn still_fits(host: &Host, helper: &Helper, device: Bdf) -> Result<String, Box<dyn Error>> {
    let lock = host.lock(Duration::from_secs(10))?;
    let format = helper
        .negotiate()
        .map_err(|refused| refused.failure.to_string())?;
    let read = helper
        .read_all(&lock, &[device], format)
        .into_iter()
        .next()
        .ok_or("no read")?;
    let reply = read.into_reply().map_err(|failure| failure.to_string())?;
    let card = Card::of(&reply)?;
    let rooms = remaining(&Geometry::of(&card), &[])?;
    let fits: Vec<String> = rooms
        .iter()
        .filter_map(|room| {
            let fits = room.fits.as_ref()?;
            (fits.more > 0).then(|| format!("{} x{}", room.profile, fits.more))
        })
        .collect();
    Ok(if fits.is_empty() {
        "nothing".to_owned()
    } else {
        fits.join(", ")
    })
}

/// Where a row is: its slot, and a GPU instance's placement or the GPU instance a vGPU sits on.
fn at(row: &Partition) -> String {
    let placement = row
        .placement
        .map(|p| format!(" at {}+{}", p.start, p.size))
        .unwrap_or_default();
    let on = row
        .on
        .map(|id| format!(" on GPU instance {id}"))
        .unwrap_or_default();
    format!("{}{placement}{on}", row.slot)
}

/// The rows of the host's GPUs, as a toolstack lists them.
fn show(listed: &[GpuPartitions]) -> Option<u64> {
    let mut generation = None;
    for gpu in listed {
        let division = gpu.division.as_ref();
        generation = division.map(|division| division.generation);
        println!(
            "  {}: generation {}, {}",
            gpu.gpu,
            generation.map_or_else(|| "unknown".to_owned(), |g| g.to_string()),
            gpu.because()
                .map_or_else(|| "current".to_owned(), |why| format!("stale ({why})"))
        );
        for row in division.iter().flat_map(|division| &division.partitions) {
            println!(
                "    {} {} (ordinal {}), {}, for {}",
                at(row),
                row.profile,
                row.ordinal,
                row.origin,
                row.owner
                    .as_ref()
                    .map_or_else(|| "nobody".to_owned(), ToString::to_string)
            );
        }
    }
    generation
}

/// Each partition of the stored rows as a restore must bring it back: its profile, placement,
/// ordinal and owner, and a vGPU's VF (a GPU instance's ID is the driver's to give; a toolstack
/// binds by placement and ordinal).
fn rows(state: &host_sync::HostState) -> Vec<String> {
    state
        .gpus
        .values()
        .filter_map(|record| record.division.as_ref())
        .flat_map(|division| &division.partitions)
        .map(|row| {
            let vf = match row.slot {
                Slot::Vf { index } => format!("VF {index} "),
                _ => String::new(),
            };
            format!(
                "{vf}{} {:?} #{} {:?}",
                row.profile, row.placement, row.ordinal, row.owner
            )
        })
        .collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    sysfs
        .function(CARD, "0x10de", "0x2330", "0x030200", Some("nvidia"))?
        .sriov(CARD, 20)?;
    let proc_root = ProcRoot::booted(
        work.path().join("proc"),
        "11111111-2222-3333-4444-555555555555",
    )?;
    let nvml = work.path().join("nvml");
    std::fs::create_dir_all(&nvml)?;
    // NVIDIA's published H100 80GB (MIG off), with 20 VFs: what its catalogue's smallest type
    // allows (H100XM-4C: 20); no capture of an H100's `sriov_totalvfs` is in our sources.
    let mut scenario: serde_json::Value =
        serde_json::from_str(&fake_nvml::support::scenario_of(&[(CARD, PART_H100_80GB)])?)?;
    scenario["devices"][0]["sriov"] = serde_json::json!({"total_vfs": 20});
    let fake = fake_nvml::support::vgpu_host(&nvml, &scenario.to_string(), None, sysfs.root())?;
    let nvml_state = fake.state.path().to_path_buf();
    let host = Host::new(work.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(proc_root.path());
    let helper = Helper::new(HelperConfig::new(fake.helper.clone()));
    // The fake's writers of VFs, made for this host (a real host: `VgpuWith::default()`).
    let vgpu = || VgpuWith {
        sriov_manage: SriovManage::at(fake.sriov_manage.clone()),
        types: &fake.types,
    };
    let clock: Arc<dyn mig_layout::Clock> = Arc::new(gpu_host_probe::SystemClock::new());
    let mut backend = fake_nvml::backend(&nvml_state, clock.clone());
    let mut store = FileStore::new(host.state_dir());
    let device: Bdf = CARD.parse()?;
    let options = ApplyOptions::new(Pool::Enabled);

    // 1. MIG on, nothing carved.
    let layouts = Document::from_text(MIG_ON)?;
    let specs = layouts.label("mig-on").ok_or("no mig-on")?;
    let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
    let on = mig_layout::apply(
        ApplyRun::new(&host, &helper, &mut store, reset).vgpu(vgpu()),
        "mig-on",
        specs,
        &options,
    )?;
    println!("MIG on: {}", on.outcome);
    println!("  still fits: {}", still_fits(&host, &helper, device)?);

    // 2. A partition per VM, each for its VM.
    for (vm, given) in VMS {
        let (request, what) = match given {
            Given::Vgpu(name) => (
                CreatePartition::vgpu(device, name.parse()?, Owner::new(vm)?),
                format!("vGPU {name}"),
            ),
            Given::Instance(profile) => (
                CreatePartition::new(
                    device,
                    ProfileKey::Name(profile.to_owned()),
                    Owner::new(vm)?,
                ),
                format!("GPU instance {profile}"),
            ),
        };
        let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
        let done = mig_layout::partition::create(
            ApplyRun::new(&host, &helper, &mut store, reset).vgpu(vgpu()),
            &request,
            &options,
        )?;
        let PartitionOutcome::Ran {
            report,
            row,
            generation,
            ..
        } = done
        else {
            return Err(format!("{vm}: {done:?}").into());
        };
        if report.outcome != ApplyOutcome::Done {
            return Err(format!("{vm}: {} {:?}", report.outcome, report.detail).into());
        }
        let row = row.ok_or("the created partition did not read back")?;
        println!(
            "create a {what} for {vm}: {}, generation {}",
            at(&row),
            generation.map_or_else(|| "unknown".to_owned(), |g| g.to_string())
        );
        println!("  still fits: {}", still_fits(&host, &helper, device)?);
    }

    // 3. The rows.
    println!("partitions:");
    let before_state = store.load()?.ok_or("nothing stored")?;
    let before = show(&host_sync::partitions(&before_state, &host.now()));

    // 4. A reboot; the boot's restore, then the sync the boot runs after it.
    fake_nvml::support::reboot(
        &fake.state,
        &proc_root,
        "99999999-2222-3333-4444-555555555555",
    )?;
    let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
    let restored = mig_layout::restore(
        ApplyRun::new(&host, &helper, &mut store, reset).vgpu(vgpu()),
        &ApplyOptions::new(Pool::Enabled).once_per_boot(true),
    )?;
    let Restore::Ran(report) = restored else {
        return Err(format!("the boot restore did not run: {restored:?}").into());
    };
    println!("after a reboot, the boot restore: {}", report.outcome);
    if report.outcome != ApplyOutcome::Done {
        return Err(format!(
            "the boot restore ended {}: {:?}",
            report.outcome, report.detail
        )
        .into());
    }
    let state = store.load()?.ok_or("nothing stored")?;
    let rows_before = rows(&before_state);
    let after = show(&host_sync::partitions(&state, &host.now()));
    if rows(&state) != rows_before {
        return Err(
            "the restore did not bring each partition back at its placement with its owner".into(),
        );
    }
    if after <= before {
        return Err(format!("the generation did not move: {before:?} then {after:?}").into());
    }
    println!(
        "generation before the reboot {}, after the restore {}: a binding recorded before is not honoured as is",
        before.unwrap_or_default(),
        after.unwrap_or_default()
    );

    // 5. vm-91c3 asks to destroy vm-7f2a's partition: refused, naming the owner; then vm-7f2a
    //    destroys its own.
    let theirs = DestroyPartition::new(
        device,
        Which::OwnedBy(Owner::new("vm-7f2a")?),
        Some(Owner::new("vm-91c3")?),
    );
    let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
    match mig_layout::partition::destroy(
        ApplyRun::new(&host, &helper, &mut store, reset).vgpu(vgpu()),
        &theirs,
        &options,
    )? {
        PartitionOutcome::Refused(refused) => {
            println!(
                "vm-91c3 destroys vm-7f2a's: refused ({}): {refused}",
                refused.kind()
            );
        }
        ran => return Err(format!("a destroy by another owner went through: {ran:?}").into()),
    }
    let own = DestroyPartition::new(
        device,
        Which::OwnedBy(Owner::new("vm-7f2a")?),
        Some(Owner::new("vm-7f2a")?),
    );
    let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
    let done = mig_layout::partition::destroy(
        ApplyRun::new(&host, &helper, &mut store, reset).vgpu(vgpu()),
        &own,
        &options,
    )?;
    let PartitionOutcome::Ran {
        report, generation, ..
    } = done
    else {
        return Err(format!("vm-7f2a's destroy: {done:?}").into());
    };
    println!(
        "vm-7f2a destroys its own: {} ({} write(s): its vGPU's type cleared, its compute instance, then its GPU instance), generation {}",
        report.outcome,
        report.writes(),
        generation.map_or_else(|| "unknown".to_owned(), |g| g.to_string())
    );
    if report.writes() != 3 {
        return Err(format!(
            "the destroy wrote {} steps, not one partition's three",
            report.writes()
        )
        .into());
    }
    let state = store.load()?.ok_or("nothing stored")?;
    show(&host_sync::partitions(&state, &host.now()));
    Ok(())
}
