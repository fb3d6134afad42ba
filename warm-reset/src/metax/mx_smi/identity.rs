//! Whether the `mx-smi` that answered is MetaX's: another vendor ships a tool of that name
//! (it prints `MOFFETT-SMI …`), and its output must never be read as MetaX's.

use super::lines::bordered;

/// The version in a banner line `mx-smi  version: 2.3.1` (any run of spaces), if `line` is one.
pub(crate) fn banner_version(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("mx-smi")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let version = rest.trim_start().strip_prefix("version:")?.trim();
    is_dotted(version).then_some(version)
}

/// The version in a header cell `| MX-SMI 2.3.1   …|`, if `line` is the header's first line.
pub(crate) fn header_cell_version(line: &str) -> Option<&str> {
    let rest = bordered(line)?.trim_start().strip_prefix("MX-SMI")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let version = rest.split_whitespace().next()?;
    is_dotted(version).then_some(version)
}

/// The log title `=== MetaX System Management Interface Log ===`, indented or not.
pub(crate) fn is_title(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('=')
        && line.ends_with('=')
        && line.trim_matches('=').trim() == "MetaX System Management Interface Log"
}

fn is_dotted(text: &str) -> bool {
    !text.is_empty()
        && text
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `text` came from MetaX's `mx-smi`: it has the banner (`mx-smi  version: X.Y.Z`), the
/// `MetaX System Management Interface Log` title, or an `MX-SMI X.Y.Z` header cell.
pub fn is_metax(text: &str) -> bool {
    text.lines().any(|line| {
        banner_version(line).is_some() || is_title(line) || header_cell_version(line).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_reads_with_any_run_of_spaces() {
        assert_eq!(banner_version("mx-smi  version: 2.3.1"), Some("2.3.1"));
        assert_eq!(banner_version("mx-smi version:2.1.6"), Some("2.1.6"));
        assert_eq!(banner_version("mx-smi-version: 2.1.6"), None);
        assert_eq!(banner_version("mx-smi  version: soon"), None);
    }

    #[test]
    fn the_title_reads_indented_or_not() {
        assert!(is_title(
            "    =================== MetaX System Management Interface Log ==================="
        ));
        assert!(!is_title("=== Some Other Log ==="));
    }

    #[test]
    fn another_vendors_tool_is_not_metax() {
        assert!(!is_metax(
            "│MOFFETT-SMI 2.3.0         Driver Version 3.5.2         SOLA Version 3.5.3         │\n"
        ));
        assert!(!is_metax("mx-smi 1.0 (not MetaX)\n"));
        assert!(!is_metax(""));
    }

    #[test]
    fn a_header_cell_alone_is_enough() {
        assert!(is_metax(
            "| MX-SMI 2.2.9                       Kernel Mode Driver Version: 3.4.4            |\n"
        ));
    }
}
