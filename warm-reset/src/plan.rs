//! The multi-host plan: when a MetaXLink interconnect group spans hosts, a reset is a pool-wide
//! operation. The plan is data: ordered phases of per-host actions that may run in parallel,
//! with a barrier between phases, for an orchestrator that already exists to run.

use gpu_host_probe::run::CommandLine;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

gpu_partition_types::token_enum! {
    /// How a multi-host group is reset.
    pub enum Strategy: "strategy" {
        /// Every host of the group resets (more reliable; the guide's advice).
        AllHosts = "all-hosts",
        /// Only the faulty host resets; the others drop their cross-host links first.
        FaultyOnly = "faulty-only",
    }
}

gpu_partition_types::token_enum! {
    /// What a host does in a phase.
    pub enum ActionKind: "plan action" {
        /// The preflight of a warm reset, changing nothing.
        Preflight = "preflight",
        /// A warm reset of one node (its own preflight first).
        Reset = "reset",
        /// Every GPU of the host is listed `Available`.
        Verify = "verify",
        /// Drop the host's cross-host links (`metalink_train 7`).
        DisconnectLinks = "disconnect_links",
        /// Connect the cross-host links again.
        ConnectLinks = "connect_links",
    }
}

/// The guide's instruction for connecting cross-host links, which has no documented command.
pub const CONNECT_LINKS_MANUAL: &str =
    "connect the cross-host MetaXLink links on demand, with the same steps as after a cold boot";

/// One host of a group file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GroupHost {
    /// The host's name, as the orchestrator knows it.
    pub name: String,
    /// The node IDs of the group's GPUs on it.
    pub nodes: Vec<u32>,
}

/// A group file: the hosts of an interconnect group and the links between hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Group {
    /// The hosts.
    pub hosts: Vec<GroupHost>,
    /// Pairs of hosts joined by cross-host links.
    #[serde(default)]
    pub links: Vec<[String; 2]>,
}

/// The commands the link actions carry (config keys `disconnect-links-command`,
/// `connect-links-command`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkCommands {
    /// Drops a host's cross-host links (the guide's `metalink_train 7` by default).
    pub disconnect: CommandLine,
    /// Connects them again; `None` makes it a manual step.
    pub connect: Option<CommandLine>,
}

impl LinkCommands {
    /// The commands: `disconnect`, and `connect` (`None` for a manual step).
    pub fn new(disconnect: CommandLine, connect: Option<CommandLine>) -> Self {
        Self {
            disconnect,
            connect,
        }
    }
}

impl Default for LinkCommands {
    /// The guide's `metalink_train 7` (a bare name, found in the runner's `PATH`), and no
    /// connect command.
    fn default() -> Self {
        Self {
            disconnect: CommandLine::new("metalink_train", ["7"]),
            connect: None,
        }
    }
}

/// One host's action in a phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanAction {
    /// The host.
    pub host: String,
    /// What it does.
    pub action: ActionKind,
    /// The node to reset (reset only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The command to run (link actions with a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// What a person must do (a link action without a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<String>,
}

impl PlanAction {
    fn new(host: &str, action: ActionKind) -> Self {
        Self {
            host: host.to_owned(),
            action,
            node: None,
            command: None,
            manual: None,
        }
    }
}

/// A phase: actions that may run at once, one barrier after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Phase {
    /// The phase's 0-based number.
    pub index: usize,
    /// Its actions.
    pub actions: Vec<PlanAction>,
}

/// A plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Plan {
    /// This plan's identity: steps of another plan never count as done for this one.
    pub id: String,
    /// The strategy.
    pub strategy: Strategy,
    /// The faulty host.
    pub faulty: String,
    /// The phases, in order.
    pub phases: Vec<Phase>,
}

/// A group file that cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The group has no host.
    #[error("the group has no host")]
    NoHost,
    /// Two hosts share a name.
    #[error("host {0} appears twice in the group")]
    DuplicateHost(String),
    /// A host has no node.
    #[error("host {0} has no node: each host of the group needs at least one node ID")]
    HostWithoutNode(String),
    /// The faulty host is not in the group.
    #[error("the faulty host {faulty} is not in the group (hosts: {hosts})")]
    UnknownFaultyHost {
        /// The name given.
        faulty: String,
        /// The group's hosts, comma separated.
        hosts: String,
    },
    /// A link names a host that is not in the group.
    #[error("the link {a}-{b} names {unknown}, which is not a host of the group")]
    LinkToUnknownHost {
        /// One end.
        a: String,
        /// The other end.
        b: String,
        /// The end that is not a host.
        unknown: String,
    },
    /// A link joins a host to itself.
    #[error("the link {0}-{0} joins a host to itself; links join two hosts")]
    SelfLink(String),
    /// Some hosts cannot be reached from the faulty host by links.
    #[error("the group is not connected: no link path joins {unreached} to {faulty}")]
    NotConnected {
        /// The faulty host.
        faulty: String,
        /// The hosts no link path reaches, comma separated.
        unreached: String,
    },
}

/// Checks a group: hosts, nodes, links, and that links join every host to the faulty one.
pub fn check_group(group: &Group, faulty: &str) -> Result<(), PlanError> {
    if group.hosts.is_empty() {
        return Err(PlanError::NoHost);
    }
    let mut names = BTreeSet::new();
    for host in &group.hosts {
        if !names.insert(host.name.as_str()) {
            return Err(PlanError::DuplicateHost(host.name.clone()));
        }
        if host.nodes.is_empty() {
            return Err(PlanError::HostWithoutNode(host.name.clone()));
        }
    }
    if !names.contains(faulty) {
        return Err(PlanError::UnknownFaultyHost {
            faulty: faulty.to_owned(),
            hosts: group
                .hosts
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut neighbours: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for [a, b] in &group.links {
        for end in [a, b] {
            if !names.contains(end.as_str()) {
                return Err(PlanError::LinkToUnknownHost {
                    a: a.clone(),
                    b: b.clone(),
                    unknown: end.clone(),
                });
            }
        }
        if a == b {
            return Err(PlanError::SelfLink(a.clone()));
        }
        neighbours.entry(a).or_default().push(b);
        neighbours.entry(b).or_default().push(a);
    }
    let mut reached = BTreeSet::from([faulty]);
    let mut frontier = vec![faulty];
    while let Some(host) = frontier.pop() {
        for next in neighbours.get(host).map(Vec::as_slice).unwrap_or_default() {
            if reached.insert(next) {
                frontier.push(next);
            }
        }
    }
    let unreached: Vec<&str> = group
        .hosts
        .iter()
        .map(|h| h.name.as_str())
        .filter(|n| !reached.contains(n))
        .collect();
    if !unreached.is_empty() {
        return Err(PlanError::NotConnected {
            faulty: faulty.to_owned(),
            unreached: unreached.join(", "),
        });
    }
    Ok(())
}

/// Plans the reset of `group` whose faulty host is `faulty`. `id` names the plan (a new one
/// for each incident, so a later incident never counts an earlier one's steps as done).
///
/// - all-hosts: preflight every host → reset one node per host → verify every host → connect
///   the cross-host links.
/// - faulty-only: preflight the faulty host → reset it → verify it → disconnect links on every
///   other host → connect the cross-host links.
///
/// A single-host group has no link actions.
pub fn plan(
    group: &Group,
    faulty: &str,
    strategy: Strategy,
    commands: &LinkCommands,
    id: &str,
) -> Result<Plan, PlanError> {
    check_group(group, faulty)?;
    let hosts: Vec<&GroupHost> = group.hosts.iter().collect();
    let linked: BTreeSet<&str> = group.links.iter().flatten().map(String::as_str).collect();
    let each = |hosts: &[&GroupHost], action: ActionKind| -> Vec<PlanAction> {
        hosts
            .iter()
            .map(|host| PlanAction::new(&host.name, action))
            .collect()
    };
    let reset = |host: &GroupHost| PlanAction {
        // Any node of a linked group will do: the kernel driver resets the host's group.
        node: host.nodes.first().copied(),
        ..PlanAction::new(&host.name, ActionKind::Reset)
    };
    let connect = |host: &GroupHost| PlanAction {
        command: commands.connect.clone(),
        manual: commands
            .connect
            .is_none()
            .then(|| CONNECT_LINKS_MANUAL.to_owned()),
        ..PlanAction::new(&host.name, ActionKind::ConnectLinks)
    };
    let faulty_host: Vec<&GroupHost> = hosts.iter().copied().filter(|h| h.name == faulty).collect();
    let with_links: Vec<&GroupHost> = hosts
        .iter()
        .copied()
        .filter(|h| linked.contains(h.name.as_str()))
        .collect();
    let mut phases: Vec<Vec<PlanAction>> = match strategy {
        Strategy::AllHosts => vec![
            each(&hosts, ActionKind::Preflight),
            hosts.iter().map(|h| reset(h)).collect(),
            each(&hosts, ActionKind::Verify),
        ],
        Strategy::FaultyOnly => {
            let others: Vec<&GroupHost> =
                hosts.iter().copied().filter(|h| h.name != faulty).collect();
            let mut phases = vec![
                each(&faulty_host, ActionKind::Preflight),
                faulty_host.iter().map(|h| reset(h)).collect(),
                each(&faulty_host, ActionKind::Verify),
            ];
            if !others.is_empty() {
                phases.push(
                    others
                        .iter()
                        .map(|host| PlanAction {
                            command: Some(commands.disconnect.clone()),
                            ..PlanAction::new(&host.name, ActionKind::DisconnectLinks)
                        })
                        .collect(),
                );
            }
            phases
        }
    };
    if !with_links.is_empty() {
        phases.push(with_links.iter().map(|h| connect(h)).collect());
    }
    Ok(Plan {
        id: id.to_owned(),
        strategy,
        faulty: faulty.to_owned(),
        phases: phases
            .into_iter()
            .enumerate()
            .map(|(index, actions)| Phase { index, actions })
            .collect(),
    })
}
