//! The writers: a document as mig-parted's v1 YAML (or JSON), and a vGPU document as
//! vgpu-device-manager's, which their readers read back equal.

use super::vgpu::VgpuDocument;
use super::{DeviceId, DeviceRef, Devices, Document, Spec};
use layout_model::ProfileKey;
use std::fmt::Write as _;

/// A double-quoted scalar: JSON's string syntax is YAML's double-quoted style, with every
/// character YAML 1.2 does not admit raw (DEL, the C1 controls, U+FFFE and U+FFFF, which JSON
/// leaves raw) escaped, so the reader takes it back.
fn quoted(text: &str) -> String {
    let json = serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"));
    let unprintable = |c: char| matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    if !json.chars().any(unprintable) {
        return json;
    }
    json.chars()
        .map(|c| {
            if unprintable(c) {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// YAML's bound on an implicit key (`key: value`): 1024 characters; a longer key is written
/// explicitly (`? key` then `: value`).
const IMPLICIT_KEY_MAX: usize = 1024;

/// `key: value` at `indent`, or the explicit form when the key is too long to be implicit.
fn entry(text: &mut String, indent: &str, key: &str, value: &str) {
    if key.chars().count() <= IMPLICIT_KEY_MAX {
        let _ = writeln!(text, "{indent}{key}:{value}");
    } else {
        let _ = writeln!(text, "{indent}? {key}");
        let _ = writeln!(text, "{indent}:{value}");
    }
}

/// The head of a v1 document whose configs are under `key`: the version, then the key, but
/// for a document of no config (`key` with nothing under it does not read; the version alone
/// says so in a way that does).
fn head(key: &str, empty: bool) -> String {
    if empty {
        String::from("version: v1\n")
    } else {
        format!("version: v1\n{key}:\n")
    }
}

/// The document as YAML: labels and profile names always quoted, so any name reads back as
/// the same string.
pub fn to_yaml(document: &Document) -> String {
    let mut text = head("mig-configs", document.configs.is_empty());
    for (label, specs) in &document.configs {
        entry(&mut text, "  ", &quoted(label), "");
        for spec in specs {
            write_spec(&mut text, spec);
        }
    }
    text
}

/// `devices` as a flow value: `all`, or the list (addresses quoted).
fn devices_yaml(devices: &Devices) -> String {
    match devices {
        Devices::All => "all".to_owned(),
        Devices::Listed(listed) => {
            let items: Vec<String> = listed
                .iter()
                .map(|device| match device {
                    DeviceRef::Index(index) => index.to_string(),
                    DeviceRef::Address(bdf) => quoted(&bdf.to_string()),
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// `devices` as JSON: `"all"`, or the list (indices as numbers, addresses as strings).
fn devices_json(devices: &Devices) -> serde_json::Value {
    use serde_json::json;
    match devices {
        Devices::All => json!("all"),
        Devices::Listed(listed) => listed
            .iter()
            .map(|device| match device {
                DeviceRef::Index(index) => json!(index),
                DeviceRef::Address(bdf) => json!(bdf.to_string()),
            })
            .collect(),
    }
}

/// A spec's `device-filter` (where it has one) and `devices`, the members both formats share.
fn targets_json(
    filter: &[DeviceId],
    devices: &Devices,
) -> serde_json::Map<String, serde_json::Value> {
    let mut entry = serde_json::Map::new();
    if !filter.is_empty() {
        entry.insert(
            "device-filter".to_owned(),
            filter.iter().map(ToString::to_string).collect(),
        );
    }
    entry.insert("devices".to_owned(), devices_json(devices));
    entry
}

/// A spec's `device-filter` member, its IDs quoted.
fn device_filter_yaml(filter: &[DeviceId]) -> String {
    let ids: Vec<String> = filter.iter().map(|id| quoted(&id.to_string())).collect();
    format!("device-filter: [{}]", ids.join(", "))
}

fn write_spec(text: &mut String, spec: &Spec) {
    let mut first = true;
    let mut line = |text: &mut String, body: String| {
        let lead = if first { "    - " } else { "      " };
        first = false;
        let _ = writeln!(text, "{lead}{body}");
    };
    if !spec.device_filter.is_empty() {
        line(text, device_filter_yaml(&spec.device_filter));
    }
    line(text, format!("devices: {}", devices_yaml(&spec.devices)));
    line(text, format!("mig-enabled: {}", spec.mig_enabled));
    if spec.mig_enabled {
        if spec.mig_devices.is_empty() {
            line(text, "mig-devices: {}".to_owned());
        } else {
            line(text, "mig-devices:".to_owned());
            for (key, count) in &spec.mig_devices {
                let key = match key {
                    ProfileKey::Name(name) => quoted(name),
                    ProfileKey::Id(id) => id.to_string(),
                };
                entry(text, "        ", &key, &format!(" {count}"));
            }
        }
    }
}

/// The document as JSON (the same members as the YAML), which the reader reads back equal.
pub fn to_json(document: &Document) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let mut configs = Map::new();
    for (label, specs) in &document.configs {
        let specs: Vec<Value> = specs
            .iter()
            .map(|spec| {
                let mut entry = targets_json(&spec.device_filter, &spec.devices);
                entry.insert("mig-enabled".to_owned(), json!(spec.mig_enabled));
                if spec.mig_enabled {
                    let devices: Map<String, Value> = spec
                        .mig_devices
                        .iter()
                        .map(|(key, count)| {
                            let key = match key {
                                ProfileKey::Name(name) => name.clone(),
                                ProfileKey::Id(id) => id.to_string(),
                            };
                            (key, json!(count))
                        })
                        .collect();
                    entry.insert("mig-devices".to_owned(), Value::Object(devices));
                }
                Value::Object(entry)
            })
            .collect();
        configs.insert(label.clone(), Value::Array(specs));
    }
    let mut top = Map::new();
    top.insert("version".to_owned(), json!("v1"));
    if !configs.is_empty() {
        top.insert("mig-configs".to_owned(), Value::Object(configs));
    }
    Value::Object(top)
}

// A vGPU document's writers are methods where the writers are: `vgpu` reads, this module writes.
impl VgpuDocument {
    /// The document as vgpu-device-manager's v1 YAML, which [`VgpuDocument::from_text`] reads
    /// back equal (but for where each spec was read).
    pub fn to_yaml(&self) -> String {
        vgpu_to_yaml(self)
    }

    /// The document as JSON, with the same members as [`VgpuDocument::to_yaml`].
    pub fn to_json(&self) -> serde_json::Value {
        vgpu_to_json(self)
    }
}

/// A vGPU document as vgpu-device-manager's v1 YAML: config names and type names quoted, so
/// any reads back as the same string; `vgpu-devices: {}` for a spec of no vGPU.
fn vgpu_to_yaml(document: &VgpuDocument) -> String {
    let mut text = head("vgpu-configs", document.configs.is_empty());
    for (name, specs) in &document.configs {
        entry(&mut text, "  ", &quoted(name), "");
        for spec in specs {
            let mut lead = "    - ";
            if !spec.device_filter.is_empty() {
                let _ = writeln!(text, "{lead}{}", device_filter_yaml(&spec.device_filter));
                lead = "      ";
            }
            let _ = writeln!(text, "{lead}devices: {}", devices_yaml(&spec.devices));
            if spec.vgpu_devices.is_empty() {
                let _ = writeln!(text, "      vgpu-devices: {{}}");
                continue;
            }
            let _ = writeln!(text, "      vgpu-devices:");
            for (name, count) in &spec.vgpu_devices {
                entry(
                    &mut text,
                    "        ",
                    &quoted(&name.to_string()),
                    &format!(" {count}"),
                );
            }
        }
    }
    text
}

/// A vGPU document as JSON (the same members as the YAML), which the reader reads back equal.
fn vgpu_to_json(document: &VgpuDocument) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let configs: Map<String, Value> = document
        .configs
        .iter()
        .map(|(name, specs)| {
            let specs: Vec<Value> = specs
                .iter()
                .map(|spec| {
                    let mut entry = targets_json(&spec.device_filter, &spec.devices);
                    let types: Map<String, Value> = spec
                        .vgpu_devices
                        .iter()
                        .map(|(name, count)| (name.to_string(), json!(count)))
                        .collect();
                    entry.insert("vgpu-devices".to_owned(), Value::Object(types));
                    Value::Object(entry)
                })
                .collect();
            (name.clone(), Value::Array(specs))
        })
        .collect();
    let mut top = Map::new();
    top.insert("version".to_owned(), json!("v1"));
    if !configs.is_empty() {
        top.insert("vgpu-configs".to_owned(), Value::Object(configs));
    }
    Value::Object(top)
}
