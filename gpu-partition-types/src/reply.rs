//! [`Reply`]: the folded reply of `read`, and its writer. It is read ([`Reply::from_json`]) where
//! its pages are folded, in `fold`.

use crate::Process;
use crate::{
    Bdf, CardArchitecture, CardIdentity, Case, Driver, FormatVersion, GpuInstance, JsonPointer,
    Lenient, LostMember, Mode, Outcome, Profile, UnknownMember, Unreadable, UnreadableReason, Vgpu,
    VgpuMode, VgpuType,
};

/// The reply of `HELPER read`, with its pages folded into one.
///
/// Strict members are plain values: a reply whose strict members do not read is refused as a
/// whole. Lenient members are [`Lenient`]: a fault costs that member only. Written (serialized)
/// as one page: see [`Reply::to_json`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reply {
    /// The format the reply was written in (major 1).
    pub format: FormatVersion,
    /// The card read.
    pub device: Bdf,
    /// MIG capability and mode.
    pub mode: Mode,
    /// What the helper found.
    pub case: Case,
    /// Why the card could not be read; present exactly when `case` is `unreadable`.
    pub unreadable: Option<Unreadable>,
    /// Driver versions.
    pub driver: Lenient<Driver>,
    /// Which board was read: its model, serial and UUID (format 1.2; a reply of an earlier
    /// minor reads with it lost).
    pub card: Lenient<CardIdentity>,
    /// The profile catalogue.
    pub profiles: Lenient<Vec<Lenient<Profile>>>,
    /// The GPU instances.
    pub gpu_instances: Lenient<Vec<Lenient<GpuInstance>>>,
    /// The vGPUs on the card.
    pub vgpus: Lenient<Vec<Lenient<Vgpu>>>,
    /// The processes holding the card (format 1.1; a reply of 1.0 reads with it lost).
    pub processes: Lenient<Vec<Lenient<Process>>>,
    /// The vGPU types the card supports (format 1.3; a reply of an earlier minor reads with
    /// it lost).
    pub vgpu_types: Lenient<Vec<Lenient<VgpuType>>>,
    /// The card's vGPU mode (format 1.3; a reply of an earlier minor reads with it lost).
    pub vgpu_mode: Lenient<VgpuMode>,
    /// The members this reader does not know (a later minor's), sorted by pointer: not kept,
    /// not written back, but listed so that a caller sees what it was not told. Unknown
    /// *values* of known members are [`Reply::unknown`].
    pub unknown_members: Vec<UnknownMember>,
}

impl Reply {
    /// A reply of these strict members, every list empty and `driver` unset (not written);
    /// `unreadable` is set for `case` `unreadable` with [`Reply::unreadable`].
    pub fn new(format: FormatVersion, device: Bdf, mode: Mode, case: Case) -> Self {
        Self {
            format,
            device,
            mode,
            case,
            unreadable: None,
            driver: crate::record::unset(),
            card: crate::record::unset(),
            profiles: Lenient::Read(Vec::new()),
            gpu_instances: Lenient::Read(Vec::new()),
            vgpus: Lenient::Read(Vec::new()),
            processes: Lenient::Read(Vec::new()),
            vgpu_types: Lenient::Read(Vec::new()),
            vgpu_mode: crate::record::unset(),
            unknown_members: Vec::new(),
        }
    }

    /// What the reply says of the card, for the caller of the probe.
    pub fn outcome(&self) -> Outcome {
        match self.case {
            Case::Partitions => Outcome::Partitions {
                mode: self.mode,
                instances: read_items(&self.gpu_instances),
                catalogue: read_items(&self.profiles),
                vgpus: read_items(&self.vgpus),
            },
            Case::NoneCarved => Outcome::NoneCarved {
                mode: self.mode,
                catalogue: read_items(&self.profiles),
            },
            // A reply built by hand may lack `unreadable`; the reader refuses such a reply, so
            // saying "undecodable" here never hides a reason the helper gave.
            Case::Unreadable => Outcome::Unreadable(match &self.unreadable {
                Some(unreadable) => UnreadableReason::Helper(unreadable.kind.clone()),
                None => UnreadableReason::Undecodable,
            }),
            Case::NotApplicable => Outcome::NotApplicable,
        }
    }

    /// The lenient members kept as lost, sorted by pointer (`unreadable.message` is left out:
    /// it is reported in logs only).
    pub fn lost(&self) -> Vec<&LostMember> {
        let mut lost: Vec<&LostMember> = Vec::new();
        lost.extend(self.driver.lost());
        match &self.card {
            Lenient::Read(card) => card.lost_into(&mut lost),
            Lenient::Lost(member) => lost.push(member),
        }
        collect_lost(&self.profiles, &mut lost, Profile::lost_into);
        collect_lost(&self.gpu_instances, &mut lost, GpuInstance::lost_into);
        collect_lost(&self.vgpus, &mut lost, Vgpu::lost_into);
        collect_lost(&self.processes, &mut lost, Process::lost_into);
        collect_lost(&self.vgpu_types, &mut lost, VgpuType::lost_into);
        lost.extend(self.vgpu_mode.lost());
        lost.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        lost
    }

    /// The card's architecture, when the reply says it (format 1.4): `None` for a reply of an
    /// earlier minor, or one whose `card` or `card.architecture` was lost.
    pub fn architecture(&self) -> Option<CardArchitecture> {
        self.card
            .read()
            .and_then(|card| card.architecture.read())
            .copied()
    }

    /// The enumeration values kept as unknown, as pointers into the reply, sorted.
    pub fn unknown(&self) -> Vec<JsonPointer> {
        let mut unknown = Vec::new();
        if let Some(CardArchitecture::Unknown(_)) = self.architecture() {
            unknown.push(JsonPointer::root().member("card").member("architecture"));
        }
        let profiles = self.profiles.read().map(Vec::as_slice).unwrap_or_default();
        for (index, profile) in profiles.iter().enumerate() {
            let Some(signature) = profile.read().and_then(|profile| profile.signature.read())
            else {
                continue;
            };
            for (slot, capability) in signature.capabilities.iter().enumerate() {
                if capability.known().is_none() {
                    unknown.push(
                        JsonPointer::root()
                            .member("profiles")
                            .index(index)
                            .member("signature")
                            .member("capabilities")
                            .index(slot),
                    );
                }
            }
        }
        unknown
    }
}

/// The elements of a lenient list that were read.
fn read_items<T: Clone>(list: &Lenient<Vec<Lenient<T>>>) -> Vec<T> {
    list.read()
        .map(|items| items.iter().filter_map(Lenient::read).cloned().collect())
        .unwrap_or_default()
}

fn collect_lost<'a, T>(
    list: &'a Lenient<Vec<Lenient<T>>>,
    lost: &mut Vec<&'a LostMember>,
    inside: impl Fn(&'a T, &mut Vec<&'a LostMember>),
) {
    match list {
        Lenient::Lost(member) => lost.push(member),
        Lenient::Read(items) => {
            for item in items {
                match item {
                    Lenient::Lost(member) => lost.push(member),
                    Lenient::Read(item) => inside(item, lost),
                }
            }
        }
    }
}
