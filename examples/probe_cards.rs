//! Probes a list of cards with a given helper and prints each outcome, with the why of each
//! failed read.
//!
//! ```text
//! cargo run -p examples --example probe-cards -- HELPER BDF [BDF…]
//! ```

use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::{DEFAULT_LOCK_WAIT, Host};
use gpu_partition_types::Bdf;
use std::error::Error;
use std::time::Duration;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let helper = args.next().ok_or("usage: probe-cards HELPER BDF [BDF…]")?;
    let cards = args
        .map(|text| text.parse::<Bdf>())
        .collect::<Result<Vec<_>, _>>()?;
    if cards.is_empty() {
        return Err("name at least one card (dddd:bb:dd.f)".into());
    }
    // The cards are read under the host lock of a state directory (here a temporary one; a
    // toolstack gives its own), so never inside a warm reset's window.
    let state = tempfile::tempdir()?;
    let host = Host::new(state.path());
    // The helper runs with a cleared environment, a 5 s deadline and 8 cards at once.
    let helper = Helper::new(HelperConfig::new(helper).deadline(Duration::from_secs(5)));
    for read in helper.probe(&host, &cards, DEFAULT_LOCK_WAIT)? {
        let reason = read
            .outcome
            .reason()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        println!(
            "{}  {}  {}{reason}  in {} ms, {} member(s) lost",
            read.device,
            read.outcome.case(),
            read.outcome.partition_mode(),
            read.elapsed.as_millis(),
            read.lost.len()
        );
        if let Some(why) = &read.message {
            println!("  why: {why}");
        }
    }
    Ok(())
}
