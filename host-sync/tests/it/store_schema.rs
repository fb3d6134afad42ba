//! The state file's schema: the members at each schema (a member added without the schema
//! moving fails), and files of older schemas read and moved forward, later ones refused as they
//! are.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use host_sync::{FileStore, HostState, StateStore};

/// The members of a state file at each schema: a member added to `HostState` without its
/// schema moving fails here (an older version would read the newer file and drop it).
const MEMBERS: [(u32, &[&str]); 11] = [
    (
        1,
        &[
            "boot_id",
            "boot_time",
            "declared",
            "gpus",
            "layout",
            "message",
            "reason",
            "schema",
            "status",
            "synced_at",
        ],
    ),
    (2, &["lost", "restored_at_boot"]),
    // A member of a declared GPU (`vgpus`), none at the top.
    (3, &[]),
    // A member of a declared GPU (`vgpu_heterogeneous`), none at the top.
    (4, &[]),
    // A member of a GPU record and of a declared GPU (`amd`), none at the top.
    (5, &[]),
    // A declared GPU tagged with its vendor, its vGPUs per VF (`vgpu`), none at the top.
    (6, &[]),
    // A member of a GPU record (`division`), none at the top.
    (7, &[]),
    // Members of a declared GPU (`owners`) and of a row (`owner`), none at the top.
    (8, &[]),
    (9, &["ownership"]),
    // A member of a GPU record (`architecture`), none at the top.
    (10, &[]),
    // A member of a GPU record's division (`unadmitted`), none at the top.
    (11, &[]),
];

#[test]
fn the_schema_moves_with_the_members_of_the_state() {
    let mut state = HostState::lost(host_sync::StateLost::new("/x", 1, "torn"));
    state.message = Some("why".into());
    state.boot = host_sync::Boot::new(Some("b".into()), Some(2));
    state.synced_at = Some(3);
    state.declared = Some(layout_model::Declaration::new(
        "l",
        1,
        None,
        Default::default(),
    ));
    state.layout = Some(host_sync::LayoutRecord::applying(
        "l",
        host_sync::Direction::Entering,
        1,
        None,
    ));
    state.restored_at_boot = Some(host_sync::BootRestore::new(host_sync::Boot::default(), 4));
    state.ownership.insert(
        "0000:3c:00.0".parse().unwrap(),
        gpu_host_probe::Ownership::Dynamic,
    );
    state.gpus.insert(
        "0000:3b:00.0".parse().unwrap(),
        host_sync::GpuRecord::new(
            0x10de,
            0x20b0,
            None,
            gpu_partition_types::PartitionMode::NotInUse,
        ),
    );
    let value = serde_json::to_value(&state).unwrap();
    let mut written: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    written.sort_unstable();
    let mut known: Vec<&str> = MEMBERS
        .iter()
        .filter(|(schema, _)| *schema <= host_sync::SCHEMA)
        .flat_map(|(_, members)| members.iter().copied())
        .collect();
    known.sort_unstable();
    assert_eq!(
        (host_sync::SCHEMA, written),
        (MEMBERS.len() as u32, known),
        "a member of HostState was added or removed: move SCHEMA and list the members here"
    );
}

/// Every member of a state file at the schema it names, nested ones by their paths (a map's
/// keys — GPU addresses — as `*`, a list's entries as `[]`): a member added anywhere in the
/// state without the schema moving fails here, naming it, as one removed does. Walked over
/// every state of the conformance suite, which between them set every member.
const NESTED: (u32, &[&str]) = (
    11,
    &[
        "boot_id",
        "boot_time",
        "declared",
        "declared.check",
        "declared.check.adopted",
        "declared.check.adopted[].device",
        "declared.check.adopted[].gpu_instance_id",
        "declared.check.adopted[].placement",
        "declared.check.adopted[].placement.size",
        "declared.check.adopted[].placement.start",
        "declared.check.adopted[].profile",
        "declared.check.adopted[].profile.id",
        "declared.check.adopted[].profile.name",
        "declared.check.boot_id",
        "declared.check.boot_time",
        "declared.check.checked_at",
        "declared.check.differences",
        "declared.check.differences[].by",
        "declared.check.differences[].capable",
        "declared.check.differences[].change",
        "declared.check.differences[].current",
        "declared.check.differences[].declared",
        "declared.check.differences[].detail",
        "declared.check.differences[].device",
        "declared.check.differences[].found",
        "declared.check.differences[].found.size",
        "declared.check.differences[].found.start",
        "declared.check.differences[].found[].id",
        "declared.check.differences[].found[].placement",
        "declared.check.differences[].found[].placement.size",
        "declared.check.differences[].found[].placement.start",
        "declared.check.differences[].found[].profile_id",
        "declared.check.differences[].gpu_instance_id",
        "declared.check.differences[].index",
        "declared.check.differences[].kind",
        "declared.check.differences[].message",
        "declared.check.differences[].model",
        "declared.check.differences[].name",
        "declared.check.differences[].pending",
        "declared.check.differences[].placement",
        "declared.check.differences[].placement.size",
        "declared.check.differences[].placement.start",
        "declared.check.differences[].profile",
        "declared.check.differences[].profile.id",
        "declared.check.differences[].profile.name",
        "declared.check.differences[].reason",
        "declared.check.differences[].requested",
        "declared.check.differences[].type_id",
        "declared.check.differences[].wanted",
        "declared.check.differences[].wanted.index",
        "declared.check.differences[].wanted.name",
        "declared.check.differences[].wanted.placement",
        "declared.check.differences[].wanted.placement.size",
        "declared.check.differences[].wanted.placement.start",
        "declared.check.differences[].wanted.profile_id",
        "declared.check.differences[].wanted.size",
        "declared.check.differences[].wanted.start",
        "declared.check.differences[].wanted.type_id",
        "declared.check.differences[].what",
        "declared.check.differences[].what.gpu_instance_id",
        "declared.check.differences[].what.member",
        "declared.check.differences[].why",
        "declared.check.unread",
        "declared.check.writes",
        "declared.check.writes.ledger",
        "declared.check.writes.seq",
        "declared.declared_at",
        "declared.generation",
        "declared.gpus",
        "declared.gpus.*",
        "declared.gpus.*.board",
        "declared.gpus.*.board.model",
        "declared.gpus.*.board.serial",
        "declared.gpus.*.board.uuid",
        "declared.gpus.*.client_services",
        "declared.gpus.*.compute",
        "declared.gpus.*.instances",
        "declared.gpus.*.instances[].placement",
        "declared.gpus.*.instances[].placement.size",
        "declared.gpus.*.instances[].placement.start",
        "declared.gpus.*.instances[].profile_id",
        "declared.gpus.*.memory",
        "declared.gpus.*.mig_enabled",
        "declared.gpus.*.profiles",
        "declared.gpus.*.profiles[].count",
        "declared.gpus.*.profiles[].profile",
        "declared.gpus.*.unnamed",
        "declared.gpus.*.vendor",
        "declared.gpus.*.vgpu",
        "declared.gpus.*.vgpu.heterogeneous",
        "declared.gpus.*.vgpu.types",
        "declared.gpus.*.vgpu.types[].count",
        "declared.gpus.*.vgpu.types[].index",
        "declared.gpus.*.vgpu.types[].name",
        "declared.gpus.*.vgpu.types[].type_id",
        "declared.gpus.*.vgpu.vfs",
        "declared.label",
        "declared.lapsed",
        "declared.lapsed.at",
        "declared.lapsed.why",
        "gpus",
        "gpus.*",
        "gpus.*.amd",
        "gpus.*.amd.compute",
        "gpus.*.amd.memory",
        "gpus.*.amd.read_at",
        "gpus.*.amd.requested",
        "gpus.*.amd.requested.at",
        "gpus.*.amd.requested.boot_id",
        "gpus.*.amd.requested.boot_time",
        "gpus.*.amd.requested.mode",
        "gpus.*.architecture",
        "gpus.*.device",
        "declared.gpus.*.owners",
        "declared.gpus.*.owners[].owner",
        "declared.gpus.*.owners[].placement",
        "declared.gpus.*.owners[].placement.size",
        "declared.gpus.*.owners[].placement.start",
        "declared.gpus.*.owners[].profile_id",
        "gpus.*.division.partitions[].owner",
        "ownership",
        "ownership.*",
        "gpus.*.division",
        "gpus.*.division.boot_id",
        "gpus.*.division.boot_time",
        "gpus.*.division.generation",
        "gpus.*.division.partitions",
        "gpus.*.division.partitions[].compute",
        "gpus.*.division.partitions[].on",
        "gpus.*.division.partitions[].ordinal",
        "gpus.*.division.partitions[].origin",
        "gpus.*.division.partitions[].placement",
        "gpus.*.division.partitions[].placement.size",
        "gpus.*.division.partitions[].placement.start",
        "gpus.*.division.partitions[].profile",
        "gpus.*.division.partitions[].profile.compute",
        "gpus.*.division.partitions[].profile.id",
        "gpus.*.division.partitions[].profile.kind",
        "gpus.*.division.partitions[].profile.name",
        "gpus.*.division.partitions[].profile.type_id",
        "gpus.*.division.partitions[].slot",
        "gpus.*.division.partitions[].slot.id",
        "gpus.*.division.partitions[].slot.index",
        "gpus.*.division.partitions[].slot.kind",
        "gpus.*.division.read_at",
        "gpus.*.division.unadmitted",
        "gpus.*.division.unadmitted[].placement",
        "gpus.*.division.unadmitted[].placement.size",
        "gpus.*.division.unadmitted[].placement.start",
        "gpus.*.division.unadmitted[].profile_id",
        "gpus.*.division.unread",
        "gpus.*.division.unread.at",
        "gpus.*.division.unread.why",
        "gpus.*.division.writes",
        "gpus.*.division.writes.ledger",
        "gpus.*.division.writes.seq",
        "gpus.*.driver",
        "gpus.*.last_read",
        "gpus.*.message",
        "gpus.*.partition_mode",
        "gpus.*.reason",
        "gpus.*.vendor",
        "layout",
        "layout.direction",
        "layout.finished_at",
        "layout.label",
        "layout.message",
        "layout.outcome",
        "layout.reason",
        "layout.started_at",
        "layout.unhealed",
        "layout.unhealed.direction",
        "layout.unhealed.label",
        "layout.unhealed.message",
        "layout.unhealed.reason",
        "layout.unhealed.started_at",
        "lost",
        "lost.at",
        "lost.kept",
        "lost.why",
        "message",
        "reason",
        "restored_at_boot",
        "restored_at_boot.at",
        "restored_at_boot.boot_id",
        "restored_at_boot.boot_time",
        "schema",
        "status",
        "synced_at",
    ],
);

/// The member paths of `value` under `path`, into `paths`.
fn member_paths(
    value: &serde_json::Value,
    path: &str,
    paths: &mut std::collections::BTreeSet<String>,
) {
    use serde_json::Value;
    let keyed_by_device = path == "gpus" || path == "declared.gpus" || path == "ownership";
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                let name = if keyed_by_device { "*" } else { name.as_str() };
                let inner = if path.is_empty() {
                    name.to_owned()
                } else {
                    format!("{path}.{name}")
                };
                paths.insert(inner.clone());
                member_paths(member, &inner, paths);
            }
        }
        Value::Array(entries) => {
            for entry in entries {
                member_paths(entry, &format!("{path}[]"), paths);
            }
        }
        _ => {}
    }
}

#[test]
fn the_schema_moves_with_every_member_of_the_state_nested_ones_too() {
    let mut paths = std::collections::BTreeSet::new();
    for (_, state) in host_sync::conformance::states() {
        member_paths(&serde_json::to_value(&state).unwrap(), "", &mut paths);
    }
    let known: std::collections::BTreeSet<String> =
        NESTED.1.iter().map(|path| (*path).to_owned()).collect();
    let added: Vec<&String> = paths.difference(&known).collect();
    let removed: Vec<&String> = known.difference(&paths).collect();
    assert_eq!(
        (host_sync::SCHEMA, added, removed),
        (NESTED.0, Vec::new(), Vec::new()),
        "a member of the state was added or removed (first list: added; second: removed): move \
         SCHEMA, migrate the schema before it, and list the members here"
    );
}

#[test]
fn a_file_of_schema_1_reads_its_declaration_as_the_first_generation_and_its_check_is_dropped() {
    let text = r#"{"schema": 1, "status": "active", "reason": "ready",
        "boot_id": "5a3c", "gpus": {},
        "declared": {"label": "all-balanced", "declared_at": 10,
          "gpus": {"0000:3b:00.0": {"mig_enabled": true,
            "profiles": [{"profile": "1g.5gb", "count": 1}],
            "instances": [{"profile_id": 19, "placement": {"start": 0, "size": 1},
              "compute_profile_id": 0, "compute_placement": {"start": 0, "size": 1}}],
            "board": {"model": "NVIDIA A100-SXM4-40GB"}}},
          "check": {"checked_at": 20, "boot_id": "5a3c",
            "differences": [{"device": "0000:3b:00.0", "kind": "gpu_instances",
              "message": "0 GPU instance(s) of 1g.5gb, the layout wants 1"}],
            "unread": []}}}"#;
    let state = HostState::from_json(text.as_bytes()).unwrap();
    assert_eq!(state.schema, host_sync::SCHEMA);
    let declared = state.declared.unwrap();
    assert_eq!(declared.generation, 1);
    assert_eq!(declared.check, None);
    let gpu = &declared.gpus[&"0000:3b:00.0".parse().unwrap()];
    let nvidia = gpu.nvidia().unwrap();
    assert_eq!(nvidia.instances.as_ref().map(Vec::len), Some(1));
}

/// A state file as the previous release (schema 5) wrote it: an A100 with MIG and vGPUs
/// declared by count, one whose vGPUs were left (none, the VFs off), one with heterogeneous mode
/// and no type yet, an MI300X declared CPX+NPS4 whose record keeps a memory request of ours,
/// and the check of a sync.
const SCHEMA_5: &str = r#"{"schema": 5, "status": "active", "reason": "ready",
  "boot_id": "5a3c", "boot_time": 1767225600, "synced_at": 1767229200,
  "gpus": {
    "0000:05:00.0": {"vendor": "1002", "device": "74a1", "driver": "amdgpu",
      "partition_mode": "enabled", "reason": "", "last_read": "enabled",
      "amd": {"compute": "CPX", "memory": "NPS4", "read_at": 1767229150}},
    "0000:3b:00.0": {"vendor": "10de", "device": "20f1", "driver": "nvidia",
      "partition_mode": "enabled", "reason": "", "last_read": "enabled"}},
  "declared": {"label": "mixed", "declared_at": 1767229000, "generation": 3,
    "gpus": {
      "0000:05:00.0": {"mig_enabled": false, "profiles": [], "unnamed": "match", "board": {},
        "amd": {"compute": "CPX", "memory": "NPS4"}},
      "0000:3b:00.0": {"mig_enabled": true,
        "profiles": [{"profile": "1g.5gb", "count": 7}],
        "instances": [{"profile_id": 19, "placement": {"start": 0, "size": 1}}],
        "unnamed": "match", "board": {"model": "NVIDIA A100-PCIE-40GB"},
        "vgpus": [{"type_id": 474, "name": "A100-1-5C", "count": 7}]},
      "0000:3c:00.0": {"mig_enabled": false, "profiles": [], "unnamed": "match",
        "board": {}, "vgpus": []},
      "0000:3d:00.0": {"mig_enabled": false, "profiles": [], "unnamed": "match",
        "board": {}, "vgpus": [], "vgpu_heterogeneous": true}},
    "check": {"checked_at": 1767229200, "boot_id": "5a3c", "boot_time": 1767225600,
      "differences": [{"device": "0000:3b:00.0", "kind": "vgpu_count", "type_id": 474,
        "name": "A100-1-5C", "found": 6, "wanted": 7, "message": "…"}],
      "unread": []}}}"#;

#[test]
fn a_file_of_schema_5_reads_each_declared_gpu_as_its_vendors_and_vgpus_by_count_as_counted() {
    use gpu_partition_types::VgpuTypeId;
    use layout_model::{DeclaredGpu, DeclaredVgpu, VgpuDeclared};
    let state = HostState::from_json(SCHEMA_5.as_bytes()).unwrap();
    assert_eq!(state.schema, host_sync::SCHEMA);
    let declared = state.declared.unwrap();
    let at = |bdf: &str| &declared.gpus[&bdf.parse().unwrap()];
    let DeclaredGpu::Amd(amd) = at("0000:05:00.0") else {
        panic!("not an AMD GPU: {:?}", at("0000:05:00.0"));
    };
    assert_eq!(amd.want.to_string(), "CPX+NPS4");
    assert!(amd.client_services.is_empty());
    let a100 = at("0000:3b:00.0").nvidia().unwrap();
    assert!(a100.mig_enabled);
    assert_eq!(a100.instances.as_ref().map(Vec::len), Some(1));
    assert_eq!(
        a100.vgpu,
        Some(VgpuDeclared::Counted {
            types: vec![DeclaredVgpu::new(
                VgpuTypeId::new(474).unwrap(),
                "A100-1-5C",
                7
            )],
            heterogeneous: false,
        }),
        "no VF was named then, and none is guessed"
    );
    assert_eq!(
        at("0000:3c:00.0").nvidia().unwrap().vgpu,
        Some(VgpuDeclared::Off)
    );
    assert_eq!(
        at("0000:3d:00.0").nvidia().unwrap().vgpu,
        Some(VgpuDeclared::on(Vec::new(), true))
    );
    // The check and the generation are kept: what the last sync found still says it.
    assert_eq!(declared.generation, 3);
    assert_eq!(declared.check.map(|check| check.differences.len()), Some(1));
    assert!(state.gpus.values().any(|gpu| gpu.amd.is_some()));
}

#[test]
fn a_state_of_schema_5_read_and_saved_is_of_this_schema_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("state.json"), SCHEMA_5).unwrap();
    let mut store = FileStore::new(dir.path());
    let state = store.load().unwrap().unwrap();
    store.save(&state).unwrap();
    let text = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
    assert!(
        text.contains(&format!("\"schema\": {}", host_sync::SCHEMA)),
        "{text}"
    );
    assert_eq!(FileStore::new(dir.path()).load().unwrap(), Some(state));
}

#[test]
fn a_file_of_a_later_schema_is_refused_with_both_numbers_and_left_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (this, next) = (host_sync::SCHEMA, host_sync::SCHEMA + 1);
    let text = format!(
        r#"{{"schema": {next}, "status": "active", "reason": "ready", "later": {{"x": 1}}}}"#
    );
    let text = text.as_str();
    std::fs::write(dir.path().join("state.json"), text).unwrap();
    let error = FileStore::new(dir.path()).load().unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(&format!("schema {next}")) && message.contains(&format!("schema {this}")),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("state.json")).unwrap(),
        text
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_file_of_schema_0_is_not_a_state_of_ours_and_is_refused_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"schema": 0, "status": "active", "reason": "ready"}"#;
    std::fs::write(dir.path().join("state.json"), text).unwrap();
    let error = FileStore::new(dir.path()).load().unwrap_err();
    let message = gpu_host_probe::chain::Chain(&error).to_string();
    assert!(message.contains("schema 0"), "{message}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("state.json")).unwrap(),
        text
    );
}

#[test]
fn a_file_of_schema_9_reads_with_no_architecture_known_until_the_next_read() {
    let text = r#"{"schema": 9, "status": "active", "reason": "ready", "boot_id": "5a3c",
      "gpus": {"0000:3b:00.0": {"vendor": "10de", "device": "2335", "driver": "nvidia",
        "partition_mode": "enabled", "reason": "", "last_read": "enabled"}}}"#;
    let state = HostState::from_json(text.as_bytes()).unwrap();
    assert_eq!(state.schema, host_sync::SCHEMA);
    assert_eq!(
        state.gpus[&"0000:3b:00.0".parse().unwrap()].architecture,
        None
    );
}

#[test]
fn an_architecture_is_kept_as_nvml_s_number_known_or_not() {
    let text = r#"{"schema": 10, "status": "active", "reason": "ready", "boot_id": "5a3c",
      "gpus": {"0000:3b:00.0": {"vendor": "10de", "device": "2335", "driver": "nvidia",
        "partition_mode": "enabled", "reason": "", "architecture": 9},
               "0000:3c:00.0": {"vendor": "10de", "device": "2335", "driver": "nvidia",
        "partition_mode": "enabled", "reason": "", "architecture": 13}}}"#;
    let state = HostState::from_json(text.as_bytes()).unwrap();
    let architecture = |bdf: &str| state.gpus[&bdf.parse().unwrap()].architecture;
    assert_eq!(
        architecture("0000:3b:00.0"),
        Some(gpu_partition_types::Architecture::Hopper.into())
    );
    assert_eq!(architecture("0000:3c:00.0").map(|a| a.nvml()), Some(13));
    let written = serde_json::to_value(&state).unwrap();
    assert_eq!(written["gpus"]["0000:3c:00.0"]["architecture"], 13);
}
