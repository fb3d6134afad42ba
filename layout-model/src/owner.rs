//! Who a partition is for ([`Owner`]): a token the toolstack gives when it creates one (a VM's
//! UUID, a claim's name), kept with the partition in the declaration ([`Owned`]) so that a
//! restore brings it back for the same owner, and no write of ours destroys it for another.

use crate::want::Placed;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The longest owner token, in bytes: room for a UUID, a Kubernetes `namespace/name` (63 + 1
/// + 253) and a prefix.
pub const OWNER_MAX: usize = 384;

/// An owner token: 1 to [`OWNER_MAX`] bytes of printable ASCII, no space (what a VM UUID, a
/// claim's `namespace/name` or a URI is), so it reads back the same in every surface.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Owner(String);

/// Why a text is not an owner token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnerError {
    /// It is empty.
    #[error("an owner token is empty")]
    Empty,
    /// It is longer than [`OWNER_MAX`].
    #[error("an owner token is {length} bytes long; at most {OWNER_MAX} are kept")]
    TooLong {
        /// Its length.
        length: usize,
    },
    /// It holds a byte that is not printable ASCII, or a space.
    #[error("an owner token holds {found:?} at byte {at}: printable ASCII without spaces only")]
    NotPrintable {
        /// The first such character.
        found: char,
        /// Where (a byte offset).
        at: usize,
    },
}

impl Owner {
    /// `text` as an owner token, or why it is not one.
    pub fn new(text: impl Into<String>) -> Result<Owner, OwnerError> {
        let text = text.into();
        if text.is_empty() {
            return Err(OwnerError::Empty);
        }
        if text.len() > OWNER_MAX {
            return Err(OwnerError::TooLong { length: text.len() });
        }
        if let Some((at, found)) = text.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
            return Err(OwnerError::NotPrintable { found, at });
        }
        Ok(Owner(text))
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Owner {
    type Error = OwnerError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Owner::new(text)
    }
}

impl From<Owner> for String {
    fn from(owner: Owner) -> Self {
        owner.0
    }
}

impl std::str::FromStr for Owner {
    type Err = OwnerError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Owner::new(text)
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A declared GPU instance and who it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Owned {
    /// The instance: its profile and placement.
    #[serde(flatten)]
    pub at: Placed,
    /// Its owner.
    pub owner: Owner,
}

impl Owned {
    /// The instance at `at`, for `owner`.
    pub fn new(at: Placed, owner: Owner) -> Self {
        Self { at, owner }
    }
}
