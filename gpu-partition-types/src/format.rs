//! [`FormatVersion`]: `"MAJOR.MINOR"`, and the one place that decides which formats read.

use crate::read::{Decode, Fault, Field, Path};
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The reply format major version this crate reads and writes. Any minor reads: a later minor
/// only adds members and values, which the reader ignores or keeps as unknown.
pub const SUPPORTED_MAJOR: u32 = 1;

/// A format version, `"MAJOR.MINOR"` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FormatVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
}

/// A format version that does not parse, or that this crate does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Not `"MAJOR.MINOR"` with two decimal integers.
    #[error("format version {0:?} is not MAJOR.MINOR")]
    Malformed(String),
    /// A major older than the one served.
    #[error("format {found} is too old: this reader serves major {supported}")]
    TooOld {
        /// The version found.
        found: FormatVersion,
        /// The major served.
        supported: u32,
    },
    /// A major newer than the one served.
    #[error("format {found} is too new: this reader serves major {supported}")]
    TooNew {
        /// The version found.
        found: FormatVersion,
        /// The major served.
        supported: u32,
    },
}

impl FormatVersion {
    /// The version `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The version this crate writes: 1.4 (1.0 had no profile placements, and no `apply`; 1.1
    /// no `card`; 1.2 no `vgpu_types` or `vgpu_mode`; 1.3 no `card.architecture`).
    pub const CURRENT: FormatVersion = FormatVersion::new(SUPPORTED_MAJOR, 4);

    /// Whether this crate reads replies of this version (major [`SUPPORTED_MAJOR`], any minor).
    pub fn check_supported(self) -> Result<(), FormatError> {
        use std::cmp::Ordering;
        match self.major.cmp(&SUPPORTED_MAJOR) {
            Ordering::Equal => Ok(()),
            Ordering::Less => Err(FormatError::TooOld {
                found: self,
                supported: SUPPORTED_MAJOR,
            }),
            Ordering::Greater => Err(FormatError::TooNew {
                found: self,
                supported: SUPPORTED_MAJOR,
            }),
        }
    }
}

impl FromStr for FormatVersion {
    type Err = FormatError;

    fn from_str(text: &str) -> Result<Self, FormatError> {
        let malformed = || FormatError::Malformed(text.to_owned());
        let (major, minor) = text.split_once('.').ok_or_else(malformed)?;
        let number = |part: &str| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            part.parse::<u32>().map_err(|_| malformed())
        };
        Ok(Self::new(number(major)?, number(minor)?))
    }
}

impl fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for FormatVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Decode for FormatVersion {
    const EXPECTED: &'static str = "a \"MAJOR.MINOR\" string";

    fn from_str(value: &str, at: &Path<'_>) -> Field<Self> {
        value.parse().map_err(|error: FormatError| {
            Fault::new(at, crate::Problem::Invalid, error.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_minor_of_major_one_is_supported() {
        assert_eq!(FormatVersion::new(1, 0).check_supported(), Ok(()));
        assert_eq!(FormatVersion::new(1, 7).check_supported(), Ok(()));
    }

    #[test]
    fn a_later_major_is_too_new_and_an_earlier_one_too_old() {
        assert!(matches!(
            FormatVersion::new(2, 0).check_supported(),
            Err(FormatError::TooNew { .. })
        ));
        assert!(matches!(
            FormatVersion::new(0, 9).check_supported(),
            Err(FormatError::TooOld { .. })
        ));
    }

    #[test]
    fn only_two_decimal_integers_parse() {
        assert_eq!("1.10".parse(), Ok(FormatVersion::new(1, 10)));
        for text in ["1", "1.", ".1", "1.0.0", "+1.0", "1.-0", "v1.0", "1.0 ", ""] {
            assert!(text.parse::<FormatVersion>().is_err(), "{text:?} parsed");
        }
    }
}
