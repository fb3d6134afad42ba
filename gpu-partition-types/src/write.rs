//! Writing a reply as several pages, as a helper does when its reply is long.

use crate::lenient::Element;
use crate::{
    Bdf, Case, Driver, FormatVersion, GpuInstance, Lenient, Mode, PageNumber, Profile, Reply,
    Unreadable, Vgpu,
};
use serde::Serialize;

/// One page as written: the reply's strict members repeated, a slice of each list.
#[derive(Serialize)]
struct WirePage<'a> {
    format: FormatVersion,
    device: Bdf,
    page: PageNumber,
    mode: Mode,
    case: Case,
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<&'a Unreadable>,
    #[serde(skip_serializing_if = "Option::is_none")]
    driver: Option<&'a Driver>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profiles: Option<Vec<Element<'a, Profile>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_instances: Option<Vec<Element<'a, GpuInstance>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vgpus: Option<Vec<Element<'a, Vgpu>>>,
}

impl Reply {
    /// Writes the reply as pages of at most `page_size` items of each list (at least one page;
    /// a `page_size` of 0 is taken as 1). Folding the pages gives back this reply, lost members
    /// aside. Each page is one JSON object; a helper prints them one after another.
    pub fn to_pages(&self, page_size: usize) -> Vec<String> {
        let size = page_size.max(1);
        let profiles = items(&self.profiles);
        let gpu_instances = items(&self.gpu_instances);
        let vgpus = items(&self.vgpus);
        let longest = [
            profiles.map_or(0, <[_]>::len),
            gpu_instances.map_or(0, <[_]>::len),
            vgpus.map_or(0, <[_]>::len),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let count = longest.div_ceil(size).max(1);
        (0..count)
            .map(|index| {
                let page = WirePage {
                    format: self.format,
                    device: self.device,
                    page: PageNumber {
                        index: u32::try_from(index).unwrap_or(u32::MAX),
                        count: u32::try_from(count).unwrap_or(u32::MAX),
                    },
                    mode: self.mode,
                    case: self.case,
                    unreadable: self.unreadable.as_ref(),
                    driver: self.driver.read(),
                    profiles: slice(profiles, index, size),
                    gpu_instances: slice(gpu_instances, index, size),
                    vgpus: slice(vgpus, index, size),
                };
                // Serializing these types cannot fail: every key is a string.
                serde_json::to_string(&page).unwrap_or_default()
            })
            .collect()
    }
}

/// The items of page `index` of a list cut into pages of `size`.
fn slice<'a, T>(
    items: Option<&'a [Lenient<T>]>,
    index: usize,
    size: usize,
) -> Option<Vec<Element<'a, T>>> {
    items.map(|items| {
        items
            .iter()
            .skip(index * size)
            .take(size)
            .map(Element)
            .collect()
    })
}

/// The elements of a list that was read (lost ones included, written as `{}`); `None` when the
/// list itself was lost.
fn items<T>(list: &Lenient<Vec<Lenient<T>>>) -> Option<&[Lenient<T>]> {
    list.read().map(Vec::as_slice)
}
