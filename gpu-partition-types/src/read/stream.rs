//! The outer layer: bytes to a stream of JSON objects, each read as a `T`.

use super::{At, Decode, Field, Path};
use crate::{RefusedReply, UnknownMember};
use std::cell::RefCell;

/// One top-level value of the stream, read as `T` from the root, with the members inside it
/// that `T` does not know.
pub(crate) struct Document<T> {
    pub(crate) value: Field<T>,
    /// In the order read.
    pub(crate) unknown: Vec<UnknownMember>,
}

impl<'de, T: Decode> serde::Deserialize<'de> for Document<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let unknown = RefCell::new(Vec::new());
        let root = Path::listing(&unknown);
        let value = serde::de::DeserializeSeed::deserialize(At::<T>::new(&root), deserializer)?;
        Ok(Document {
            value,
            unknown: unknown.into_inner(),
        })
    }
}

/// Reads `input` as one or more JSON objects separated by whitespace, each as a `T`.
///
/// Bytes that are not UTF-8, not JSON, truncated, nested deeper than 128 levels, or followed by
/// anything but whitespace refuse the whole input at the root. A value that is not an object
/// refuses it too. Faults inside an object are the `T`'s to keep or report.
pub(crate) fn objects<T: Decode>(input: &[u8]) -> Result<Vec<Document<T>>, RefusedReply> {
    let text = std::str::from_utf8(input).map_err(|error| {
        RefusedReply::at_root(format!(
            "not UTF-8: invalid byte at offset {}",
            error.valid_up_to()
        ))
    })?;
    let mut pages = Vec::new();
    for (position, item) in serde_json::Deserializer::from_str(text)
        .into_iter::<Document<T>>()
        .enumerate()
    {
        let page = item.map_err(|error| {
            RefusedReply::at_root(format!("not a stream of JSON objects: {error}"))
        })?;
        if let Err(fault) = &page.value {
            if fault.at.is_root() {
                let refusal = RefusedReply::from(fault.clone());
                return Err(if position > 0 {
                    refusal.in_page(position)
                } else {
                    refusal
                });
            }
        }
        pages.push(page);
    }
    if pages.is_empty() {
        return Err(RefusedReply::at_root("empty: no JSON object"));
    }
    Ok(pages)
}
