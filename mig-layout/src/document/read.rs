//! The reader: the text parsed (YAML 1.2, so JSON too) with positions, then walked with
//! mig-parted's rules, each fault named by line and member.

use super::error::LayoutError;
use super::node::{Key, Node};
use super::{DeviceId, DeviceRef, Devices, Document, Spec};
use gpu_host_probe::PciSubsystem;
use gpu_partition_types::{Bdf, JsonPointer};
use layout_model::ProfileKey;
use saphyr::{LoadableYamlNode, MarkedYaml};
use saphyr_parser::{Event, Parser, ScanError};

/// The largest document read (1 MiB): a layout file is a few kilobytes.
pub const MAX_DOCUMENT: usize = 1 << 20;

/// How deep lists and mappings may nest: a layout needs five levels; past this the text is
/// refused before it is built into a tree.
const MAX_DEPTH: usize = 32;

/// The only version of the format.
const VERSION: &str = "v1";

/// The lines of `text` as YAML counts them (LF, CR LF and a lone CR break a line); its end may
/// be on the line after the last break.
fn line_count(text: &str) -> usize {
    text.matches('\n').count() + text.matches('\r').count() - text.matches("\r\n").count() + 1
}

/// A parser's error at its marker; one the parser places past the end of the text (inside an
/// unterminated scalar, say) is named at the text's last line.
fn at_scan(text: &str, error: &ScanError) -> LayoutError {
    let marker = error.marker();
    let last = line_count(text);
    if marker.line() > last {
        return LayoutError::new(
            Some(last),
            JsonPointer::root(),
            format!("{} (at the end of the text)", error.info()),
        );
    }
    LayoutError::new(
        Some(marker.line()),
        JsonPointer::root(),
        error.info().to_owned(),
    )
    .column(marker.col() + 1)
}

/// Whether YAML 1.2 admits `c` in a stream (`c-printable`: tab, the line breaks, the printable
/// ASCII, NEL, and the rest of Unicode but for the C1 controls, the surrogates, U+FFFE and
/// U+FFFF). Anything else must be written as an escape inside double quotes.
fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Refuses a character YAML 1.2 does not admit in a stream, naming its line and column (a
/// reader that took it would write it back escaped, and the two would not read alike).
fn check_printable(text: &str) -> Result<(), LayoutError> {
    let mut line = 1;
    let mut column = 1;
    let mut after_cr = false;
    for c in text.chars() {
        if !printable(c) {
            return Err(LayoutError::new(
                Some(line),
                JsonPointer::root(),
                format!(
                    "the character U+{:04X} is not printable, which YAML 1.2 does not admit; \
                     write it as an escape inside double quotes",
                    u32::from(c)
                ),
            )
            .column(column));
        }
        match c {
            '\n' if after_cr => {}
            '\n' | '\r' => {
                line += 1;
                column = 1;
            }
            _ => column += 1,
        }
        after_cr = c == '\r';
    }
    Ok(())
}

/// Checks the shape of the text before building it: one document, nesting bounded.
fn check_events(text: &str) -> Result<(), LayoutError> {
    let mut depth = 0usize;
    let mut documents = 0usize;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|error| at_scan(text, &error))?;
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(LayoutError::new(
                        Some(span.start.line()),
                        JsonPointer::root(),
                        "a second YAML document: a layout file holds one",
                    ));
                }
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(LayoutError::new(
                        Some(span.start.line()),
                        JsonPointer::root(),
                        format!("lists and mappings nest deeper than {MAX_DEPTH} levels"),
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

pub(super) fn document(text: &str) -> Result<Document, LayoutError> {
    read_root(
        text,
        "the document is empty: it needs `version: v1` and `mig-configs`",
        top,
    )
}

/// The one reader of a document's text, for both formats (mig-parted's layouts,
/// vgpu-device-manager's configs): bounded in size, printable, one document nested no deeper
/// than [`MAX_DEPTH`], then walked from its root by `walk`; a fault past the text's end is named
/// at its last line.
pub(super) fn read_root<T>(
    text: &str,
    empty: &str,
    walk: impl FnOnce(Node<'_, '_>) -> Result<T, LayoutError>,
) -> Result<T, LayoutError> {
    if text.len() > MAX_DOCUMENT {
        return Err(LayoutError::new(
            None,
            JsonPointer::root(),
            format!(
                "{} bytes, more than the {MAX_DOCUMENT} a layout document may have",
                text.len()
            ),
        ));
    }
    check_printable(text)?;
    check_events(text)?;
    let documents = MarkedYaml::load_from_str(text).map_err(|error| at_scan(text, &error))?;
    let Some(root) = documents.first() else {
        return Err(LayoutError::new(Some(1), JsonPointer::root(), empty));
    };
    let at = JsonPointer::root();
    walk(Node::new(root, &at)).map_err(|mut error| {
        // An empty node (an explicit key with no text, say) has its position after the text's
        // end: named at the last line.
        let last = line_count(text);
        if error.line.is_some_and(|line| line > last) {
            error.line = Some(last);
            error.column = None;
        }
        error
    })
}

/// The labelled lists of a document (`mig-configs`, `vgpu-configs`): at least one `label`,
/// each a list (a `what`) of at least one entry, each entry read by `entry`.
pub(super) fn labelled<S>(
    node: Node<'_, '_>,
    member: &str,
    (label_word, what): (&str, &str),
    entry: impl Fn(Node<'_, '_>) -> Result<S, LayoutError>,
) -> Result<Vec<(String, Vec<S>)>, LayoutError> {
    let entries = node.mapping(&format!("`{member}`"))?;
    if entries.is_empty() {
        return Err(node.refuse(format!("`{member}` needs at least one {label_word}")));
    }
    entries
        .iter()
        .map(|item| {
            let label = &item.name;
            let items = item.node().sequence(&format!("the {what} {label:?}"))?;
            if items.is_empty() {
                return Err(item.refuse(format!("the {what} {label:?} needs at least one entry")));
            }
            let specs = items
                .iter()
                .enumerate()
                .map(|(index, spec)| {
                    let at = item.at.clone().index(index);
                    entry(Node::new(spec, &at))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((label.clone(), specs))
        })
        .collect()
}

fn top(node: Node<'_, '_>) -> Result<Document, LayoutError> {
    let configs = versioned(node, "mig-configs", mig_configs)?.unwrap_or_default();
    Ok(Document { configs })
}

/// A v1 document's top: `version`, read first as both projects read it (a document of another
/// version is refused for that, whatever else it holds), then its one other member `member`,
/// read by `read`; any other member is refused. `None` where `member` is absent.
pub(super) fn versioned<T>(
    node: Node<'_, '_>,
    member: &str,
    read: impl FnOnce(Node<'_, '_>) -> Result<T, LayoutError>,
) -> Result<Option<T>, LayoutError> {
    let entries = node.mapping("the document")?;
    let version = entries
        .iter()
        .find(|entry| entry.key == Key::Text("version".to_owned()))
        .ok_or_else(|| node.refuse("missing `version` (it must be `v1`)"))?;
    let at = node.at.clone().member("version");
    let text = Node::new(version.value, &at)
        .string("`version`")?
        .to_owned();
    if text != VERSION {
        return Err(LayoutError::new(
            Some(version.line),
            at,
            format!("unknown version {text:?}: this reader knows `v1`"),
        ));
    }
    let mut read = Some(read);
    let mut found = None;
    for entry in &entries {
        if entry.name == "version" {
            continue;
        }
        match read.take() {
            Some(read) if entry.name == member => found = Some(read(entry.node())?),
            _ => {
                return Err(
                    entry.unexpected(&format!("a v1 document has only `version` and `{member}`"))
                );
            }
        }
    }
    Ok(found)
}

fn mig_configs(node: Node<'_, '_>) -> Result<Vec<(String, Vec<Spec>)>, LayoutError> {
    labelled(node, "mig-configs", ("label", "layout"), spec)
}

fn spec(node: Node<'_, '_>) -> Result<Spec, LayoutError> {
    let entries = node.mapping("an entry of a layout")?;
    let mut devices = None;
    let mut enabled = None;
    let mut mig_devices: Option<Vec<(ProfileKey, u32)>> = None;
    let mut filter = Vec::new();
    for entry in &entries {
        let value = entry.node();
        match entry.name.as_str() {
            "devices" => devices = Some(devices_of(value)?),
            "mig-enabled" => enabled = Some(value.boolean("`mig-enabled`")?),
            "mig-devices" if value.is_null() => {}
            "mig-devices" => mig_devices = Some(mig_devices_of(value)?),
            "device-filter" => filter = device_filter(value)?,
            _ => {
                return Err(entry.unexpected(
                    "an entry has `devices`, `mig-enabled`, `mig-devices` and `device-filter`",
                ));
            }
        }
    }
    let devices = devices.ok_or_else(|| node.refuse("missing required member `devices`"))?;
    let mig_enabled =
        enabled.ok_or_else(|| node.refuse("missing required member `mig-enabled`"))?;
    let mig_devices = match (mig_enabled, mig_devices) {
        (true, None) => {
            return Err(node.refuse(
                "missing `mig-devices`, which `mig-enabled: true` needs (`{}` for MIG on \
                 with no instance)",
            ));
        }
        (false, Some(listed)) if !listed.is_empty() => {
            return Err(node.refuse("`mig-devices` lists instances, but `mig-enabled` is false"));
        }
        (_, listed) => listed.unwrap_or_default(),
    };
    Ok(Spec {
        devices,
        device_filter: filter,
        mig_enabled,
        mig_devices,
        line: Some(node.line()),
        at: node.at.clone(),
    })
}

pub(super) fn devices_of(node: Node<'_, '_>) -> Result<Devices, LayoutError> {
    if let Ok(text) = node.string("`devices`") {
        return if text == "all" {
            Ok(Devices::All)
        } else {
            Err(node.refuse(format!(
                "`devices` must be `all` or a list of GPU indices or PCI addresses, not \
                 {text:?}"
            )))
        };
    }
    let items = node.sequence("`devices`").map_err(|_| {
        node.refuse(format!(
            "`devices` must be `all` or a list of GPU indices or PCI addresses, not {}",
            node.describe()
        ))
    })?;
    let mut listed = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = node.at.clone().index(index);
        let item = Node::new(item, &at);
        let device =
            match item.string("a device") {
                Ok(text) => DeviceRef::Address(text.parse::<Bdf>().map_err(|error| {
                    item.refuse(format!("{text:?} is not a PCI address: {error}"))
                })?),
                Err(_) => DeviceRef::Index(item.count("a GPU index").map_err(|_| {
                    item.refuse(format!(
                        "a device is a GPU index (0, 1, …) or a PCI address (\"0000:3b:00.0\"), \
                     not {}",
                        item.describe()
                    ))
                })?),
            };
        if !listed.contains(&device) {
            listed.push(device);
        }
    }
    Ok(Devices::Listed(listed))
}

fn mig_devices_of(node: Node<'_, '_>) -> Result<Vec<(ProfileKey, u32)>, LayoutError> {
    let entries = node.mapping("`mig-devices`")?;
    let mut listed: Vec<(ProfileKey, u32)> = Vec::with_capacity(entries.len());
    for entry in &entries {
        let refuse = |message: String| entry.refuse(message);
        let key = match &entry.key {
            Key::Integer(id) => ProfileKey::Id(
                u32::try_from(*id).map_err(|_| refuse(format!("{id} is not a profile ID")))?,
            ),
            Key::Text(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                ProfileKey::Id(
                    text.parse()
                        .map_err(|_| refuse(format!("{text} is not a profile ID")))?,
                )
            }
            Key::Text(text) => profile_name(text).map_err(refuse)?,
        };
        if listed.iter().any(|(known, _)| *known == key) {
            return Err(refuse(format!("{key} is named twice")));
        }
        let count = entry
            .node()
            .count(&format!("the count of {}", entry.name))?;
        listed.push((key, count));
    }
    Ok(listed)
}

/// A profile name: as a catalogue writes them (`1g.10gb`, `1g.10gb+me`); mig-parted's compute
/// instance form (`1c.3g.40gb`) is refused, since each GPU instance here gets one compute
/// instance that fills it.
fn profile_name(text: &str) -> Result<ProfileKey, String> {
    if text.trim().is_empty() || text.trim() != text || text.chars().any(char::is_control) {
        return Err(format!("{text:?} is not a profile name"));
    }
    let mut parts = text.split('.');
    let first = parts.next().unwrap_or_default();
    let compute = first.len() > 1
        && first.ends_with('c')
        && first[..first.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && parts.next().is_some_and(|second| second.contains('g'));
    if compute {
        return Err(format!(
            "{text:?} names compute instances: here each GPU instance has one compute instance \
             that fills it, so name the GPU instance profile (\"{}\")",
            text.split_once('.').map_or(text, |(_, rest)| rest)
        ));
    }
    Ok(ProfileKey::Name(text.to_owned()))
}

pub(super) fn device_filter(node: Node<'_, '_>) -> Result<Vec<DeviceId>, LayoutError> {
    if let Ok(text) = node.string("`device-filter`") {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        return Ok(vec![device_id(text).map_err(|why| node.refuse(why))?]);
    }
    let items = node.sequence("`device-filter`").map_err(|_| {
        node.refuse(format!(
            "`device-filter` must be a device ID (\"0x20B010DE\") or a list of them, not {}",
            node.describe()
        ))
    })?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let at = node.at.clone().index(index);
            let item = Node::new(item, &at);
            let text = item.string("a device ID")?;
            device_id(text).map_err(|why| item.refuse(why))
        })
        .collect()
}

/// `0xDDDDVVVV` or `0xDDDDVVVV:0xSSSSVVVV`, each part a 32-bit number (hex with `0x`, else
/// decimal, as mig-parted parses it), device in the high half, vendor in the low.
fn device_id(text: &str) -> Result<DeviceId, String> {
    let split = |raw: &str| -> Result<(u16, u16), String> {
        let raw = raw.trim();
        let number = match raw.strip_prefix("0x").or_else(|| raw.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => raw.parse::<u32>(),
        }
        .map_err(|_| {
            format!(
                "{text:?} is not a PCI device ID: expected `0xDDDDVVVV` (device, then vendor), \
                 optionally `:0xSSSSVVVV` for the subsystem"
            )
        })?;
        let device = u16::try_from(number >> 16).unwrap_or(u16::MAX);
        let vendor = u16::try_from(number & 0xffff).unwrap_or(u16::MAX);
        Ok((device, vendor))
    };
    let mut parts = text.split(':');
    let (device, vendor) = split(parts.next().unwrap_or_default())?;
    let subsystem = parts
        .next()
        .map(split)
        .transpose()?
        .map(|(device, vendor)| PciSubsystem { vendor, device });
    if parts.next().is_some() {
        return Err(format!(
            "{text:?} is not a PCI device ID: expected `0xDDDDVVVV` or `0xDDDDVVVV:0xSSSSVVVV`"
        ));
    }
    Ok(DeviceId {
        device,
        vendor,
        subsystem,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_device_id_is_device_then_vendor_with_an_optional_subsystem() {
        assert_eq!(
            device_id("0x233010DE").unwrap(),
            DeviceId {
                device: 0x2330,
                vendor: 0x10de,
                subsystem: None
            }
        );
        assert_eq!(
            device_id("0x20B010DE:0x134F10DE").unwrap().subsystem,
            Some(PciSubsystem {
                vendor: 0x10de,
                device: 0x134f
            })
        );
        assert!(device_id("H100").is_err());
        assert!(device_id("0x1:0x2:0x3").is_err());
    }

    #[test]
    fn a_compute_instance_profile_is_refused_and_a_gpu_instance_one_read() {
        assert!(
            profile_name("1c.3g.40gb")
                .unwrap_err()
                .contains("\"3g.40gb\"")
        );
        assert_eq!(
            profile_name("1g.10gb+me").unwrap(),
            ProfileKey::Name("1g.10gb+me".to_owned())
        );
        assert!(profile_name(" 1g.5gb").is_err());
    }
}
