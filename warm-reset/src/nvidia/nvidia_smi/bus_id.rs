//! [`parse_bus_id`]: a PCI bus ID as `nvidia-smi` prints it.

use gpu_partition_types::Bdf;

/// `00000000:1A:00.0` (an eight-digit domain, current drivers) or `0000:1a:00.0` (older ones),
/// any case; `None` for anything else.
pub fn parse_bus_id(text: &str) -> Option<Bdf> {
    let (domain, rest) = text.trim().split_once(':')?;
    if domain.is_empty() || domain.len() > 8 || !domain.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let domain = u32::from_str_radix(domain, 16).ok()?;
    format!("{domain:04x}:{}", rest.to_ascii_lowercase())
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_and_four_digit_domains_in_any_case_read_as_one_address() {
        let expected: Option<Bdf> = "0000:1a:00.0".parse().ok();
        assert!(expected.is_some());
        assert_eq!(parse_bus_id("00000000:1A:00.0"), expected);
        assert_eq!(parse_bus_id("0000:1a:00.0"), expected);
        assert_eq!(
            parse_bus_id("00010000:E1:00.0"),
            "10000:e1:00.0".parse().ok()
        );
    }

    #[test]
    fn anything_else_is_not_a_bus_id() {
        for text in ["", "1A:00.0", "000000000:1A:00.0", "GPU-1", "0000:1a:00"] {
            assert_eq!(parse_bus_id(text), None, "{text}");
        }
    }
}
