//! Any text into the vGPU readers — NVIDIA's per-VF sysfs files (`creatable_vgpu_types`,
//! `current_vgpu_type`), vGPU type names, vgpu-device-manager's config documents: never a
//! panic; an accepted list, written back in the driver's format, reads the same; an accepted
//! type name writes back as itself; a refused document names a line within the text; an
//! accepted one derives its MIG layout without a panic.
#![no_main]

#[path = "document_error.rs"]
mod document_error;

use host_sync::sriov::{parse_creatable_vgpu_types, parse_current_vgpu_type};
use libfuzzer_sys::fuzz_target;
use mig_layout::vgpu::{VgpuDocument, VgpuTypeName};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let at = Path::new("creatable_vgpu_types");
    if let Ok(types) = parse_creatable_vgpu_types(text, at) {
        let mut written = String::from("ID    : vGPU Name\n");
        for t in &types {
            written.push_str(&format!("{:<5} : {}\n", t.id, t.name));
        }
        let again = parse_creatable_vgpu_types(&written, at)
            .unwrap_or_else(|e| panic!("written list refused: {e}\n{written}"));
        assert_eq!(again, types);
    }
    let _ = parse_current_vgpu_type(text, Path::new("current_vgpu_type"));
    if let Ok(name) = text.parse::<VgpuTypeName>() {
        assert_eq!(name.to_string(), text);
        if let Some(profile) = name.mig_profile() {
            assert!(profile.contains("g.") && profile.contains("gb"), "{profile}");
        }
    }
    match VgpuDocument::from_text(text) {
        Ok(document) => {
            for (_, specs) in &document.configs {
                for spec in specs {
                    let _ = spec.mig_layout(|_| Some(1));
                }
            }
        }
        Err(error) => {
            document_error::check(text, error.line, &error);
        }
    }
});
