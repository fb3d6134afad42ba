//! Any text into the AMD readers — amdgpu's partition files, Device Config Manager's config
//! documents, `amd-smi list`: never a panic; an accepted list of modes, written back as the
//! kernel writes it, reads the same; an accepted mode writes back as its token; a refused
//! document names a line within the text; a profile of an accepted document is assigned to
//! each host size without a panic, and fits it or is refused with at least one fault.
#![no_main]

#[path = "document_error.rs"]
mod document_error;

use gpu_host_probe::amdgpu::{
    parse_available_compute, parse_available_memory, parse_current_compute, parse_current_memory,
};
use libfuzzer_sys::fuzz_target;
use mig_layout::amd::DcmDocument;
use std::path::Path;

/// The kernel's list: names joined by `", "`, a newline; `Not supported` for none.
fn written<T: std::fmt::Display>(modes: &[T]) -> String {
    if modes.is_empty() {
        return "Not supported\n".to_owned();
    }
    let names: Vec<String> = modes.iter().map(ToString::to_string).collect();
    format!("{}\n", names.join(", "))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let at = Path::new("partition file");
    if let Ok(mode) = parse_current_compute(at, text) {
        assert_eq!(format!("{mode}\n"), text);
    }
    if let Ok(mode) = parse_current_memory(at, text) {
        assert_eq!(format!("{mode}\n"), text);
    }
    if let Ok(modes) = parse_available_compute(at, text) {
        let again = written(&modes);
        assert_eq!(parse_available_compute(at, &again).ok(), Some(modes));
    }
    if let Ok(modes) = parse_available_memory(at, text) {
        let again = written(&modes);
        assert_eq!(parse_available_memory(at, &again).ok(), Some(modes));
    }
    let _ = warm_reset::amd::amd_smi::parse_list(text);
    match DcmDocument::from_text(text) {
        Ok(document) => {
            for profile in &document.profiles {
                for host in 0..=16 {
                    match profile.assign(host) {
                        Ok(assigned) => assert_eq!(assigned.len(), host),
                        Err(error) => assert!(!error.faults.is_empty(), "{error}"),
                    }
                }
            }
        }
        Err(error) => {
            document_error::check(text, error.line, &error);
        }
    }
});
