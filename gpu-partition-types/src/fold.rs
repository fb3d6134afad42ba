//! Reading a reply ([`Reply::from_json`]): its pages decoded, then folded into one (numbering,
//! agreement, join order).

use crate::page::{Page, PageList, RawPage};
use crate::read;
use crate::record::Reindex;
use crate::{Bdf, JsonPointer, Lenient, LostMember, PointerToken, Problem, RefusedReply, Reply};

impl Reply {
    /// Reads a reply: one or more pages, folded. When `asked` is given, the reply must be for
    /// that device.
    pub fn from_json(input: &[u8], asked: Option<&Bdf>) -> Result<Reply, RefusedReply> {
        let raw = read::objects::<RawPage>(input)?;
        let several = raw.len() > 1;
        let mut pages = Vec::with_capacity(raw.len());
        for (position, document) in raw.into_iter().enumerate() {
            let mut page = document
                .value
                .and_then(|page| page.strict(asked))
                .map_err(|fault| {
                    let refusal = RefusedReply::from(fault);
                    if several {
                        refusal.in_page(position)
                    } else {
                        refusal
                    }
                })?;
            page.unknown = document.unknown;
            pages.push(page);
        }
        fold(pages)
    }
}

/// Folds pages (in stream order) into one reply.
///
/// Pages are numbered `0..count`, each index once, in any order; `format`, `device`, `mode` and
/// `case` must agree with page 0; lists are joined in page order; other members come from page 0.
pub(crate) fn fold(mut pages: Vec<Page>) -> Result<Reply, RefusedReply> {
    let refuse = |member: &str, position: usize, message: String| {
        RefusedReply::new(
            JsonPointer::root().member(member),
            Problem::Invalid,
            message,
        )
        .in_page(position)
    };
    if pages.len() == 1 {
        if let Some(number) = pages[0].number {
            if number.count != 1 {
                return Err(RefusedReply::new(
                    JsonPointer::root().member("page"),
                    Problem::Invalid,
                    format!(
                        "page {} of {}, but the stream holds one page",
                        number.index, number.count
                    ),
                ));
            }
        }
    } else {
        let mut count = None;
        for (position, page) in pages.iter().enumerate() {
            let number = page.number.ok_or_else(|| {
                refuse(
                    "page",
                    position,
                    "the stream holds several pages, but this one has no page member".into(),
                )
            })?;
            match count {
                None => count = Some(number.count),
                Some(first) if first != number.count => {
                    return Err(refuse(
                        "page",
                        position,
                        format!(
                            "count {} disagrees with count {first} of the first page",
                            number.count
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        let count = count.unwrap_or(0) as usize;
        let mut seen = vec![false; count];
        for (position, page) in pages.iter().enumerate() {
            let index = page.number.map_or(0, |number| number.index as usize);
            match seen.get_mut(index) {
                Some(slot) if !*slot => *slot = true,
                _ => {
                    return Err(refuse(
                        "page",
                        position,
                        format!("page index {index} is repeated"),
                    ));
                }
            }
        }
        if let Some(missing) = seen.iter().position(|seen| !seen) {
            return Err(RefusedReply::new(
                JsonPointer::root().member("page"),
                Problem::Invalid,
                format!("page index {missing} of {count} is missing"),
            ));
        }
    }

    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&position| pages[position].number.map_or(0, |number| number.index));
    let first = order[0];
    for (position, page) in pages.iter().enumerate() {
        let base = &pages[first];
        let disagreeing = if page.format != base.format {
            Some("format")
        } else if page.device != base.device {
            Some("device")
        } else if page.mode != base.mode {
            Some("mode")
        } else if page.case != base.case {
            Some("case")
        } else {
            None
        };
        if let Some(member) = disagreeing {
            return Err(refuse(member, position, "disagrees with page 0".into()));
        }
    }

    let mut profiles = Vec::new();
    let mut gpu_instances = Vec::new();
    let mut vgpus = Vec::new();
    let mut processes = Vec::new();
    let mut vgpu_types = Vec::new();
    let mut unknown_members = Vec::new();
    let mut offsets = [0usize; LISTS.len()];
    for &position in &order {
        let page = &mut pages[position];
        let lengths = [
            read_len(&page.profiles),
            read_len(&page.gpu_instances),
            read_len(&page.vgpus),
            read_len(&page.processes),
            read_len(&page.vgpu_types),
        ];
        for mut member in std::mem::take(&mut page.unknown) {
            let list = match member.pointer.tokens().first() {
                Some(PointerToken::Member(name)) => LISTS.iter().position(|list| list == name),
                _ => None,
            };
            if let (Some(list), Some(PointerToken::Index(local))) =
                (list, member.pointer.tokens().get(1))
            {
                let joined = offsets[list] + local;
                member.pointer.reindex(1, joined);
            }
            unknown_members.push(member);
        }
        for (offset, length) in offsets.iter_mut().zip(lengths) {
            *offset += length;
        }
        profiles.push(page.profiles.take());
        gpu_instances.push(page.gpu_instances.take());
        vgpus.push(page.vgpus.take());
        processes.push(page.processes.take());
        vgpu_types.push(page.vgpu_types.take());
    }
    unknown_members.sort();
    unknown_members.dedup();
    let base = pages.swap_remove(first);
    Ok(Reply {
        format: base.format,
        device: base.device,
        mode: base.mode,
        case: base.case,
        unreadable: base.unreadable,
        driver: base.driver,
        card: base.card,
        profiles: join("profiles", profiles),
        gpu_instances: join("gpu_instances", gpu_instances),
        vgpus: join("vgpus", vgpus),
        processes: join("processes", processes),
        vgpu_types: join("vgpu_types", vgpu_types),
        vgpu_mode: base.vgpu_mode,
        unknown_members,
    })
}

/// The lists joined across pages, in the order of `offsets` in [`fold`].
const LISTS: [&str; 5] = [
    "profiles",
    "gpu_instances",
    "vgpus",
    "processes",
    "vgpu_types",
];

/// How many elements a page's list adds to the joined list.
fn read_len<T>(list: &PageList<T>) -> usize {
    match list {
        Some(Lenient::Read(items)) => items.len(),
        _ => 0,
    }
}

/// Joins one list across pages (in page order): absent from a page counts as empty there; lost
/// on any page loses it; absent from every page loses it as missing.
fn join<T: Reindex>(name: &str, parts: Vec<PageList<T>>) -> Lenient<Vec<Lenient<T>>> {
    if parts.iter().all(Option::is_none) {
        return Lenient::Lost(LostMember::new(
            JsonPointer::root().member(name),
            Problem::Absent,
            "missing member",
        ));
    }
    let mut joined: Option<Vec<Lenient<T>>> = None;
    for part in parts.into_iter().flatten() {
        match (part, joined.as_mut()) {
            (Lenient::Lost(lost), _) => return Lenient::Lost(lost),
            // The first page's list is the joined list as it is: a reply of one page (the
            // common case) is never copied element by element.
            (Lenient::Read(items), None) => joined = Some(items),
            (Lenient::Read(items), Some(list)) => {
                let offset = list.len();
                list.reserve(items.len());
                for (local, mut item) in items.into_iter().enumerate() {
                    item.reindex(offset + local);
                    list.push(item);
                }
            }
        }
    }
    Lenient::Read(joined.unwrap_or_default())
}
