//! What a toolstack renders through the library is what `mxctl metrics` and `mxctl labels`
//! print, byte for byte: one renderer, called by both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::{ALL_BALANCED, PartitionHost};
use host_sync::{FileStore, StateStore};
use std::path::Path;

/// An H100 with `all-balanced` applied and read back by a sync: a host with a declaration.
fn declared_host() -> PartitionHost {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(ALL_BALANCED, "all-balanced", &[]);
    assert_eq!(
        (code, &report["outcome"]),
        (0, &"done".into()),
        "{report:#}"
    );
    host.sync("enabled");
    host
}

/// The host as a toolstack builds it for the same machine and state directory as mxctl's.
fn library_host(host: &PartitionHost) -> gpu_host_probe::Host {
    gpu_host_probe::Host::new(host.path("state"))
        .with_sysfs_root(host.sysfs.root())
        .with_proc_root(host.path("proc"))
        .with_lock_dir(host.path("locks"))
}

fn mxctl_output(host: &PartitionHost, args: &[&str]) -> Vec<u8> {
    let mut command = host.mxctl_configured(Path::new("/dev/null"));
    command.args(args);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    output.stdout
}

#[test]
fn the_metrics_an_embedder_renders_through_the_library_are_mxctls_byte_for_byte() {
    let host = declared_host();
    let printed = mxctl_output(&host, &["metrics"]);
    let embedder = library_host(&host);
    let state = FileStore::read_only(embedder.state_dir())
        .load()
        .unwrap()
        .unwrap();
    let last = warm_reset::last_reset(&embedder).unwrap();
    let rendered = mig_layout::render_metrics(&state, last.as_ref(), &embedder.now()).unwrap();
    let text = String::from_utf8(rendered.clone()).unwrap();
    assert!(
        text.contains("mxctl_layout_declared{label=\"all-balanced\",state=\"holds\"} 1"),
        "{text}"
    );
    assert_eq!(rendered, printed);
}

#[test]
fn the_labels_an_embedder_renders_through_the_library_are_mxctls_byte_for_byte() {
    let host = declared_host();
    let printed = String::from_utf8(mxctl_output(&host, &["labels", "--expiry", "1800"])).unwrap();
    // mxctl's expiry is its own clock's now plus 1800 s: the library is given the same time.
    let expiry = printed
        .lines()
        .find_map(|line| line.strip_prefix("# +expiry-time="))
        .unwrap()
        .to_owned();
    let embedder = library_host(&host);
    let state = FileStore::read_only(embedder.state_dir())
        .load()
        .unwrap()
        .unwrap();
    let expires = unix_seconds_of(&expiry);
    let rendered = mig_layout::render_labels(&state, expires, &embedder.now());
    assert!(
        rendered.contains("mxctl.feature.node.kubernetes.io/layout-state=holds\n"),
        "{rendered}"
    );
    assert_eq!(rendered, printed);
}

/// Unix seconds of an RFC 3339 UTC time, as `date` reads it.
fn unix_seconds_of(rfc3339: &str) -> u64 {
    let output = std::process::Command::new("date")
        .args(["-u", "-d", rfc3339, "+%s"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
