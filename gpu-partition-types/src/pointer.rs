//! [`JsonPointer`]: where a member is, as RFC 6901 writes it.

use serde::{Serialize, Serializer};
use std::fmt;

/// One step of a pointer: a member name or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PointerToken {
    /// A member of an object.
    Member(String),
    /// An element of a list.
    Index(usize),
}

/// A JSON Pointer (RFC 6901). `""` is the whole document; `/profiles/2/signature` a member.
///
/// Pointers sort member by member with list indices in numeric order, so `/vgpus/2` comes before
/// `/vgpus/10`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JsonPointer {
    tokens: Vec<PointerToken>,
}

impl JsonPointer {
    /// The whole document (`""`).
    pub fn root() -> Self {
        Self::default()
    }

    /// This pointer followed by the member `name`.
    pub fn member(mut self, name: &str) -> Self {
        self.tokens.push(PointerToken::Member(name.to_owned()));
        self
    }

    /// This pointer followed by the list index `index`.
    pub fn index(mut self, index: usize) -> Self {
        self.tokens.push(PointerToken::Index(index));
        self
    }

    /// The steps, from the root.
    pub fn tokens(&self) -> &[PointerToken] {
        &self.tokens
    }

    /// Whether this is the whole document.
    pub fn is_root(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Whether `self` is `other` or lies inside it.
    pub fn starts_with(&self, other: &JsonPointer) -> bool {
        self.tokens.starts_with(&other.tokens)
    }

    /// Replaces the list index at step `depth` (0-based), if that step is an index. Used when
    /// pages are joined and a page's list elements move to their place in the joined list.
    pub(crate) fn reindex(&mut self, depth: usize, index: usize) {
        if let Some(PointerToken::Index(slot)) = self.tokens.get_mut(depth) {
            *slot = index;
        }
    }

    pub(crate) fn from_tokens(tokens: Vec<PointerToken>) -> Self {
        Self { tokens }
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for token in &self.tokens {
            match token {
                PointerToken::Member(name) => {
                    f.write_str("/")?;
                    for c in name.chars() {
                        match c {
                            '~' => f.write_str("~0")?,
                            '/' => f.write_str("~1")?,
                            c => write!(f, "{c}")?,
                        }
                    }
                }
                PointerToken::Index(index) => write!(f, "/{index}")?,
            }
        }
        Ok(())
    }
}

impl Serialize for JsonPointer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_pointer_is_the_empty_string() {
        assert_eq!(JsonPointer::root().to_string(), "");
    }

    #[test]
    fn member_names_escape_tilde_and_slash() {
        let pointer = JsonPointer::root().member("a/b~c").index(3);
        assert_eq!(pointer.to_string(), "/a~1b~0c/3");
    }

    #[test]
    fn indices_sort_numerically() {
        let two = JsonPointer::root().member("vgpus").index(2);
        let ten = JsonPointer::root().member("vgpus").index(10);
        assert!(two < ten);
    }
}
