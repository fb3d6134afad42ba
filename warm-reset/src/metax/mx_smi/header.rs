//! The bordered header of plain `mx-smi`: its first lines carry the versions, two
//! `key: value` pairs per line, whatever table of GPUs follows (two layouts are published).
//!
//! ```text
//! +---------------------------------------------------------------------------------+
//! | MX-SMI 2.3.1                       Kernel Mode Driver Version: 3.8.30           |
//! | MACA Version: 3.7.1.5              BIOS Version: 1.33.5.0                       |
//! |------------------+-----------------+---------------------+----------------------|
//! ```

use super::error::ParseError;
use super::identity::{banner_version, header_cell_version};
use super::lines::{bordered_or, is_double_rule, is_edge, is_single_rule, numbered};
use serde::Serialize;

const OUTPUT: &str = "the header of mx-smi";

/// The versions plain `mx-smi` prints, as printed (`None` when its key is not there).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct Versions {
    /// The `MX-SMI X.Y.Z` cell, or else the banner's version.
    pub mx_smi: Option<String>,
    /// `Kernel Mode Driver Version`.
    pub kernel_driver: Option<String>,
    /// `BIOS Version` (the key is `BIOS Version`, not `VBIOS Version`).
    pub bios: Option<String>,
    /// `MACA Version` (no minimum; `unknown` has been published).
    pub maca: Option<String>,
}

/// Reads the versions from the bordered header of plain `mx-smi`: the lines of the first box
/// up to its first inner rule. Output without that box is an error; a key the box does not hold
/// is `None` (a warning for the caller, never a guess).
pub fn parse_header(text: &str) -> Result<Versions, ParseError> {
    let mut versions = Versions {
        mx_smi: text.lines().find_map(banner_version).map(str::to_owned),
        ..Versions::default()
    };
    let mut lines = numbered(text).skip_while(|(_, line)| !is_edge(line));
    if lines.next().is_none() {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no bordered header (`+---+`) in the output",
        });
    }
    let mut closed = false;
    for (number, line) in lines {
        if is_single_rule(line) || is_double_rule(line) || is_edge(line) {
            closed = true;
            break;
        }
        let inner = bordered_or(OUTPUT, number, line, "not a line of the bordered header")?;
        if let Some(version) = header_cell_version(line) {
            versions.mx_smi = Some(version.to_owned());
        }
        for (key, slot) in [
            ("Kernel Mode Driver Version", &mut versions.kernel_driver),
            ("BIOS Version", &mut versions.bios),
            ("MACA Version", &mut versions.maca),
        ] {
            if let Some(value) = value_of(inner, key) {
                *slot = Some(value.to_owned());
            }
        }
    }
    if !closed {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "the bordered header does not end (output cut short)",
        });
    }
    Ok(versions)
}

/// The value after `key:` in a header line, where `key` starts a word (`BIOS Version` is not
/// found in `VBIOS Version`).
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = line[from..].find(key) {
        let start = from + at;
        let after = &line[start + key.len()..];
        let starts_word = line[..start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if starts_word {
            if let Some(rest) = after.strip_prefix(':') {
                return rest.split_whitespace().next();
            }
        }
        from = start + key.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_inside_a_longer_key_is_not_read() {
        assert_eq!(value_of("VBIOS Version: 1.0", "BIOS Version"), None);
        assert_eq!(
            value_of(
                "MACA Version: 3.7.1.5   BIOS Version: 1.33.5.0",
                "BIOS Version"
            ),
            Some("1.33.5.0")
        );
    }
}
