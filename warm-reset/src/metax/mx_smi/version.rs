//! Dotted versions, and the minimums the vendor sets for warm reset.

use super::header::Versions;
use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// A dotted numeric version, e.g. `1.14.0.0` (`2.5.014` reads as 2.5.14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(Vec<u32>);

impl Version {
    /// Reads `1.14.0.0`; `None` for anything else (`unknown`, `2.x`).
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

/// The versions the vendor's guide sets a minimum for: what, where `mx-smi` prints it, and the
/// minimum.
pub const MINIMUMS: [(&str, &str, &str); 3] = [
    ("mx-smi", "MX-SMI", "2.1.5"),
    ("kernel driver", "Kernel Mode Driver Version", "2.4.1"),
    ("BIOS", "BIOS Version", "1.12.0.0"),
];

/// What the versions say about a warm reset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct VersionCheck {
    /// Versions that read and are lower than the minimum: block the reset.
    pub too_old: Vec<String>,
    /// Versions that are missing or do not read: a warning only.
    pub unreadable: Vec<String>,
    /// The versions as printed.
    pub found: Versions,
}

/// Checks the versions of plain `mx-smi`'s header against [`MINIMUMS`].
pub fn check_versions(versions: &Versions) -> VersionCheck {
    let mut check = VersionCheck {
        found: versions.clone(),
        ..VersionCheck::default()
    };
    let printed = [
        versions.mx_smi.as_deref(),
        versions.kernel_driver.as_deref(),
        versions.bios.as_deref(),
    ];
    for ((what, key, minimum), printed) in MINIMUMS.into_iter().zip(printed) {
        let Some(minimum) = Version::parse(minimum) else {
            continue;
        };
        match printed.and_then(Version::parse) {
            Some(found) if found.compare(&minimum) == Ordering::Less => {
                check
                    .too_old
                    .push(format!("{what} {found} is older than {minimum}"));
            }
            Some(_) => {}
            None => check.unreadable.push(match printed {
                Some(text) => format!("the {what} version ({key}) does not read: {text:?}"),
                None => format!("the {what} version ({key}) is not in mx-smi's header"),
            }),
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(mx_smi: &str, kernel_driver: &str, bios: &str) -> Versions {
        Versions {
            mx_smi: Some(mx_smi.into()),
            kernel_driver: Some(kernel_driver.into()),
            bios: Some(bios.into()),
            maca: None,
        }
    }

    #[test]
    fn the_published_versions_pass() {
        let check = check_versions(&versions("2.3.1", "3.8.30", "1.33.5.0"));
        assert!(check.too_old.is_empty() && check.unreadable.is_empty());
    }

    #[test]
    fn a_kernel_driver_older_than_2_4_1_is_too_old() {
        let check = check_versions(&versions("2.3.1", "2.4.0", "1.33.5.0"));
        assert_eq!(check.too_old, ["kernel driver 2.4.0 is older than 2.4.1"]);
    }

    #[test]
    fn a_leading_zero_in_a_part_reads_as_its_number() {
        // 2.5.014 has been published (mx-smi 2.1.6); it is 2.5.14, newer than 2.4.1.
        let check = check_versions(&versions("2.1.6", "2.5.014", "1.13.5.0"));
        assert!(check.too_old.is_empty());
    }

    #[test]
    fn a_bios_older_than_1_12_is_too_old_and_equal_is_fine() {
        assert_eq!(
            check_versions(&versions("2.3.1", "3.8.30", "1.9.9.9"))
                .too_old
                .len(),
            1
        );
        assert!(
            check_versions(&versions("2.3.1", "3.8.30", "1.12"))
                .too_old
                .is_empty()
        );
    }

    #[test]
    fn a_version_that_does_not_read_is_a_warning_only() {
        let check = check_versions(&versions("2.3.1", "unknown", "1.33.5.0"));
        assert!(check.too_old.is_empty());
        assert_eq!(check.unreadable.len(), 1);
    }
}
