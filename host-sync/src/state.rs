//! [`HostState`]: what a host keeps, as the store writes it; its schema, read from every schema
//! this version knows ([`HostState::from_json`]); and the first member two states differ in
//! ([`first_difference`]), which finds a store that does not keep a member where it happens.

use crate::gpu::GpuRecord;
use crate::record::LayoutRecord;
use crate::status::{HostStatus, StoredReason};
use gpu_host_probe::Boot;
use gpu_partition_types::Bdf;
use layout_model::Declaration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// The layout version of the state file ([`FileStore`](crate::FileStore)). It moves with the
/// members of [`HostState`] (a test holds the members of each schema): a file of a later schema
/// is refused, never guessed at or rewritten, so an older version never drops what a newer one
/// wrote. A database store keeps its own migrations and need not store it: it answers
/// [`HostState::new`]'s (this one) on load.
///
/// - 1: status, reason, message, boot, gpus, synced_at, layout, declared.
/// - 2: lost and restored_at_boot added; a declaration's generation, its lapse, what becomes of
///   instances it does not name, a check's record of writes and adopted instances, differences
///   as typed facts; a declared instance's compute instance no longer stored (it is the one
///   that fills it, from the card's catalogue). A schema-1 file reads: its declaration gets
///   generation 1 and its check is dropped (its differences were prose), so until the next
///   sync the cards' holding is not known.
/// - 3: a declared GPU's vGPUs on its virtual functions (`declared.gpus.*.vgpus`): a schema-2
///   reader would drop them, so the schema moves though no top-level member is added. A
///   schema-2 file reads as it is (no GPU of it has vGPUs declared).
/// - 4: a declared GPU's heterogeneous vGPU mode (`declared.gpus.*.vgpu_heterogeneous`).
/// - 5: AMD Instinct GPUs: a GPU record's partitions as last read and a memory request of ours
///   waiting for a driver reload (`gpus.*.amd`), and a declared GPU's compute and memory
///   partitions (`declared.gpus.*.amd`). A schema-4 file reads as it is (no GPU of it is read
///   or declared so).
/// - 6: a declared GPU is one vendor's, tagged `vendor`: `nvidia` with its MIG members and its
///   VFs' vGPUs in `vgpu` (`{"vfs": "off"}`, `{"vfs": "on", "types": [{"index", "type_id",
///   "name"}], "heterogeneous"}` per VF), or `amd` with `compute`, `memory` and
///   `client_services`. A file of schema 2 to 5 reads: a GPU declared with `amd` becomes an
///   `amd` one, any other an `nvidia` one; its vGPUs declared by count (`vgpus`) become
///   `{"vfs": "counted", …}` (no VF was named then, and none is guessed: the next apply or
///   restore of the GPU declares them per VF), none with the mode off `{"vfs": "off"}`, none
///   with heterogeneous mode on `{"vfs": "on", "types": [], "heterogeneous": true}`.
/// - 7: a GPU record's partitions as last read, with the layout's generation
///   (`gpus.*.division`: `generation`, `partitions`, `read_at`, `boot_id`, `boot_time`, `writes`,
///   `unread`). A schema-6 file reads as it is (no GPU of it was listed yet: the next read
///   starts each GPU's generation at 1).
/// - 8: a declared NVIDIA GPU's owned instances (`declared.gpus.*.owners`: `profile_id`,
///   `placement`, `owner`), and a row's owner (`gpus.*.division.partitions[].owner`). A file of
///   schema 2 to 7 reads as it is (nothing of it was owned).
/// - 9: who owns each GPU not ours (`ownership`: `dynamic` or `external` by address; a GPU
///   absent is `host`). A file of schema 1 to 8 reads as it is (every GPU was ours).
/// - 10: an NVIDIA GPU's architecture as its last answered read gave it
///   (`gpus.*.architecture`: NVML's number, `nvmlDeviceArchitecture_t`), from which what a
///   restart keeps of its division is judged. A file of schema 1 to 9 reads as it is (no
///   architecture known until the next read).
pub const SCHEMA: u32 = 11;

/// The state file that did not read, as the store found it: kept aside, with why. While it is
/// set the host says so (reason `state_lost`), and a boot restore fails: what the host was
/// declared to be is not known. An apply or leave that declares anew ends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StateLost {
    /// Where the state that did not read was kept aside.
    pub kept: PathBuf,
    /// When it was found (Unix seconds).
    pub at: u64,
    /// Why it did not read, for people.
    pub why: String,
}

impl StateLost {
    /// The state kept aside at `kept`, found at `at`, not read for `why`.
    pub fn new(kept: impl Into<PathBuf>, at: u64, why: impl Into<String>) -> Self {
        Self {
            kept: kept.into(),
            at,
            why: why.into(),
        }
    }
}

impl fmt::Display for StateLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stored state did not read ({}); it is kept aside as {}, and what the host was \
             declared to be is not known: put a good copy back, or declare a layout anew",
            self.why,
            self.kept.display()
        )
    }
}

/// The boot restore that ran last: in which boot, and when. A boot restore runs once per boot
/// by itself: a second one in the same boot does nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BootRestore {
    /// The boot it ran in (`boot_id`, `boot_time`).
    #[serde(flatten)]
    pub boot: Boot,
    /// When it started (Unix seconds).
    pub at: u64,
}

impl BootRestore {
    /// A boot restore in `boot`, started at `at`.
    pub fn new(boot: Boot, at: u64) -> Self {
        Self { boot, at }
    }
}

/// The host fields, the boot of the last sync, and each GPU's record. Every field is part of
/// the store's contract ([`StateStore`](crate::StateStore)); a member added moves [`SCHEMA`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostState {
    /// The layout version of the state file ([`SCHEMA`]).
    pub schema: u32,
    /// `gpu_partitioning_status`.
    pub status: HostStatus,
    /// `gpu_partitioning_reason`: stored with the status, in the same write.
    pub reason: StoredReason,
    /// Why the host has its reason, for people (the helper that could not be used, say);
    /// `None` when there is nothing to explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The boot of the last sync: its boot id and boot time, each when it was readable
    /// (`boot_id` and `boot_time` in the file). A store must keep it: the next sync compares
    /// it with the boot now to find the first start after a boot.
    #[serde(flatten)]
    pub boot: Boot,
    /// Each GPU, by address.
    #[serde(default)]
    pub gpus: BTreeMap<Bdf, GpuRecord>,
    /// When the last sync finished (Unix seconds); `None` before the first, and in files of
    /// versions that did not write it (`synced_at` in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_at: Option<u64>,
    /// The last MIG layout apply, while it runs and after it ended; `None` before the first
    /// (and in files of versions that did not write it). A store must keep it: an unhealed
    /// failure in it is what keeps the host `entering (layout_failed)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutRecord>,
    /// What the host is declared to be (the last apply or leave that wrote), with how the cards
    /// compared with it at the last sync that read them; `None` before the first. A store must
    /// keep it: it is what a restore brings the cards back to, and its check is what keeps the
    /// host `entering (layout_drifted)` while the cards differ. An apply that declares reads it
    /// back under the lock and fails when the store did not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<Declaration>,
    /// The stored state that did not read and was kept aside, while no declaration replaced it
    /// (schema 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<StateLost>,
    /// The last boot restore (schema 2): a second in the same boot does nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_at_boot: Option<BootRestore>,
    /// Who owns each GPU that is not ours (schema 9; [`crate::set_ownership`]): no writing
    /// path writes, restores or resets it. A store must keep it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ownership: BTreeMap<Bdf, gpu_host_probe::Ownership>,
}

impl HostState {
    /// A state as a store keeps it, from its host fields: schema [`SCHEMA`], no boot, no GPU,
    /// no message, never synced. The other fields are set as fields.
    pub fn new(status: HostStatus, reason: StoredReason) -> Self {
        Self {
            schema: SCHEMA,
            status,
            reason,
            message: None,
            boot: Boot::default(),
            gpus: BTreeMap::new(),
            synced_at: None,
            layout: None,
            declared: None,
            lost: None,
            restored_at_boot: None,
            ownership: BTreeMap::new(),
        }
    }

    /// The state of a host whose stored state did not read (`lost`): nothing else is known of
    /// it, and every sync says so (`state_lost`) until an apply or a leave declares it again (or
    /// the last good copy is put back).
    pub fn lost(lost: StateLost) -> Self {
        let mut state = Self::new(
            HostStatus::NotReported,
            crate::status::HostReason::StateLost.into(),
        );
        state.message = Some(lost.to_string());
        state.lost = Some(lost);
        state
    }

    /// Reads a state file of any schema this version knows (1 to [`SCHEMA`]); a later schema is
    /// refused with both numbers, whole JSON that does not fit is a value this version does not
    /// read, anything else a torn file.
    pub fn from_json(bytes: &[u8]) -> Result<HostState, StateReadError> {
        let mut value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(StateReadError::Torn)?;
        let schema = value.get("schema").and_then(serde_json::Value::as_u64);
        match schema {
            Some(found) if found > u64::from(SCHEMA) => {
                return Err(StateReadError::NewerSchema {
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                });
            }
            Some(1) => {
                migrate_from_1(&mut value);
                migrate_to_6(&mut value);
            }
            Some(2..=5) => migrate_to_6(&mut value),
            // No version wrote a schema below 1: not a state of ours.
            Some(0) => {
                return Err(StateReadError::Unsupported(serde::de::Error::custom(
                    "schema 0 was never written by any version",
                )));
            }
            _ => {}
        }
        let mut state: HostState =
            serde_json::from_value(value).map_err(StateReadError::Unsupported)?;
        state.schema = SCHEMA;
        Ok(state)
    }
}

/// A schema-1 file as schema 2 reads it: its declaration is the first counted one, and its
/// check (differences as prose) is dropped, so the next sync checks the cards afresh.
fn migrate_from_1(value: &mut serde_json::Value) {
    if let Some(declared) = value
        .get_mut("declared")
        .and_then(serde_json::Value::as_object_mut)
    {
        declared.remove("check");
        declared
            .entry("generation")
            .or_insert(serde_json::Value::from(1));
    }
    if let Some(schema) = value.get_mut("schema") {
        *schema = serde_json::Value::from(SCHEMA);
    }
}

/// A file of schema 2 to 5 as schema 6 reads it: each declared GPU tagged with its vendor, an
/// NVIDIA GPU's vGPUs (by count then) under `vgpu`.
fn migrate_to_6(value: &mut serde_json::Value) {
    use serde_json::{Value, json};
    let gpus = value
        .get_mut("declared")
        .and_then(|declared| declared.get_mut("gpus"))
        .and_then(Value::as_object_mut);
    for gpu in gpus.into_iter().flat_map(|gpus| gpus.values_mut()) {
        let Some(members) = gpu.as_object_mut() else {
            continue;
        };
        if let Some(amd) = members.remove("amd") {
            // An AMD GPU declared only its partitions.
            let mut amd = amd;
            if let Some(partitions) = amd.as_object_mut() {
                partitions.insert("vendor".to_owned(), json!("amd"));
            }
            *gpu = amd;
            continue;
        }
        let vgpus = members.remove("vgpus");
        let heterogeneous = members
            .remove("vgpu_heterogeneous")
            .and_then(|on| on.as_bool())
            .unwrap_or(false);
        let vgpu = match vgpus.as_ref().and_then(Value::as_array) {
            None => None,
            Some(types) if types.is_empty() && !heterogeneous => Some(json!({"vfs": "off"})),
            Some(types) if types.is_empty() => {
                Some(json!({"vfs": "on", "types": [], "heterogeneous": true}))
            }
            Some(types) => Some(json!({
                "vfs": "counted", "types": types, "heterogeneous": heterogeneous,
            })),
        };
        members.insert("vendor".to_owned(), json!("nvidia"));
        if let Some(vgpu) = vgpu {
            members.insert("vgpu".to_owned(), vgpu);
        }
    }
    if let Some(schema) = value.get_mut("schema") {
        *schema = Value::from(SCHEMA);
    }
}

impl Default for HostState {
    /// A host that never synced: `not_reported`, no GPU.
    fn default() -> Self {
        Self::new(HostStatus::NotReported, StoredReason::none())
    }
}

/// Why a state file did not read ([`HostState::from_json`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateReadError {
    /// It is not whole JSON: torn, truncated, or written by hand.
    #[error("it is not a whole JSON document")]
    Torn(#[source] serde_json::Error),
    /// It is of a later schema than this version reads.
    #[error("it has schema {found}; this version reads schema {SCHEMA} and earlier")]
    NewerSchema {
        /// Its schema.
        found: u32,
    },
    /// It is whole JSON holding what this version does not read (a value of a later version,
    /// an edit by hand).
    #[error("it holds what this version does not read")]
    Unsupported(#[source] serde_json::Error),
}

/// The first member in which two states differ, by its path (`declared`,
/// `declared.gpus.0000:3b:00.0.board.serial`): what a store lost or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldDifference {
    /// The member's path, members joined by `.`, list entries by their position.
    pub path: String,
    /// What was saved there, in short (`Some(..)`, `None`, a value).
    pub saved: String,
    /// What was loaded there.
    pub loaded: String,
}

impl fmt::Display for FieldDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: saved {}, loaded {}",
            self.path, self.saved, self.loaded
        )
    }
}

/// The first member (members by name, depth first; list entries by position) in which `loaded`
/// differs from `saved`; `None` when they are equal.
pub fn first_difference(saved: &HostState, loaded: &HostState) -> Option<FieldDifference> {
    let (Ok(saved_value), Ok(loaded_value)) =
        (serde_json::to_value(saved), serde_json::to_value(loaded))
    else {
        return (saved != loaded).then(|| FieldDifference {
            path: String::new(),
            saved: format!("{saved:?}"),
            loaded: format!("{loaded:?}"),
        });
    };
    let found = walk(String::new(), Some(&saved_value), Some(&loaded_value));
    match found {
        None if saved != loaded => Some(FieldDifference {
            path: String::new(),
            saved: "a state".to_owned(),
            loaded: "another state that writes alike".to_owned(),
        }),
        found => found,
    }
}

fn short(value: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => "None".to_owned(),
        Some(Value::Object(_)) => "Some(..)".to_owned(),
        Some(Value::Array(items)) => format!("[{} item(s)]", items.len()),
        Some(scalar) => scalar.to_string(),
    }
}

fn walk(
    path: String,
    saved: Option<&serde_json::Value>,
    loaded: Option<&serde_json::Value>,
) -> Option<FieldDifference> {
    use serde_json::Value;
    let join = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    match (saved, loaded) {
        (Some(Value::Object(one)), Some(Value::Object(two))) => {
            let mut names: Vec<&String> = one.keys().chain(two.keys()).collect();
            names.sort();
            names.dedup();
            names
                .into_iter()
                .find_map(|name| walk(join(name), one.get(name), two.get(name)))
        }
        (Some(Value::Array(one)), Some(Value::Array(two))) if one.len() == two.len() => one
            .iter()
            .zip(two)
            .enumerate()
            .find_map(|(at, (a, b))| walk(join(&at.to_string()), Some(a), Some(b))),
        (one, two) if one == two => None,
        (None, Some(Value::Null)) | (Some(Value::Null), None) => None,
        (one, two) => Some(FieldDifference {
            path,
            saved: short(one),
            loaded: short(two),
        }),
    }
}
