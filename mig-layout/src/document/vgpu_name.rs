//! vGPU type names as NVIDIA writes them and vgpu-device-manager reads them
//! (`pkg/types/vgpu_type.go`): time-sliced `<GPU>-<GB><S>` (`A100-4C`, `RTX6000-Ada-2Q`) and
//! MIG-backed `<GPU>-<G>-<GB><S>[ME|NOME|MEALL|GFX]` (`A100-1-5C`, `A30-2-12CME`), and the MIG
//! profile a MIG-backed one sits on (`<G>g.<GB>gb`, with `+me`, `-me`, `+me.all` or `+gfx`).
//! Sources: `host-sync/tests/samples/vgpu/CATALOGUE.md`, part A3.

use std::fmt;

/// The series letter: what the type is licensed for (NVIDIA's vGPU user guide: A virtual
/// applications, B virtual PCs, C compute, Q workstations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Series {
    /// `A`.
    A,
    /// `B`.
    B,
    /// `C`.
    C,
    /// `Q`.
    Q,
}

impl Series {
    fn letter(self) -> char {
        match self {
            Self::A => 'A',
            Self::B => 'B',
            Self::C => 'C',
            Self::Q => 'Q',
        }
    }

    fn of(letter: char) -> Option<Self> {
        match letter {
            'A' => Some(Self::A),
            'B' => Some(Self::B),
            'C' => Some(Self::C),
            'Q' => Some(Self::Q),
            _ => None,
        }
    }
}

/// The media-engine attribute of a MIG-backed type, and of the MIG profile it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MigAttribute {
    /// `ME`: the profile with media engines (`+me`).
    Me,
    /// `NOME`: the profile without them (`-me`).
    NoMe,
    /// `MEALL`: every media engine (`+me.all`).
    MeAll,
    /// `GFX`: graphics (`+gfx`).
    Gfx,
}

impl MigAttribute {
    /// As the type name ends.
    fn suffix(self) -> &'static str {
        match self {
            Self::Me => "ME",
            Self::NoMe => "NOME",
            Self::MeAll => "MEALL",
            Self::Gfx => "GFX",
        }
    }

    /// As the MIG profile name ends.
    fn profile_suffix(self) -> &'static str {
        match self {
            Self::Me => "+me",
            Self::NoMe => "-me",
            Self::MeAll => "+me.all",
            Self::Gfx => "+gfx",
        }
    }
}

/// How a vGPU type shares the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VgpuKind {
    /// Time-sliced: the whole GPU's engines, `gb` of framebuffer (0: 512 MB).
    TimeSliced {
        /// Framebuffer in GB.
        gb: u32,
    },
    /// On a GPU instance of `slices` compute slices and `gb` of memory.
    MigBacked {
        /// The GPU instance's compute slices (1 to 9).
        slices: u8,
        /// Its memory in GB.
        gb: u32,
        /// Its media-engine attribute.
        attribute: Option<MigAttribute>,
    },
}

/// A vGPU type's short name (`A100-1-5C`), as a vgpu-device-manager config and the last word of
/// the driver's full name (`NVIDIA A100-1-5C`) give it. Made by parsing only, so that it always
/// writes back as a name that reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct VgpuTypeName {
    /// The GPU part (`A100`, `A100D`, `RTX6000-Ada`).
    pub gpu: String,
    /// Time-sliced or MIG-backed, with its sizes.
    pub kind: VgpuKind,
    /// The series.
    pub series: Series,
}

/// A text that is no vGPU type name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not a vGPU type name ({why}): expected `<GPU>-<GB><series>` (`A100-4C`) or `<GPU>-<slices>-<GB><series>` with an optional ME, NOME, MEALL or GFX (`A100-1-5C`)"
)]
#[non_exhaustive]
pub struct VgpuNameError {
    /// The text.
    pub text: String,
    /// What is wrong.
    pub why: &'static str,
}

/// A number as vgpu-device-manager takes one: `0`, or digits without a leading zero.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if text.len() > 1 && text.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

impl std::str::FromStr for VgpuTypeName {
    type Err = VgpuNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why| VgpuNameError {
            text: text.to_owned(),
            why,
        };
        if text.is_empty()
            || text
                .chars()
                .any(|c| !(c.is_ascii_alphanumeric() || c == '-'))
        {
            return Err(bad("only letters, digits and `-`"));
        }
        // MIG-backed first when it reads so: `<GPU>-<G>-<GB><S><ATTR>`, the GPU part without `-`.
        if let Some(name) = mig_backed(text) {
            return Ok(name);
        }
        // Time-sliced: `<GPU>(-letters)*-<GB><S>`.
        let (gpu, last) = text.rsplit_once('-').ok_or_else(|| bad("no `-`"))?;
        let mut parts = gpu.split('-');
        let head = parts.next().unwrap_or_default();
        if head.is_empty()
            || !head
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Err(bad("the GPU part is upper-case letters and digits"));
        }
        if parts.any(|part| part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphabetic())) {
            return Err(bad("a later part of the GPU name is letters only"));
        }
        let series = last
            .chars()
            .last()
            .and_then(Series::of)
            .ok_or_else(|| bad("the series is A, B, C or Q"))?;
        let gb = number(&last[..last.len() - 1])
            .ok_or_else(|| bad("the framebuffer is a number of GB"))?;
        Ok(Self {
            gpu: gpu.to_owned(),
            kind: VgpuKind::TimeSliced { gb },
            series,
        })
    }
}

fn mig_backed(text: &str) -> Option<VgpuTypeName> {
    let mut parts = text.splitn(3, '-');
    let gpu = parts.next()?;
    let slices = parts.next()?;
    let rest = parts.next()?;
    if gpu.is_empty()
        || !gpu
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return None;
    }
    if slices.len() != 1 || !matches!(slices.as_bytes()[0], b'1'..=b'9') {
        return None;
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let gb = number(&rest[..digits])?;
    let mut tail = rest[digits..].chars();
    let series = Series::of(tail.next()?)?;
    let suffix = tail.as_str();
    let attribute = match suffix {
        "" => None,
        "ME" => Some(MigAttribute::Me),
        "NOME" => Some(MigAttribute::NoMe),
        "MEALL" => Some(MigAttribute::MeAll),
        "GFX" => Some(MigAttribute::Gfx),
        _ => return None,
    };
    Some(VgpuTypeName {
        gpu: gpu.to_owned(),
        kind: VgpuKind::MigBacked {
            slices: slices.as_bytes()[0] - b'0',
            gb,
            attribute,
        },
        series,
    })
}

impl fmt::Display for VgpuTypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            VgpuKind::TimeSliced { gb } => {
                write!(f, "{}-{gb}{}", self.gpu, self.series.letter())
            }
            VgpuKind::MigBacked {
                slices,
                gb,
                attribute,
            } => write!(
                f,
                "{}-{slices}-{gb}{}{}",
                self.gpu,
                self.series.letter(),
                attribute.map_or("", MigAttribute::suffix)
            ),
        }
    }
}

impl VgpuTypeName {
    /// The MIG profile a MIG-backed type sits on (`1g.5gb`, `1g.5gb+me`); `None` for a
    /// time-sliced one.
    pub fn mig_profile(&self) -> Option<String> {
        match self.kind {
            VgpuKind::TimeSliced { .. } => None,
            VgpuKind::MigBacked {
                slices,
                gb,
                attribute,
            } => Some(format!(
                "{slices}g.{gb}gb{}",
                attribute.map_or("", MigAttribute::profile_suffix)
            )),
        }
    }

    /// Whether the type sits on a GPU instance.
    pub fn is_mig_backed(&self) -> bool {
        matches!(self.kind, VgpuKind::MigBacked { .. })
    }

    /// The short name of a driver's full type name: its last word (`NVIDIA A100-1-5C`,
    /// `GRID A100-1-5C` → `A100-1-5C`), as vgpu-device-manager compares them; `None` for a
    /// name of no word.
    pub fn short_name(full: &str) -> Option<&str> {
        full.split_whitespace().last()
    }
}
