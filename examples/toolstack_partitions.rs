//! A toolstack places VMs on partitions of one simulated H100 80GB, one partition at a time,
//! through `mig-layout`'s partition calls and `host-sync`'s rows:
//!
//! 1. MIG turned on with nothing carved (a layout applied once);
//! 2. three VMs each given a GPU instance (`partition::create` with the VM as owner), what
//!    still fits read after each (`layout_model::room::remaining`);
//! 3. the rows listed (`host_sync::partitions`): slot, placement, owner, the GPU's generation;
//! 4. a reboot of the fake (every instance gone, Hopper's MIG mode lost), the boot's restore
//!    (`mig_layout::restore`, once per boot), which brings each partition back at its
//!    placement with its owner, and the generation the toolstack sees before and after;
//! 5. a destroy asked by another VM refused, naming the owner; the owner's own destroy, which
//!    writes that partition's destroys only.
//!
//! The card is the fake NVML's (`fake-nvml`): the real helper binary runs against it. On a
//! real host the same code takes `HelperConfig::new("/usr/libexec/gpu-partition-helper")` and
//! `warm_reset::NvidiaSmiBackend`. vGPUs on the partitions are not created one at a time yet
//! (a GPU with vGPUs declared is refused, `vgpus_declared`).
//!
//! Run it with `cargo run -p examples --example toolstack-partitions`.

use fake_nvml::scenarios::H100_MIG_OFF;
use fake_nvml::support::ProcRoot;
use gpu_host_probe::helper::HelperConfig;
use gpu_partition_types::Bdf;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{FileStore, GpuPartitions};
use layout_model::room::{Geometry, remaining};
use layout_model::{Card, Owner, ProfileKey};
use mig_layout::partition::{CreatePartition, DestroyPartition, PartitionOutcome, Which};
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

/// The VMs and the GPU instance profile each is given.
const VMS: [(&str, &str); 3] = [
    ("vm-7f2a", "3g.40gb"),
    ("vm-91c3", "2g.20gb"),
    ("vm-c04e", "1g.10gb"),
];

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
            let placement = row
                .placement
                .map(|p| format!("{}+{}", p.start, p.size))
                .unwrap_or_default();
            println!(
                "    {} {} at {} (ordinal {}), {}, for {}",
                row.slot,
                row.profile,
                placement,
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

/// Each partition of the stored rows: slot, placement and owner, as a restore must bring back.
fn rows(state: &host_sync::HostState) -> Vec<String> {
    state
        .gpus
        .values()
        .filter_map(|record| record.division.as_ref())
        .flat_map(|division| &division.partitions)
        .map(|row| format!("{} {:?} {:?}", row.slot, row.placement, row.owner))
        .collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    sysfs.function(CARD, "0x10de", "0x2330", "0x030200", Some("nvidia"))?;
    let proc_root = ProcRoot::booted(
        work.path().join("proc"),
        "11111111-2222-3333-4444-555555555555",
    )?;
    let nvml = work.path().join("nvml");
    std::fs::create_dir_all(&nvml)?;
    let scenario = fake_nvml::support::scenario_of(&[(CARD, H100_MIG_OFF)])?;
    let (wrapper, nvml_state) =
        fake_nvml::support::stateful_helper_wrapper(&nvml, &scenario, None)?;
    let host = Host::new(work.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(proc_root.path());
    let helper = Helper::new(HelperConfig::new(wrapper));
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
        ApplyRun::new(&host, &helper, &mut store, reset),
        "mig-on",
        specs,
        &options,
    )?;
    println!("MIG on: {}", on.outcome);
    println!("  still fits: {}", still_fits(&host, &helper, device)?);

    // 2. A partition per VM, each for its VM.
    for (vm, profile) in VMS {
        let request = CreatePartition::new(
            device,
            ProfileKey::Name(profile.to_owned()),
            Owner::new(vm)?,
        );
        let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
        let done = mig_layout::partition::create(
            ApplyRun::new(&host, &helper, &mut store, reset),
            &request,
            &options,
        )?;
        let PartitionOutcome::Ran {
            report,
            row,
            generation,
        } = done
        else {
            return Err(format!("{vm}: {done:?}").into());
        };
        if report.outcome != ApplyOutcome::Done {
            return Err(format!("{vm}: {} {:?}", report.outcome, report.detail).into());
        }
        let row = row.ok_or("the created partition did not read back")?;
        println!(
            "create {profile} for {vm}: {} at {}, generation {}",
            row.slot,
            row.placement
                .map(|p| format!("{}+{}", p.start, p.size))
                .unwrap_or_default(),
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
        &fake_nvml::StateFile::new(&nvml_state),
        &proc_root,
        "99999999-2222-3333-4444-555555555555",
    )?;
    let reset = ResetWith::new(Method::Nvidia, &mut backend).clock(&*clock);
    let restored = mig_layout::restore(
        ApplyRun::new(&host, &helper, &mut store, reset),
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
        ApplyRun::new(&host, &helper, &mut store, reset),
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
        ApplyRun::new(&host, &helper, &mut store, reset),
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
        "vm-7f2a destroys its own: {} ({} write(s): its compute instance, then its GPU instance), generation {}",
        report.outcome,
        report.writes(),
        generation.map_or_else(|| "unknown".to_owned(), |g| g.to_string())
    );
    if report.writes() != 2 {
        return Err(format!(
            "the destroy wrote {} steps, not one partition's two",
            report.writes()
        )
        .into());
    }
    let state = store.load()?.ok_or("nothing stored")?;
    show(&host_sync::partitions(&state, &host.now()));
    Ok(())
}
