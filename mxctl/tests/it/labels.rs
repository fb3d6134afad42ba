//! `mxctl labels`: the node-feature-discovery feature file of a host with two GPUs, checked
//! line by line against NFD's rules (its local source's file format and its label
//! validation: a DNS-subdomain namespace, Kubernetes label names and values).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::sync_host::{CARVED, SyncHost};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const MIG_OFF: &str = fake_nvml::scenarios::A100_MIG_OFF;

/// RFC 1123 DNS subdomain: at most 253 characters, dot-separated labels of lower-case
/// alphanumerics and `-`, alphanumeric at both ends.
fn dns_subdomain(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.first()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.last()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// A Kubernetes qualified name's name part, and a label value (which may also be empty):
/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn k8s_name(text: &str) -> bool {
    let b = text.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A line of an NFD feature file: a comment, the expiry directive (RFC 3339), or
/// `namespace/name=value` within the rules (the namespace not kubernetes.io's, except
/// feature.node.kubernetes.io and its sub-namespaces).
fn check_line(line: &str) -> Result<(), String> {
    if let Some(directive) = line.strip_prefix("# +") {
        let (key, value) = directive.split_once('=').ok_or("a directive without =")?;
        if key != "expiry-time" {
            return Err(format!("unknown directive {key}"));
        }
        let ok = value.len() == 20
            && value.as_bytes()[4] == b'-'
            && value.as_bytes()[10] == b'T'
            && value.ends_with('Z');
        return if ok {
            Ok(())
        } else {
            Err(format!("not RFC 3339: {value}"))
        };
    }
    if line.starts_with('#') {
        return Ok(());
    }
    let (key, value) = line.split_once('=').ok_or("a label without =")?;
    let (namespace, name) = key.split_once('/').ok_or("a label without a namespace")?;
    if !dns_subdomain(namespace) {
        return Err(format!("namespace {namespace:?}"));
    }
    let kubernetes = namespace == "kubernetes.io" || namespace.ends_with(".kubernetes.io");
    let allowed = namespace == "feature.node.kubernetes.io"
        || namespace.ends_with(".feature.node.kubernetes.io");
    if kubernetes && !allowed {
        return Err(format!("namespace {namespace} is denied by nfd-master"));
    }
    if !k8s_name(name) {
        return Err(format!("name {name:?}"));
    }
    if !value.is_empty() && !k8s_name(value) {
        return Err(format!("value {value:?}"));
    }
    Ok(())
}

#[test]
fn the_labels_of_a_host_with_two_gpus_keep_every_rule_of_nfd() {
    let host = SyncHost::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", Some("nvidia")).unwrap();
    let helper = host.nvml_helper_of(&[("0000:3b:00.0", CARVED), ("0000:3c:00.0", MIG_OFF)]);
    host.synced(&helper);
    let dir = host.path("features.d");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mxctl");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let status = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "--state-dir"])
        .arg(host.path("state"))
        // On the real `/sys`: the test's own directory, named as the machine's (labels only
        // reads there).
        .arg("--machine-lock-dir")
        .arg(host.path("locks"))
        .args(["labels", "--expiry", "1800", "--output"])
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    for line in text.lines() {
        check_line(line).unwrap_or_else(|why| panic!("{line:?}: {why}"));
    }
    // The file is whole, readable by nfd-worker, with no temporary left beside it.
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o644
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["mxctl"]);
    // It expires half an hour on.
    let expiry = text
        .lines()
        .find_map(|line| line.strip_prefix("# +expiry-time="))
        .unwrap();
    let at = |secs: u64| {
        let mut command = Command::new("date");
        command.args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"]);
        String::from_utf8(command.output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_owned()
    };
    assert!(
        (before + 1795..=before + 1805).any(|secs| at(secs) == expiry),
        "{expiry} is not half an hour after {}",
        at(before)
    );
    let shown: String = text
        .lines()
        .map(|line| {
            if line.starts_with("# +expiry-time=") {
                "# +expiry-time=[half an hour on]".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(shown);
}

#[test]
fn the_rule_checker_refuses_what_nfd_refuses() {
    for bad in [
        "status=active",
        "mxctl.feature.node.kubernetes.io/gpu-0000:3b:00.0.mode=enabled",
        "kubernetes.io/status=active",
        "Mxctl.io/status=active",
        "mxctl.feature.node.kubernetes.io/status=-active",
        "# +expiry=2026-12-01T12:00:00Z",
    ] {
        assert!(check_line(bad).is_err(), "{bad}");
    }
    assert!(check_line("mxctl.feature.node.kubernetes.io/reason=").is_ok());
}
