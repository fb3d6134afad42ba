//! How each fact reads for people: the message a difference derives from its facts.

use super::fact::Fact;
use crate::card::At;
use gpu_partition_types::Token;
use std::fmt;

/// A mode as people say it.
fn on(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mode {
                capable: false,
                wanted,
                ..
            } => write!(
                f,
                "the card has no MIG mode; the layout wants MIG {}",
                on(*wanted)
            ),
            Self::Mode {
                current,
                pending: Some(pending),
                wanted,
                ..
            } => write!(
                f,
                "MIG is {} now, {} after the next reset; the layout wants it {}",
                on(*current),
                on(*pending),
                on(*wanted)
            ),
            Self::Mode {
                current,
                pending: None,
                wanted,
                ..
            } => write!(
                f,
                "MIG is {}; the layout wants it {}",
                on(*current),
                on(*wanted)
            ),
            Self::Profile { profile } => write!(f, "the card has no profile {profile}"),
            Self::InstanceCount {
                profile,
                found,
                wanted,
            } => write!(
                f,
                "{found} GPU instance(s) of {profile}, the layout wants {wanted}"
            ),
            Self::InstanceMissing { profile, placement } => write!(
                f,
                "no GPU instance of {profile} at {}, where the layout places one",
                At(*placement)
            ),
            Self::InstanceExtra {
                gpu_instance_id,
                profile,
                placement,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) at {} is not in the layout",
                At(*placement)
            ),
            Self::InstanceMoved {
                gpu_instance_id,
                profile,
                found,
                wanted,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) sits at {}; the layout places it at {}",
                At(*found),
                At(*wanted)
            ),
            Self::InstanceMisplaced {
                gpu_instance_id,
                profile,
                placement,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) sits at {}, none of its profile's \
                 placements",
                At(*placement)
            ),
            Self::ComputeInstances {
                gpu_instance_id,
                profile,
                found,
                wanted,
            } => {
                let has = if found.is_empty() {
                    "no compute instance".to_owned()
                } else {
                    let each: Vec<String> = found
                        .iter()
                        .map(|ci| {
                            format!(
                                "{} (profile {} at {})",
                                ci.id,
                                ci.profile_id,
                                At(ci.placement)
                            )
                        })
                        .collect();
                    format!("compute instance(s) {}", each.join(", "))
                };
                let wants = wanted.map_or_else(
                    || "its filling compute instance".to_owned(),
                    |filling| {
                        format!(
                            "one compute instance of profile {} at {}",
                            filling.profile_id,
                            At(filling.placement)
                        )
                    },
                );
                write!(
                    f,
                    "GPU instance {gpu_instance_id} ({profile}) has {has}; the layout wants {wants}"
                )
            }
            Self::Board(change) => write!(f, "{change}"),
            Self::GpuGone => {
                f.write_str("no GPU is at this address any more; the layout was declared on one")
            }
            Self::Unread { reason, detail } => {
                write!(f, "the card did not read ({reason}): {detail}")
            }
            Self::Unreadable { what } => {
                write!(f, "{what} did not read, so nothing can be compared over it")
            }
            Self::VfsGone { declared } => write!(
                f,
                "no virtual function is enabled; {declared} vGPU(s) are declared on them"
            ),
            Self::VgpuCount {
                type_id,
                name,
                found,
                wanted,
            } => write!(
                f,
                "{found} virtual function(s) hold vGPU type {name} ({type_id}), the \
                 declaration wants {wanted}"
            ),
            Self::VgpuExtra { type_id, found } => write!(
                f,
                "{found} virtual function(s) hold vGPU type {type_id}, which the declaration \
                 does not name"
            ),
            Self::VfType {
                index,
                found,
                wanted,
            } => {
                match found {
                    Some(found) => write!(f, "virtual function {index} holds vGPU type {found}")?,
                    None => write!(f, "virtual function {index} holds no vGPU")?,
                }
                match wanted {
                    Some(wanted) => write!(
                        f,
                        "; the declaration puts {} ({}) on it",
                        wanted.name, wanted.type_id
                    ),
                    None => f.write_str("; the declaration puts none on it"),
                }
            }
            Self::Vendor { found, wanted } => write!(
                f,
                "the GPU here is of vendor {}; the declaration is of a GPU of vendor {}",
                found.as_str(),
                wanted.as_str()
            ),
            Self::VfsUnreadable { why } => write!(f, "its virtual functions did not read: {why}"),
            Self::VgpuType { why } => f.write_str(why),
            Self::ComputePartition { found, wanted } => write!(
                f,
                "the compute partition is {found}; the layout wants {wanted}"
            ),
            Self::MemoryPartition {
                found,
                requested,
                wanted,
            } => {
                match found {
                    Some(found) => write!(f, "the memory partition is {found}")?,
                    None => f.write_str("the GPU shows no memory partition")?,
                }
                if let Some(requested) = requested {
                    write!(f, ", {requested} requested and waiting for a driver reload")?;
                }
                write!(f, "; the layout wants {wanted}")
            }
            Self::PartitionsUnread { why } => write!(f, "its partitions did not read: {why}"),
        }
    }
}
