#!/usr/bin/env bash
# Builds the Debian package target/debian/mxctl_<version>-1_<arch>.deb: the release binaries
# (mxctl and the reference helper), the man pages and completions generated from mxctl's
# command line, then cargo-deb. Needs cargo-deb (`cargo install cargo-deb`), or CARGO_DEB
# naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo_deb=${CARGO_DEB:-cargo-deb}

# The package strips its binaries (`--strip` below), so the release profile's line tables
# would be made only to be thrown away.
CARGO_PROFILE_RELEASE_DEBUG=false cargo build --release --locked -p mxctl -p gpu-partition-helper
target_dir=${CARGO_TARGET_DIR:-target}
assets="$target_dir/release/assets"
rm -rf "$assets"
"$target_dir/release/mxctl" generate --out-dir "$assets"
# Debian keeps man pages and changelogs compressed, reproducibly (no name, no time stamp).
gzip -9n "$assets"/man/*.1
gzip -9n <CHANGELOG.md >"$assets/changelog.gz"
# The package installs the helper under /usr/libexec (Debian keeps /opt for add-ons), and its
# conffile names it there; every other key stays the sample's, commented out.
sed 's|^# gpu-partition-helper = .*|gpu-partition-helper = /usr/libexec/mxctl/gpu-partition-helper|' \
    mxctl.conf >"$assets/mxctl.conf"
grep -qx 'gpu-partition-helper = /usr/libexec/mxctl/gpu-partition-helper' "$assets/mxctl.conf"
"$cargo_deb" -p mxctl --no-build --strip "$@"
