//! Writing a reply: as one page, or as several pages each repeating the strict members and
//! holding a slice of each list. Both go through one writer, [`Wire`].

use crate::{Lenient, PageNumber, Reply};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use std::ops::Range;

/// A reply as written: whole (no `page` member), or one page of it holding `items` of each list.
pub(crate) struct Wire<'a> {
    pub(crate) reply: &'a Reply,
    pub(crate) page: Option<(PageNumber, Range<usize>)>,
}

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reply = self.reply;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("format", &reply.format)?;
        map.serialize_entry("device", &reply.device)?;
        if let Some((number, _)) = &self.page {
            map.serialize_entry("page", number)?;
        }
        map.serialize_entry("mode", &reply.mode)?;
        map.serialize_entry("case", &reply.case)?;
        if let Some(unreadable) = &reply.unreadable {
            map.serialize_entry("unreadable", unreadable)?;
        }
        if let Lenient::Read(driver) = &reply.driver {
            map.serialize_entry("driver", driver)?;
        }
        if let Lenient::Read(card) = &reply.card {
            map.serialize_entry("card", card)?;
        }
        let range = self.page.as_ref().map(|(_, range)| range.clone());
        write_list(&mut map, "profiles", &reply.profiles, range.clone())?;
        write_list(
            &mut map,
            "gpu_instances",
            &reply.gpu_instances,
            range.clone(),
        )?;
        write_list(&mut map, "vgpus", &reply.vgpus, range.clone())?;
        write_list(&mut map, "processes", &reply.processes, range.clone())?;
        write_list(&mut map, "vgpu_types", &reply.vgpu_types, range)?;
        if let Lenient::Read(mode) = &reply.vgpu_mode {
            map.serialize_entry("vgpu_mode", mode)?;
        }
        map.end()
    }
}

/// Writes a list that was read (a lost list is left out): its elements in `range` (all when
/// `None`), each element lost written as `{}`, so that a reader loses it again at the same
/// index and every pointer after it keeps naming the same element.
fn write_list<M: SerializeMap, T: Serialize>(
    map: &mut M,
    name: &str,
    list: &Lenient<Vec<Lenient<T>>>,
    range: Option<Range<usize>>,
) -> Result<(), M::Error> {
    let Lenient::Read(items) = list else {
        return Ok(());
    };
    let items = match range {
        Some(range) => {
            let end = range.end.min(items.len());
            items.get(range.start.min(end)..end).unwrap_or_default()
        }
        None => items.as_slice(),
    };
    map.serialize_entry(name, &Elements(items))
}

/// The elements of a list as written.
struct Elements<'a, T>(&'a [Lenient<T>]);

impl<T: Serialize> Serialize for Elements<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match item {
                Lenient::Read(value) => seq.serialize_element(value)?,
                Lenient::Lost(_) => seq.serialize_element(&Empty)?,
            }
        }
        seq.end()
    }
}

/// `{}`.
struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

impl Reply {
    /// Writes the reply as one page (no `page` member). Lost members are left out; a lost list
    /// element is written as `{}`.
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string and no custom
        // serializer returns an error.
        serde_json::to_string(&Wire {
            reply: self,
            page: None,
        })
        .unwrap_or_default()
    }

    /// Writes the reply as pages of at most `page_size` items of each list (at least one page;
    /// a `page_size` of 0 is taken as 1). Folding the pages gives back this reply, lost members
    /// aside. Each page is one JSON object; a helper prints them one after another.
    pub fn to_pages(&self, page_size: usize) -> Vec<String> {
        let size = page_size.max(1);
        let longest = length(&self.profiles)
            .max(length(&self.gpu_instances))
            .max(length(&self.vgpus))
            .max(length(&self.processes))
            .max(length(&self.vgpu_types));
        let count = longest.div_ceil(size).max(1);
        (0..count)
            .map(|index| {
                let start = index * size;
                let page = PageNumber::new(
                    u32::try_from(index).unwrap_or(u32::MAX),
                    u32::try_from(count).unwrap_or(u32::MAX),
                );
                // Cannot fail, as in `to_json`.
                serde_json::to_string(&Wire {
                    reply: self,
                    page: Some((page, start..start + size)),
                })
                .unwrap_or_default()
            })
            .collect()
    }
}

/// How many elements a list that was read holds (0 when lost).
fn length<T>(list: &Lenient<Vec<Lenient<T>>>) -> usize {
    list.read().map_or(0, Vec::len)
}

impl Serialize for Reply {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            reply: self,
            page: None,
        }
        .serialize(serializer)
    }
}
