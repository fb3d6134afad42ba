#!/usr/bin/env bash
# Builds the Debian package target/debian/mxctl_<version>-1_<arch>.deb: the release binaries
# (mxctl and the reference helper), the man pages and completions generated from mxctl's
# command line, then cargo-deb. Needs cargo-deb (`cargo install cargo-deb`), or CARGO_DEB
# naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo_deb=${CARGO_DEB:-cargo-deb}

cargo build --release --locked -p mxctl -p gpu-partition-helper
target_dir=${CARGO_TARGET_DIR:-target}
assets="$target_dir/release/assets"
rm -rf "$assets"
"$target_dir/release/mxctl" generate --out-dir "$assets"
"$cargo_deb" -p mxctl --no-build --strip "$@"
