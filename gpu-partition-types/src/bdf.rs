//! [`Bdf`]: a PCI address `dddd:bb:dd.f`.
//!
//! The domain is 32 bits wide: Intel VMD puts the devices behind it in domains from `10000`
//! (kernel `drivers/pci/controller/vmd.c`), and sysfs names them `10000:e1:00.0`. The kernel
//! writes the domain with `%04x`, so four digits below `10000` and as many as it needs above;
//! that is the one spelling this type reads and writes.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A PCI address (domain, bus, device, function), written `dddd:bb:dd.f` in lower-case hex
/// (`10000:e1:00.0` for a domain past 16 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bdf {
    /// PCI domain (segment): 32 bits, as the kernel's `pci_domain_nr`.
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
    /// Device number (0 to 31).
    pub device: u8,
    /// Function number (0 to 7).
    pub function: u8,
}

/// Text that is not a PCI address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a PCI address of the form dddd:bb:dd.f")]
#[non_exhaustive]
pub struct BdfError {
    /// The text that was read.
    pub text: String,
}

impl Bdf {
    /// `0000:bb:00.0`: function 0 of device 0 on `bus`, in domain 0, where a single-function
    /// card sits on a host of one PCI segment (the address tests and fakes name most).
    pub const fn on_bus(bus: u8) -> Self {
        Bdf {
            domain: 0,
            bus,
            device: 0,
            function: 0,
        }
    }

    /// Reads the canonical form only: `dddd:bb:dd.f` in lower-case hex, as the protocol writes it.
    pub fn parse_canonical(text: &str) -> Result<Self, BdfError> {
        let bdf: Bdf = text.parse()?;
        if bdf.to_string() == text {
            Ok(bdf)
        } else {
            Err(BdfError {
                text: text.to_owned(),
            })
        }
    }
}

/// Reads `dddd:bb:dd.f` in either case (as a person may type it); [`Bdf::parse_canonical`]
/// is the strict reader of replies. The domain has four hex digits, or five to eight without a
/// leading zero (`10000`): the widths the kernel writes, so each address has one spelling.
impl FromStr for Bdf {
    type Err = BdfError;

    fn from_str(text: &str) -> Result<Self, BdfError> {
        let error = || BdfError {
            text: text.to_owned(),
        };
        let hex = |part: &str, widths: std::ops::RangeInclusive<usize>| {
            if !widths.contains(&part.len()) || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(error());
            }
            u32::from_str_radix(part, 16).map_err(|_| error())
        };
        let (domain, rest) = text.split_once(':').ok_or_else(error)?;
        let (bus, rest) = rest.split_once(':').ok_or_else(error)?;
        let (device, function) = rest.split_once('.').ok_or_else(error)?;
        if domain.len() > 4 && domain.starts_with('0') {
            return Err(error());
        }
        let (domain, bus, device, function) = (
            hex(domain, 4..=8)?,
            hex(bus, 2..=2)?,
            hex(device, 2..=2)?,
            hex(function, 1..=1)?,
        );
        if device > 0x1f || function > 7 {
            return Err(error());
        }
        Ok(Self {
            domain,
            bus: u8::try_from(bus).map_err(|_| error())?,
            device: u8::try_from(device).map_err(|_| error())?,
            function: u8::try_from(function).map_err(|_| error())?,
        })
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl Serialize for Bdf {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Bdf {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Bdf::parse_canonical(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canonical_address_reads_and_writes_back_unchanged() {
        let bdf = Bdf::parse_canonical("0000:3b:00.0");
        assert_eq!(bdf.map(|b| b.to_string()), Ok("0000:3b:00.0".to_owned()));
    }

    #[test]
    fn upper_case_reads_from_people_but_not_from_replies() {
        assert_eq!(
            "0000:3B:00.0".parse::<Bdf>().map(|b| b.to_string()),
            Ok("0000:3b:00.0".into())
        );
        assert!(Bdf::parse_canonical("0000:3B:00.0").is_err());
    }

    #[test]
    fn malformed_addresses_are_refused() {
        for text in [
            "",
            "3b:00.0",
            "0000:3b:00",
            "0000:3b:20.0",
            "0000:3b:00.8",
            "0000:3b:00.0 ",
            "00000:3b:00.0",
            "000010000:3b:00.0",
            "100000000:3b:00.0",
            "0000:g0:00.0",
        ] {
            assert!(text.parse::<Bdf>().is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn a_vmd_domain_past_16_bits_reads_and_writes_back_unchanged() {
        let bdf = Bdf::parse_canonical("10000:e1:00.0");
        assert_eq!(bdf.clone().map(|b| (b.domain, b.bus)), Ok((0x10000, 0xe1)));
        assert_eq!(bdf.map(|b| b.to_string()), Ok("10000:e1:00.0".to_owned()));
        assert_eq!(
            "ffffffff:00:1f.7".parse::<Bdf>().map(|b| b.to_string()),
            Ok("ffffffff:00:1f.7".to_owned())
        );
    }

    #[test]
    fn addresses_sort_by_domain_first_even_past_16_bits() {
        let low: Bdf = "ffff:ff:1f.7".parse().unwrap_or_else(|_| unreachable!());
        let high: Bdf = "10000:00:00.0".parse().unwrap_or_else(|_| unreachable!());
        assert!(low < high);
    }
}
