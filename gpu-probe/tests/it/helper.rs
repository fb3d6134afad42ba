//! The helper client against fake helpers the tests write: each failure gives its exact reason,
//! within its deadline plus one second, and leaves no process behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_host_probe::helper::{CardRead, Helper, HelperConfig};
use gpu_partition_types::{Bdf, Outcome, PartitionMode, UnreadableReason};
use std::path::Path;
use std::time::{Duration, Instant};

/// Long enough that a helper that answers never meets it on a loaded machine; the tests of a
/// hang meet it by construction.
const DEADLINE: Duration = Duration::from_secs(2);

fn card(n: u8) -> Bdf {
    format!("0000:{n:02x}:00.0").parse().unwrap()
}

fn probe(helper: &Path, cards: &[Bdf]) -> Vec<CardRead> {
    let helper = Helper::new(HelperConfig::new(helper).deadline(DEADLINE));
    let state = tempfile::tempdir().unwrap();
    helper
        .probe(
            &gpu_host_probe::test_util::isolated_host(state.path()),
            cards,
            Duration::ZERO,
        )
        .unwrap()
}

fn reason(read: &CardRead) -> Option<String> {
    read.outcome.reason().map(ToString::to_string)
}

fn one(helper: &Path) -> CardRead {
    probe(helper, &[card(0x3b)]).remove(0)
}

fn v1() -> String {
    version_reply(r#""1.0""#)
}

/// The reason a helper of format 1.0 whose `read` runs `read_body` gives for card 3b.
fn reason_of_v1(read_body: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    reason(&one(&helper(dir.path(), &v1(), read_body)))
}

#[test]
fn a_helper_that_answers_gives_the_cards_partition_mode() {
    let dir = tempfile::tempdir().unwrap();
    let read = one(&helper(dir.path(), &v1(), r#"printf '%s\n' "$reply""#));
    assert!(
        matches!(read.outcome, Outcome::Partitions { .. }),
        "{:?}",
        read.outcome
    );
    assert_eq!(read.outcome.partition_mode(), PartitionMode::Enabled);
}

#[test]
fn a_helper_that_hangs_is_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let read = one(&helper(
        dir.path(),
        &v1(),
        &format!("echo $$ > {}; exec sleep 60", pidfile.display()),
    ));
    // Were it not ended at its deadline, it would answer nothing for a minute: a timeout
    // either way, but then it would still be running.
    assert_eq!(reason(&read).as_deref(), Some("timeout"));
    assert!(gone(pid_in(&pidfile)));
}

#[test]
fn a_helper_that_ignores_sigterm_and_leaves_a_grandchild_on_stdout_is_a_timeout_and_both_are_killed()
 {
    let dir = tempfile::tempdir().unwrap();
    let (me, kid) = (dir.path().join("me"), dir.path().join("kid"));
    let body = format!(
        // Each ends by itself after 30 s: a kill that never came fails the test, never hangs it.
        "trap '' TERM; echo $$ > {}; (trap '' TERM; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done) & echo $! > {}; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        me.display(),
        kid.display()
    );
    let read = one(&helper(dir.path(), &v1(), &body));
    assert_eq!(reason(&read).as_deref(), Some("timeout"));
    assert!(gone(pid_in(&me)), "helper left behind");
    assert!(gone(pid_in(&kid)), "grandchild left behind");
}

#[test]
fn a_reply_written_before_a_grandchild_kept_stdout_open_is_accepted_and_the_grandchild_killed() {
    let dir = tempfile::tempdir().unwrap();
    let kid = dir.path().join("kid");
    let body = format!(
        r#"printf '%s\n' "$reply"; sleep 60 & echo $! > {}; exit 0"#,
        kid.display()
    );
    let read = one(&helper(dir.path(), &v1(), &body));
    assert_eq!(read.outcome.partition_mode(), PartitionMode::Enabled);
    assert!(gone(pid_in(&kid)), "grandchild left behind");
}

#[test]
fn a_helper_killed_by_sigsegv_is_a_crash() {
    assert_eq!(reason_of_v1("kill -SEGV $$").as_deref(), Some("crash"));
}

#[test]
fn a_helper_that_exits_non_zero_is_a_crash() {
    let body = r#"printf '%s\n' "$reply"; exit 2"#;
    assert_eq!(reason_of_v1(body).as_deref(), Some("crash"));
}

#[test]
fn a_helper_that_exits_75_is_busy() {
    let body = "echo 'held by nvidia-persistenced' >&2; echo ignored; exit 75";
    assert_eq!(reason_of_v1(body).as_deref(), Some("busy"));
}

#[test]
fn a_helper_that_prints_garbage_is_undecodable() {
    let body = "echo 'MIG mode: Enabled'";
    assert_eq!(reason_of_v1(body).as_deref(), Some("undecodable"));
}

#[test]
fn a_helper_that_exits_zero_with_no_page_is_undecodable() {
    assert_eq!(reason_of_v1("exit 0").as_deref(), Some("undecodable"));
}

#[test]
fn a_helper_that_floods_stdout_without_end_is_undecodable() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let body = format!("echo $$ > {}; exec yes", pidfile.display());
    let read = one(&helper(dir.path(), &v1(), &body));
    assert_eq!(reason(&read).as_deref(), Some("undecodable"));
    assert!(gone(pid_in(&pidfile)));
}

#[test]
fn a_helper_that_replies_in_several_pages_is_folded() {
    let dir = tempfile::tempdir().unwrap();
    let page = |index: u32| {
        format!(
            r#"{{"format": "1.0", "device": "%s", "page": {{"index": {index}, "count": 2}}, "mode": {{"capable": true, "current": "disabled", "pending": "enabled"}}, "case": "none_carved", "profiles": [{{"id": {index}}}]}}"#
        )
    };
    let body = format!(r#"printf '{}\n{}\n' "$dev" "$dev""#, page(1), page(0));
    let read = one(&helper(dir.path(), &v1(), &body));
    assert_eq!(read.outcome.partition_mode(), PartitionMode::EnableOnReboot);
    let Outcome::NoneCarved { catalogue, .. } = &read.outcome else {
        panic!("{:?}", read.outcome)
    };
    assert_eq!(catalogue.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn a_reply_for_another_card_is_undecodable() {
    let body = r#"printf "$(printf '%s' "$reply" | sed 's/0000:/0001:/')\n""#;
    assert_eq!(reason_of_v1(body).as_deref(), Some("undecodable"));
}

#[test]
fn a_helper_whose_version_lists_only_format_two_is_incompatible_and_read_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("read-ran");
    let helper = helper(
        dir.path(),
        &version_reply(r#""2.0""#),
        &format!("touch {}", marker.display()),
    );
    let reads = probe(&helper, &[card(1), card(2)]);
    assert!(
        reads
            .iter()
            .all(|read| reason(read).as_deref() == Some("incompatible"))
    );
    assert!(!marker.exists());
}

#[test]
fn a_version_reply_that_does_not_read_is_undecodable_for_every_card() {
    let dir = tempfile::tempdir().unwrap();
    let helper = helper(
        dir.path(),
        "gpu-partition-helper 1.0",
        r#"printf '%s\n' "$reply""#,
    );
    let reads = probe(&helper, &[card(1), card(2)]);
    assert!(
        reads
            .iter()
            .all(|read| reason(read).as_deref() == Some("undecodable"))
    );
}

#[test]
fn a_helper_path_that_does_not_exist_is_helper_absent_for_every_card() {
    let reads = probe(
        Path::new("/nonexistent/gpu-partition-helper"),
        &[card(1), card(2), card(3)],
    );
    assert_eq!(reads.len(), 3);
    assert!(
        reads
            .iter()
            .all(|read| read.outcome.reason() == Some(&UnreadableReason::HelperAbsent))
    );
}

#[test]
fn a_helper_without_the_execute_bit_is_not_executable_and_never_forked() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let helper = script(dir.path(), "helper", &format!("touch {}", marker.display()));
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let reads = probe(&helper, &[card(1), card(2)]);
    assert!(
        reads
            .iter()
            .all(|read| reason(read).as_deref() == Some("helper_not_executable"))
    );
    assert!(!marker.exists());
}

#[test]
fn one_hanging_card_costs_only_that_card() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"[ "$dev" = 0000:02:00.0 ] && exec sleep 60; printf '%s\n' "$reply""#;
    let reads = probe(
        &helper(dir.path(), &v1(), body),
        &[card(1), card(2), card(3), card(4)],
    );
    let reasons: Vec<Option<String>> = reads.iter().map(reason).collect();
    assert_eq!(reasons, [None, Some("timeout".to_owned()), None, None]);
    assert_eq!(
        reads.iter().map(|r| r.device).collect::<Vec<_>>(),
        [card(1), card(2), card(3), card(4)]
    );
}

#[test]
fn cards_are_read_at_once_not_one_after_another() {
    let dir = tempfile::tempdir().unwrap();
    // Each read waits until two reads have begun: read one after another, the first would wait
    // for a second that never begins, and meet its deadline (a timeout, not a reply).
    let starts = dir.path().join("starts");
    let body = format!(
        r#"echo start >> {starts}; i=0; while [ "$(wc -l < {starts})" -lt 2 ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; printf '%s\n' "$reply""#,
        starts = starts.display()
    );
    let helper = helper(dir.path(), &v1(), &body);
    let reads = probe(&helper, &(1..=8).map(card).collect::<Vec<_>>());
    assert!(
        reads.iter().all(|read| read.outcome.reason().is_none()),
        "{:?}",
        reads.iter().map(reason).collect::<Vec<_>>()
    );
}

#[test]
fn an_unreadable_case_gives_the_helpers_kind_as_reason() {
    let body = r#"printf '{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "disabled", "pending": null}, "case": "unreadable", "unreadable": {"kind": "driver_error", "message": "NVML: driver not loaded"}}\n' "$dev""#;
    assert_eq!(reason_of_v1(body).as_deref(), Some("helper:driver_error"));
}

#[test]
fn a_crash_carries_its_exit_and_the_end_of_its_stderr_next_to_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let body = "echo 'nvml: driver/library version mismatch' >&2; exit 3";
    let read = one(&helper(dir.path(), &v1(), body));
    assert_eq!(reason(&read).as_deref(), Some("crash"));
    let message = read.message.unwrap();
    assert!(message.contains("exited with code 3"), "{message}");
    assert!(
        message.ends_with("stderr: nvml: driver/library version mismatch"),
        "{message}"
    );
}

#[test]
fn an_undecodable_reply_names_the_member_that_refused_it() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"printf '%s\n' "$reply" | sed 's/"enabled"/"on"/'"#;
    let read = one(&helper(dir.path(), &v1(), body));
    assert_eq!(reason(&read).as_deref(), Some("undecodable"));
    let message = read.message.unwrap();
    assert!(
        message.contains(r#"refused at "/mode/current""#),
        "{message}"
    );
}

#[test]
fn a_timeout_says_what_did_not_answer_and_within_what() {
    let dir = tempfile::tempdir().unwrap();
    let read = one(&helper(dir.path(), &v1(), "sleep 30"));
    assert_eq!(reason(&read).as_deref(), Some("timeout"));
    let message = read.message.unwrap();
    assert!(
        message.contains("read --device 0000:3b:00.0 did not answer within 2s"),
        "{message}"
    );
}

#[test]
fn the_helpers_own_message_comes_with_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"printf '{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "disabled", "pending": null}, "case": "unreadable", "unreadable": {"kind": "busy", "message": "held by nvidia-persistenced"}}\n' "$dev""#;
    let read = one(&helper(dir.path(), &v1(), body));
    assert_eq!(reason(&read).as_deref(), Some("helper:busy"));
    assert_eq!(
        read.message.as_deref(),
        Some("the helper could not read 0000:3b:00.0: held by nvidia-persistenced")
    );
}

#[test]
fn a_card_that_reads_has_no_message() {
    let dir = tempfile::tempdir().unwrap();
    let read = one(&helper(dir.path(), &v1(), r#"printf '%s\n' "$reply""#));
    assert_eq!(read.message, None);
}

#[test]
fn a_probe_waits_for_a_held_host_lock_and_gives_up_with_busy_without_running_the_helper() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let body = format!(
        r#"echo read >> {}; printf '%s\n' "$reply""#,
        calls.display()
    );
    let path = helper(dir.path(), &v1(), &body);
    let host = gpu_host_probe::test_util::isolated_host(dir.path().join("state"));
    let _held = host.try_lock().unwrap();
    let helper = Helper::new(HelperConfig::new(&path).deadline(DEADLINE));
    let started = Instant::now();
    let error = helper
        .probe(&host, &[card(0x3b)], Duration::from_millis(200))
        .unwrap_err();
    assert!(
        matches!(error, gpu_host_probe::LockError::Busy { .. }),
        "{error}"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(!calls.exists(), "the helper ran while the lock was held");
}

#[test]
fn floods_in_a_fan_out_share_one_budget_and_cost_only_their_own_cards() {
    // Sixteen cards, eight at once; every other one floods stdout. Each run may capture its
    // share of the 4 MiB budget (512 KiB): the floods are cut there (undecodable, as over the
    // whole cap), the replies of the others read.
    let dir = tempfile::tempdir().unwrap();
    let body = r#"case "$dev" in *[02468ace]:00.0) exec yes ;; esac; printf '%s\n' "$reply""#;
    let cards: Vec<Bdf> = (1..=16).map(card).collect();
    let reads = probe(&helper(dir.path(), &v1(), body), &cards);
    for read in &reads {
        let flooding = read.device.bus % 2 == 0;
        assert_eq!(
            reason(read).as_deref(),
            flooding.then_some("undecodable"),
            "{}: {:?}",
            read.device,
            read.message
        );
        if flooding {
            assert!(
                read.message
                    .as_deref()
                    .is_some_and(|m| m.contains("stdout passed its cap")),
                "{:?}",
                read.message
            );
        }
    }
}
