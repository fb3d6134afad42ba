//! Drives the warm-reset machine with the simulated MetaX host on a virtual clock and prints
//! each transition with the (virtual) time.
//!
//! ```text
//! cargo run -p examples --example reset-simulated -- [SCENARIO] [ID]
//! ```

use gpu_host_probe::VirtualClock;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::sim::{METAX_SCENARIOS, SimMetax};
use warm_reset::{Host, MachineConfig, ResetRun, ResetTarget, State, execute};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_else(|| "ok".to_owned());
    let target: ResetTarget = args.next().as_deref().unwrap_or("1").parse()?;
    let clock = VirtualClock::new(0);
    let Some(mut sim) = SimMetax::scenario(&scenario, Arc::new(clock.clone())) else {
        let names: Vec<&str> = METAX_SCENARIOS
            .iter()
            .map(|scenario| scenario.name)
            .collect();
        return Err(format!(
            "unknown scenario {scenario:?}; try one of {}",
            names.join(", ")
        )
        .into());
    };
    let state_dir = tempfile::tempdir()?;
    let host = Host::new(state_dir.path());
    let mut last = "";
    let mut show = |state: &State, now: Duration| {
        if state.name() != last {
            println!(
                "{:>6.1}s  {last:<26} -> {}",
                now.as_secs_f64(),
                state.name()
            );
            last = state.name();
        }
    };
    let config = MachineConfig::new(target);
    let report = execute(
        ResetRun::new(&config, &host, &mut sim)
            .clock(&clock)
            .observe(&mut show),
    )?;
    println!("outcome: {}  ({})", report.outcome, report.detail);
    println!("mx-smi -r calls: {:?}", sim.host().resets);
    Ok(())
}
