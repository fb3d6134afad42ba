#!/usr/bin/env bash
# A crate made in a temporary directory, outside this workspace, depends on fake-nvml by path
# and runs the real helper against the fake on a shipped part scenario: the support finds or
# builds what it needs from fake-nvml's own workspace, never running cargo in the caller's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/embedder/src"
cat > "$work/embedder/Cargo.toml" <<TOML
[package]
name = "embedder"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
fake-nvml = { path = "$repo/fake-nvml" }
serde_json = "1"
TOML
cat > "$work/embedder/src/main.rs" <<'RUST'
use fake_nvml::support::{Build, helper_wrapper};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("embedder-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let helper = helper_wrapper(&dir, fake_nvml::scenarios::PART_H200_141GB, Build::Current, None)?;
    let out = std::process::Command::new(&helper)
        .args(["read", "--device", "0000:3b:00.0", "--format", "1"])
        .output()?;
    if !out.status.success() {
        return Err(format!("the helper failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    println!(
        "the helper read {} through the fake: case {}, {} profiles",
        reply["card"]["name"], reply["case"], reply["profiles"].as_array().map_or(0, Vec::len)
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
RUST
# The workspace's lock, so the embedder resolves to the versions already fetched.
cp "$repo/Cargo.lock" "$work/embedder/Cargo.lock"
cd "$work/embedder"
CARGO_TARGET_DIR="$work/target" cargo run -q
