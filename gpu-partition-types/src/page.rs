//! One page of a reply as read, before the pages are folded into a [`Reply`](crate::Reply).

use crate::Process;
use crate::read::{Decode, Fault, Field, Path, members, required, value};
use crate::{
    Bdf, CardIdentity, Case, Driver, FormatVersion, GpuInstance, Lenient, Mode, Profile,
    UnknownMember, Unreadable, Vgpu, VgpuMode, VgpuType,
};
use serde::de::MapAccess;

crate::record::record! {
    /// `page`: this page's number and how many pages the reply has.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct PageNumber: "a page object", check = index_below_count {
        /// This page, from 0.
        index: required u32 = "index",
        /// How many pages, at least 1.
        count: required u32 = "count",
    }
}

fn index_below_count(page: &PageNumber, at: &Path<'_>) -> Field<()> {
    if page.index >= page.count {
        return Err(Fault::new(
            at,
            crate::Problem::Invalid,
            format!("index {} is not below count {}", page.index, page.count),
        ));
    }
    Ok(())
}

/// A list as one page has it: absent from the page, or there (read or lost).
pub(crate) type PageList<T> = Option<Lenient<Vec<Lenient<T>>>>;

/// A page with every member as it was found; strictness is applied by [`RawPage::strict`].
#[derive(Debug)]
pub(crate) struct RawPage {
    format: Option<Field<FormatVersion>>,
    device: Option<Field<String>>,
    page: Option<Field<PageNumber>>,
    mode: Option<Field<Mode>>,
    case: Option<Field<Case>>,
    unreadable: Option<Field<Unreadable>>,
    driver: Option<Field<Lenient<Driver>>>,
    card: Option<Field<Lenient<CardIdentity>>>,
    profiles: Option<Field<Lenient<Vec<Lenient<Profile>>>>>,
    gpu_instances: Option<Field<Lenient<Vec<Lenient<GpuInstance>>>>>,
    vgpus: Option<Field<Lenient<Vec<Lenient<Vgpu>>>>>,
    processes: Option<Field<Lenient<Vec<Lenient<Process>>>>>,
    vgpu_types: Option<Field<Lenient<Vec<Lenient<VgpuType>>>>>,
    vgpu_mode: Option<Field<Lenient<VgpuMode>>>,
}

/// A page whose strict members all read.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) number: Option<PageNumber>,
    pub(crate) format: FormatVersion,
    pub(crate) device: Bdf,
    pub(crate) mode: Mode,
    pub(crate) case: Case,
    pub(crate) unreadable: Option<Unreadable>,
    pub(crate) driver: Lenient<Driver>,
    pub(crate) card: Lenient<CardIdentity>,
    pub(crate) profiles: PageList<Profile>,
    pub(crate) gpu_instances: PageList<GpuInstance>,
    pub(crate) vgpus: PageList<Vgpu>,
    pub(crate) processes: PageList<Process>,
    pub(crate) vgpu_types: PageList<VgpuType>,
    pub(crate) vgpu_mode: Lenient<VgpuMode>,
    /// The members this reader does not know, pointing into this page.
    pub(crate) unknown: Vec<UnknownMember>,
}

impl RawPage {
    /// Applies the strict members' rules in the order of the protocol's member table, so the
    /// first fault named is the first strict member at fault.
    pub(crate) fn strict(self, asked: Option<&Bdf>) -> Field<Page> {
        let root = Path::ROOT;
        let format: FormatVersion = required(self.format, &root, "format")?;
        format.check_supported().map_err(|error| {
            Fault::new(
                &root.member("format"),
                crate::Problem::Invalid,
                error.to_string(),
            )
        })?;
        let device_text: String = required(self.device, &root, "device")?;
        let device = Bdf::parse_canonical(&device_text).map_err(|error| {
            Fault::new(
                &root.member("device"),
                crate::Problem::Invalid,
                error.to_string(),
            )
        })?;
        if let Some(asked) = asked {
            if *asked != device {
                return Err(Fault::new(
                    &root.member("device"),
                    crate::Problem::Invalid,
                    format!("the reply is for {device}, but {asked} was asked for"),
                ));
            }
        }
        let number = self.page.transpose()?;
        let mode: Mode = required(self.mode, &root, "mode")?;
        let case: Case = required(self.case, &root, "case")?;
        if !mode.capable && matches!(case, Case::Partitions | Case::NoneCarved) {
            return Err(Fault::new(
                &root.member("case"),
                crate::Problem::Invalid,
                format!("case {case} on a card that is not MIG capable"),
            ));
        }
        let unreadable = match case {
            Case::Unreadable => Some(required(self.unreadable, &root, "unreadable")?),
            _ => None,
        };
        Ok(Page {
            number,
            format,
            device,
            mode,
            case,
            unreadable,
            driver: crate::read::lenient(self.driver, &root, "driver"),
            card: crate::read::lenient(self.card, &root, "card"),
            profiles: present(self.profiles),
            gpu_instances: present(self.gpu_instances),
            vgpus: present(self.vgpus),
            processes: present(self.processes),
            vgpu_types: present(self.vgpu_types),
            vgpu_mode: crate::read::lenient(self.vgpu_mode, &root, "vgpu_mode"),
            unknown: Vec::new(),
        })
    }
}

/// A lenient member that may be absent from a page without being lost.
fn present<T>(slot: Option<Field<Lenient<T>>>) -> Option<Lenient<T>> {
    // A lenient unit's field is never a fault: the fault is kept inside as `Lost`.
    slot.and_then(Result::ok)
}

impl Decode for RawPage {
    const EXPECTED: &'static str = "a reply object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let mut page = RawPage {
            format: None,
            device: None,
            page: None,
            mode: None,
            case: None,
            unreadable: None,
            driver: None,
            card: None,
            profiles: None,
            gpu_instances: None,
            vgpus: None,
            processes: None,
            vgpu_types: None,
            vgpu_mode: None,
        };
        members(map, at, |name, map| {
            match name {
                "format" => page.format = Some(value(map, at, name)?),
                "device" => page.device = Some(value(map, at, name)?),
                "page" => page.page = Some(value(map, at, name)?),
                "mode" => page.mode = Some(value(map, at, name)?),
                "case" => page.case = Some(value(map, at, name)?),
                "unreadable" => page.unreadable = Some(value(map, at, name)?),
                "driver" => page.driver = Some(value(map, at, name)?),
                "card" => page.card = Some(value(map, at, name)?),
                "profiles" => page.profiles = Some(value(map, at, name)?),
                "gpu_instances" => page.gpu_instances = Some(value(map, at, name)?),
                "vgpus" => page.vgpus = Some(value(map, at, name)?),
                "processes" => page.processes = Some(value(map, at, name)?),
                "vgpu_types" => page.vgpu_types = Some(value(map, at, name)?),
                "vgpu_mode" => page.vgpu_mode = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(Ok(page))
    }
}
