//! The multi-host planner: both strategies on groups of 1, 2 and 3 hosts, one named case per
//! rule, snapshots of the plans, and one refusal per kind of bad group.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use warm_reset::{ActionKind, CONNECT_LINKS_MANUAL, PlanAction};
use warm_reset::{Group, LinkCommands, Plan, PlanError, Strategy, plan};

fn group(json: &str) -> Group {
    serde_json::from_str(json).unwrap()
}

fn one() -> Group {
    group(r#"{"hosts": [{"name": "h1", "nodes": [0, 1]}]}"#)
}

fn two() -> Group {
    group(
        r#"{"hosts": [{"name": "h1", "nodes": [0, 1]}, {"name": "h2", "nodes": [2, 3]}], "links": [["h1", "h2"]]}"#,
    )
}

fn three() -> Group {
    group(
        r#"{"hosts": [{"name": "h1", "nodes": [0, 1]}, {"name": "h2", "nodes": [0, 1]}, {"name": "h3", "nodes": [0]}],
            "links": [["h1", "h2"], ["h2", "h3"]]}"#,
    )
}

fn make(group: &Group, faulty: &str, strategy: Strategy) -> Plan {
    plan(group, faulty, strategy, &LinkCommands::default(), "test").unwrap()
}

/// Each phase as `host:action` words.
fn shape(plan: &Plan) -> Vec<Vec<String>> {
    plan.phases
        .iter()
        .map(|phase| {
            phase
                .actions
                .iter()
                .map(|a| format!("{}:{}", a.host, a.action))
                .collect()
        })
        .collect()
}

fn actions(plan: &Plan) -> impl Iterator<Item = &PlanAction> {
    plan.phases.iter().flat_map(|phase| &phase.actions)
}

#[test]
fn phases_are_numbered_from_zero_in_order() {
    let plan = make(&three(), "h2", Strategy::FaultyOnly);
    let indices: Vec<usize> = plan.phases.iter().map(|p| p.index).collect();
    assert_eq!(indices, (0..plan.phases.len()).collect::<Vec<_>>());
}

#[test]
fn the_all_hosts_plan_resets_every_host_in_one_phase() {
    let plan = make(&three(), "h2", Strategy::AllHosts);
    assert_eq!(shape(&plan)[1], ["h1:reset", "h2:reset", "h3:reset"]);
}

#[test]
fn the_all_hosts_plan_preflights_every_host_first_and_verifies_every_host_after() {
    let shape = shape(&make(&three(), "h1", Strategy::AllHosts));
    assert_eq!(shape[0], ["h1:preflight", "h2:preflight", "h3:preflight"]);
    assert_eq!(shape[2], ["h1:verify", "h2:verify", "h3:verify"]);
}

#[test]
fn a_reset_names_the_first_node_of_its_host() {
    let plan = make(&two(), "h1", Strategy::AllHosts);
    let nodes: Vec<Option<u32>> = actions(&plan)
        .filter(|a| a.action == ActionKind::Reset)
        .map(|a| a.node)
        .collect();
    assert_eq!(nodes, [Some(0), Some(2)]);
}

#[test]
fn the_faulty_only_plan_preflights_resets_and_verifies_only_the_faulty_host() {
    let shape = shape(&make(&three(), "h2", Strategy::FaultyOnly));
    assert_eq!(
        shape[..3],
        [vec!["h2:preflight"], vec!["h2:reset"], vec!["h2:verify"]]
    );
}

#[test]
fn the_faulty_only_plan_disconnects_links_on_every_other_host_after_the_faulty_hosts_verify() {
    let plan = make(&three(), "h2", Strategy::FaultyOnly);
    assert_eq!(
        shape(&plan)[3],
        ["h1:disconnect_links", "h3:disconnect_links"]
    );
    assert!(plan.phases[3].actions.iter().all(|a| {
        a.command.as_ref().map(ToString::to_string).as_deref() == Some("metalink_train 7")
    }));
}

#[test]
fn both_plans_end_by_connecting_the_cross_host_links_of_every_linked_host() {
    for strategy in [Strategy::AllHosts, Strategy::FaultyOnly] {
        let plan = make(&three(), "h1", strategy);
        assert_eq!(
            shape(&plan).last().unwrap(),
            &["h1:connect_links", "h2:connect_links", "h3:connect_links"]
        );
    }
}

/// The plan's actions that connect the links again.
fn connect_actions(plan: &Plan) -> Vec<&PlanAction> {
    actions(plan)
        .filter(|a| a.action == ActionKind::ConnectLinks)
        .collect()
}

#[test]
fn without_a_configured_command_connecting_links_is_a_manual_step_with_the_guides_instruction() {
    let plan = make(&two(), "h1", Strategy::AllHosts);
    let connect = connect_actions(&plan);
    assert!(
        connect
            .iter()
            .all(|a| a.command.is_none() && a.manual.as_deref() == Some(CONNECT_LINKS_MANUAL))
    );
}

#[test]
fn a_configured_connect_command_is_carried_by_the_connect_action() {
    let commands = LinkCommands::new(
        "metalink_train 7".parse().unwrap(),
        Some("/opt/metax/bin/link-up".parse().unwrap()),
    );
    let plan = plan(&two(), "h1", Strategy::FaultyOnly, &commands, "test").unwrap();
    let connect = connect_actions(&plan);
    assert!(
        connect
            .iter()
            .all(|a| a.command.as_ref().map(ToString::to_string).as_deref()
                == Some("/opt/metax/bin/link-up")
                && a.manual.is_none())
    );
}

#[test]
fn a_single_host_group_has_no_link_actions() {
    for strategy in [Strategy::AllHosts, Strategy::FaultyOnly] {
        let plan = make(&one(), "h1", strategy);
        assert_eq!(
            shape(&plan),
            [vec!["h1:preflight"], vec!["h1:reset"], vec!["h1:verify"]]
        );
    }
}

#[test]
fn a_two_host_faulty_only_plan_disconnects_the_other_host() {
    assert_eq!(
        shape(&make(&two(), "h2", Strategy::FaultyOnly))[3],
        ["h1:disconnect_links"]
    );
}

#[test]
fn plans_of_both_strategies_on_one_two_and_three_hosts() {
    for (name, group) in [("one", one()), ("two", two()), ("three", three())] {
        for strategy in [Strategy::AllHosts, Strategy::FaultyOnly] {
            let plan = make(&group, "h1", strategy);
            insta::assert_json_snapshot!(format!("plan_{name}_host_{strategy}"), plan);
        }
    }
}

fn refused(json: &str, faulty: &str) -> PlanError {
    plan(
        &group(json),
        faulty,
        Strategy::AllHosts,
        &LinkCommands::default(),
        "test",
    )
    .unwrap_err()
}

/// What a refused group's error must be: its words, or the error itself.
enum Expected {
    Says(&'static str),
    Is(PlanError),
}

/// Each rule a group can break, one named case a rule: the group, the faulty host named, and
/// the error it must be refused with.
#[test]
fn a_group_that_breaks_a_rule_is_refused_with_the_error_of_that_rule() {
    use Expected::{Is, Says};
    let cases = [
        (
            "an_unknown_faulty_host_is_refused_naming_the_hosts",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}]}"#,
            "h9",
            Says("the faulty host h9 is not in the group (hosts: h1)"),
        ),
        (
            "a_host_with_no_node_is_refused",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}, {"name": "h2", "nodes": []}], "links": [["h1", "h2"]]}"#,
            "h1",
            Says("host h2 has no node: each host of the group needs at least one node ID"),
        ),
        (
            "a_link_to_an_unknown_host_is_refused",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}], "links": [["h1", "h7"]]}"#,
            "h1",
            Says("the link h1-h7 names h7, which is not a host of the group"),
        ),
        (
            "a_group_that_is_not_connected_is_refused_naming_the_unreached_hosts",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}, {"name": "h2", "nodes": [0]}, {"name": "h3", "nodes": [0]}], "links": [["h1", "h2"]]}"#,
            "h1",
            Says("the group is not connected: no link path joins h3 to h1"),
        ),
        (
            "a_link_from_a_host_to_itself_is_refused",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}], "links": [["h1", "h1"]]}"#,
            "h1",
            Is(PlanError::SelfLink("h1".into())),
        ),
        (
            "a_host_named_twice_is_refused",
            r#"{"hosts": [{"name": "h1", "nodes": [0]}, {"name": "h1", "nodes": [1]}]}"#,
            "h1",
            Is(PlanError::DuplicateHost("h1".into())),
        ),
        (
            "a_group_without_hosts_is_refused",
            r#"{"hosts": []}"#,
            "h1",
            Is(PlanError::NoHost),
        ),
    ];
    for (case, json, faulty, expected) in cases {
        let error = refused(json, faulty);
        match expected {
            Says(words) => assert_eq!(error.to_string(), words, "case {case}"),
            Is(expected) => assert_eq!(error, expected, "case {case}"),
        }
    }
}
