//! Every `mx-smi` parser on arbitrary bytes: never a panic, and never "idle" from text that does
//! not say `no process found`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warm_reset::metax::mx_smi;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = mx_smi::is_metax(&text);
    let _ = mx_smi::parse_header(&text).map(|versions| mx_smi::check_versions(&versions));
    let _ = mx_smi::parse_listing(&text);
    let _ = mx_smi::parse_topology(&text);
    let _ = mx_smi::reset_failure(&text);
    if let Ok(processes) = mx_smi::parse_processes(&text) {
        assert!(
            !processes.is_empty() || text.to_ascii_lowercase().contains("no process found"),
            "idle without `no process found`"
        );
    }
});
