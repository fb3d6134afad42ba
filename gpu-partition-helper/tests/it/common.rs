//! Finding the binaries the end-to-end tests run, and what the tests read of a reply.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

pub fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gpu-partition-helper"))
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A wrapper that runs the helper in fixture mode on this crate's fixtures.
pub fn wrapper(dir: &Path, page_size: Option<usize>) -> PathBuf {
    fake_nvml::support::fixture_helper_wrapper(dir, &fixtures(), page_size).unwrap()
}

/// What `mxctl reply check --json --device DEVICE` says of a reply, made in-process by the
/// reader it calls (`gpu_partition_types::Reply::from_json`): `accepted`, and the `outcome`,
/// `partition_mode`, `lost` and `unknown` of an accepted reply, or the `error` of a refused
/// one.
pub fn check(reply: &[u8], device: &str) -> serde_json::Value {
    let device: gpu_partition_types::Bdf = device.parse().unwrap();
    match gpu_partition_types::Reply::from_json(reply, Some(&device)) {
        Ok(reply) => {
            let outcome = reply.outcome();
            serde_json::json!({
                "accepted": true,
                "outcome": outcome.case(),
                "partition_mode": outcome.partition_mode(),
                "lost": lost_pointers(&reply),
                "unknown": reply.unknown().iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        }
        Err(refused) => serde_json::json!({
            "accepted": false,
            "error": {"pointer": refused.pointer.to_string(), "message": refused.to_string()},
        }),
    }
}

/// Where `reply` lost something, in the reader's order.
pub fn lost_pointers(reply: &gpu_partition_types::Reply) -> Vec<String> {
    reply
        .lost()
        .iter()
        .map(|lost| lost.pointer.to_string())
        .collect()
}

/// That `reply` says the card is unreadable with `driver_error`, naming the NVML library that
/// did not load: what the helper says on a host without NVML.
pub fn assert_unreadable_without_nvml(reply: &gpu_partition_types::Reply) {
    let unreadable = reply.unreadable.as_ref().unwrap();
    assert_eq!(unreadable.kind, "driver_error");
    assert!(
        unreadable
            .message
            .read()
            .unwrap()
            .contains("libnvidia-ml.so.1")
    );
}
