//! `mx-smi --show-version`: `key: value` lines, and the minimum versions for warm reset.

use std::cmp::Ordering;
use std::fmt;

/// A dotted numeric version, e.g. `1.14.0.0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(Vec<u32>);

impl Version {
    /// Reads `1.14.0.0`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Version> {
        let parts: Option<Vec<u32>> = text
            .trim()
            .split('.')
            .map(|part| part.parse().ok())
            .collect();
        parts.filter(|parts| !parts.is_empty()).map(Version)
    }

    fn compare(&self, other: &Version) -> Ordering {
        let len = self.0.len().max(other.0.len());
        (0..len)
            .map(|i| {
                self.0
                    .get(i)
                    .unwrap_or(&0)
                    .cmp(other.0.get(i).unwrap_or(&0))
            })
            .find(|ordering| ordering.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

/// The three versions the vendor's guide sets a minimum for, with the keys `mx-smi` prints.
pub const MINIMUMS: [(&str, &str, &str); 3] = [
    ("mx-smi", "mx-smi version", "2.1.5"),
    ("kernel driver", "Kernel Mode Driver Version", "2.4.1"),
    ("VBIOS", "VBIOS Version", "1.12.0.0"),
];

/// What the versions say about a warm reset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VersionCheck {
    /// Versions that read and are lower than the minimum: block the reset.
    pub too_old: Vec<String>,
    /// Versions that are missing or do not read: a warning only.
    pub unreadable: Vec<String>,
}

/// Whether the output came from MetaX's `mx-smi` (another vendor ships a tool of that name).
pub fn is_metax(text: &str) -> bool {
    value_of(text, "mx-smi version").is_some()
}

fn value_of<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim().eq_ignore_ascii_case(key).then_some(v.trim())
    })
}

/// Checks `--show-version` output against [`MINIMUMS`].
pub fn check_versions(text: &str) -> VersionCheck {
    let mut check = VersionCheck::default();
    for (what, key, minimum) in MINIMUMS {
        let Some(minimum) = Version::parse(minimum) else {
            continue;
        };
        match value_of(text, key).and_then(Version::parse) {
            Some(found) if found.compare(&minimum) == Ordering::Less => {
                check
                    .too_old
                    .push(format!("{what} {found} is older than {minimum}"));
            }
            Some(_) => {}
            None => check
                .unreadable
                .push(format!("{what} version ({key}) does not read")),
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str =
        "mx-smi version: 2.2.1\nKernel Mode Driver Version: 2.9.0\nVBIOS Version: 1.14.0.0\n";

    #[test]
    fn the_documented_versions_pass() {
        assert_eq!(check_versions(DOC), VersionCheck::default());
        assert!(is_metax(DOC));
    }

    #[test]
    fn a_kernel_driver_older_than_2_4_1_is_too_old() {
        let check = check_versions(&DOC.replace("2.9.0", "2.4.0"));
        assert_eq!(check.too_old, ["kernel driver 2.4.0 is older than 2.4.1"]);
    }

    #[test]
    fn a_vbios_older_than_1_12_is_too_old_and_equal_is_fine() {
        assert_eq!(
            check_versions(&DOC.replace("1.14.0.0", "1.9.9.9"))
                .too_old
                .len(),
            1
        );
        assert!(
            check_versions(&DOC.replace("1.14.0.0", "1.12"))
                .too_old
                .is_empty()
        );
    }

    #[test]
    fn a_version_that_does_not_read_is_a_warning_only() {
        let check = check_versions(&DOC.replace("2.9.0", "unknown"));
        assert!(check.too_old.is_empty());
        assert_eq!(check.unreadable.len(), 1);
    }

    #[test]
    fn output_without_an_mx_smi_version_line_is_not_metaxs_tool() {
        assert!(!is_metax("mx-smi 1.0 (Some Other Vendor)\n"));
    }
}
