//! A toolstack enters GPU partitioning through `mig-layout`, on two simulated A100-SXM4-40GB
//! cards: it shows the plan as data, applies it (each card's pending mode change completed by
//! a warm reset), reads what the apply recorded back through its own store, and leaves.
//!
//! The cards are the fake NVML's (`fake-nvml`): the real helper binary runs against it, and
//! the reset is warm-reset's own nvidia method over the fake's state (`fake_nvml::backend`). On
//! a real host the same code takes `HelperConfig::new("/usr/libexec/gpu-partition-helper")`
//! and `warm_reset::NvidiaSmiBackend`.
//!
//! Run it with `cargo run -p examples --example partition-embedded`.

use fake_nvml::scenarios::A100_MIG_OFF;
use gpu_host_probe::helper::HelperConfig;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{HostState, StoreError};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyRun, Document, GpuWork, Helper, Host, Method, PlanLine, Pool,
    ResetWith, StateStore,
};
use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;

/// The toolstack's layout file, as mig-parted writes them.
const LAYOUTS: &str = r#"version: v1
mig-configs:
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
"#;

const CARDS: [&str; 2] = ["0000:3b:00.0", "0000:3c:00.0"];

/// The toolstack's own store: a key-value table (in memory here), one row per host.
#[derive(Debug, Default)]
struct Table {
    rows: BTreeMap<String, String>,
}

impl StateStore for Table {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        self.rows
            .get("host")
            .map(|row| {
                serde_json::from_str(row)
                    .map_err(|error| StoreError::backend("the host table's row", error))
            })
            .transpose()
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        let row = serde_json::to_string(state)
            .map_err(|error| StoreError::backend("the host table's row", error))?;
        self.rows.insert("host".to_owned(), row);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    // Two A100s bound to `nvidia`, as the host's sysfs shows them.
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    for card in CARDS {
        sysfs.function(card, "0x10de", "0x20b0", "0x030200", Some("nvidia"))?;
    }
    let proc_root = work.path().join("proc");
    std::fs::create_dir_all(proc_root.join("sys/kernel/random"))?;
    std::fs::write(
        proc_root.join("sys/kernel/random/boot_id"),
        "11111111-2222-3333-4444-555555555555\n",
    )?;
    let nvml = work.path().join("nvml");
    std::fs::create_dir_all(&nvml)?;
    let scenario =
        fake_nvml::support::scenario_of(&[(CARDS[0], A100_MIG_OFF), (CARDS[1], A100_MIG_OFF)])?;
    let (wrapper, nvml_state) =
        fake_nvml::support::stateful_helper_wrapper(&nvml, &scenario, None)?;

    // A built host: its machine lock is kept beside its tree, never among the machine's.
    let host = Host::new(work.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(&proc_root);
    let helper = Helper::new(HelperConfig::new(wrapper));
    let clock: Arc<dyn mig_layout::Clock> = Arc::new(gpu_host_probe::SystemClock::new());
    let mut backend = fake_nvml::backend(&nvml_state, clock.clone());
    let mut store = Table::default();
    let layouts = Document::from_text(LAYOUTS)?;
    let specs = layouts.label("all-1g.5gb").ok_or("no all-1g.5gb")?;

    // 1. The plan, as data: a dry run writes nothing.
    // `Some(specs)` applies the layout, `None` leaves MIG: the same arguments, in the same order.
    let mut run =
        |options: &ApplyOptions, specs: Option<&[mig_layout::Spec]>, store: &mut Table| {
            let reset = ResetWith::new(Method::Nvidia, &mut backend)
                .window(warm_reset::DEFAULT_WINDOW)
                .clock(&*clock);
            let run = ApplyRun::new(&host, &helper, store, reset);
            match specs {
                Some(specs) => mig_layout::apply(run, "all-1g.5gb", specs, options),
                None => mig_layout::leave(run, options),
            }
        };
    let planned = run(
        &ApplyOptions::new(Pool::Enabled).dry_run(true),
        Some(specs),
        &mut store,
    )?;
    for gpu in &planned.gpus {
        // What each GPU's side plans, by its vendor: every GPU here is NVIDIA's.
        let GpuWork::Nvidia(work) = &gpu.work else {
            continue;
        };
        let creates = work
            .plan
            .iter()
            .filter(|line| matches!(line, PlanLine::Create { .. }))
            .count();
        let mode = work
            .plan
            .iter()
            .any(|line| matches!(line, PlanLine::SetMode { enabled: true }));
        println!(
            "plan for {}: MIG on: {mode}, {creates} instance(s) to create",
            gpu.device
        );
        for line in &work.plan {
            println!("  {line}");
        }
    }

    // 2. The apply.
    let applied = run(&ApplyOptions::new(Pool::Enabled), Some(specs), &mut store)?;
    println!(
        "apply all-1g.5gb: {} ({} write(s), {} reset(s))",
        applied.outcome,
        applied.writes(),
        applied.resets.len()
    );
    if applied.outcome != ApplyOutcome::Done {
        return Err(format!("the apply ended {}: {:?}", applied.outcome, applied.detail).into());
    }

    // 3. What the apply recorded, read back through the toolstack's own store.
    let state = store.load()?.ok_or("nothing stored")?;
    let layout = state.layout.as_ref().ok_or("no layout record")?;
    println!(
        "stored: host {} ({}), layout {} {}",
        state.status, state.reason, layout.label, layout.outcome
    );
    if let Some(declared) = &state.declared {
        for (bdf, gpu) in &declared.gpus {
            // Every GPU of this example is NVIDIA's: a declared AMD GPU has partitions instead.
            let Some(gpu) = gpu.nvidia() else {
                continue;
            };
            let counts: Vec<String> = gpu
                .profiles
                .iter()
                .map(|entry| format!("{} x {}", entry.count, entry.profile))
                .collect();
            println!(
                "  declared {bdf}: MIG {}, {}",
                if gpu.mig_enabled { "on" } else { "off" },
                counts.join(", ")
            );
        }
    }

    // 4. Leaving partitioning: MIG off on every card, a reset each.
    let left = run(&ApplyOptions::new(Pool::Enabled), None, &mut store)?;
    println!("leave: {} ({} reset(s))", left.outcome, left.resets.len());
    let state = store.load()?.ok_or("nothing stored")?;
    println!("stored: host {} ({})", state.status, state.reason);
    Ok(())
}
