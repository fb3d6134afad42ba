//! Any text into the layout reader (YAML, and JSON read as the YAML it is): never a panic;
//! every refusal names its line, within the text (a refusal of the whole text, its size, names
//! none); an accepted document writes YAML and JSON that read back to the same layouts.
#![no_main]

#[path = "document_error.rs"]
mod document_error;

use libfuzzer_sys::fuzz_target;
use mig_layout::{Document, to_json, to_yaml};

/// What a document says, without where it was (JSON objects have no order: labels and
/// profiles sorted).
fn said(doc: &Document) -> String {
    let mut labels: Vec<String> = doc
        .configs
        .iter()
        .map(|(label, specs)| {
            let specs: Vec<String> = specs
                .iter()
                .map(|s| {
                    let mut devices = s.mig_devices.clone();
                    devices.sort();
                    format!("{:?} {:?} {} {:?}", s.devices, s.device_filter, s.mig_enabled, devices)
                })
                .collect();
            format!("{label:?}: {}", specs.join("; "))
        })
        .collect();
    labels.sort();
    labels.join("\n")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Document::from_text(text) {
        Ok(doc) => {
            let yaml = Document::from_text(&to_yaml(&doc))
                .unwrap_or_else(|e| panic!("written YAML refused: {e}\n{}", to_yaml(&doc)));
            assert_eq!(said(&yaml), said(&doc));
            let json = Document::from_text(&to_json(&doc).to_string())
                .unwrap_or_else(|e| panic!("written JSON refused: {e}"));
            assert_eq!(said(&json), said(&doc));
        }
        Err(error) => {
            document_error::check(text, error.line, &error);
        }
    }
});
