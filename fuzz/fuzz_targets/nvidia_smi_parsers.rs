//! Every `nvidia-smi` parser (and the driver's `information` file) on arbitrary bytes: never a
//! panic; a GPU is said reset only by a line that says so of it; NVLink links join only GPUs the
//! matrix lists, and a GPU's closure always holds the GPU itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warm_reset::nvidia::nvidia_smi;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = nvidia_smi::parse_bus_id(&text);
    let _ = nvidia_smi::parse_gpus(&text);
    let _ = nvidia_smi::parse_compute_apps(&text);
    let _ = nvidia_smi::device_minor(&text);
    let said = nvidia_smi::read_reset_output(&text);
    assert!(
        said.reset.is_empty() || text.contains("was successfully reset"),
        "reset without a line that says so"
    );
    if let Ok(links) = nvidia_smi::parse_nvlinks(&text) {
        for (a, b) in &links.links {
            assert!(a < b, "a link not smaller index first: {a}-{b}");
            assert!(links.gpus.contains(a) && links.gpus.contains(b), "a link to an unlisted GPU");
        }
        if let Some(first) = links.gpus.first() {
            assert!(links.closure(&[*first]).contains(first));
        }
    }
});
