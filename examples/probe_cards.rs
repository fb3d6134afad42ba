//! Probes a list of cards with a given helper and prints each outcome.
//!
//! ```text
//! cargo run -p examples --example probe-cards -- HELPER BDF [BDF…]
//! ```

use gpu_host_probe::helper::{Helper, HelperConfig};
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
    // The helper runs with a cleared environment, a 5 s deadline and 8 cards at once.
    let helper = Helper::new(HelperConfig::new(helper).deadline(Duration::from_secs(5)));
    for read in helper.probe(&cards) {
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
    }
    Ok(())
}
