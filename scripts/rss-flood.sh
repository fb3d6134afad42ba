#!/usr/bin/env bash
# Peak RSS of `mxctl probe` over N cards whose helpers flood stdout (`yes`), as
# /usr/bin/time -v reports it: each capture is bounded (output too large), and so must the
# total be, whatever N.
#
#   scripts/rss-flood.sh [N…]      (default: 1 8 16; needs GNU time: apt-get install time)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
[ -x "$target/release/mxctl" ] || cargo build --release --locked -q -p mxctl
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
cat >"$dir/helper" <<'HELPER'
#!/bin/sh
if [ "$1" = --version ]; then echo '{"commands": [{"name": "read", "formats": ["1.0"]}]}'; exit 0; fi
exec yes
HELPER
chmod 0755 "$dir/helper"
for n in "${@:-1 8 16}"; do
    for count in $n; do
        devices=()
        for i in $(seq 1 "$count"); do devices+=(--device "$(printf '0000:%02x:00.0' "$i")"); done
        rss=$(/usr/bin/time -v "$target/release/mxctl" --config /dev/null -q --state-dir "$dir/state" \
            probe --helper "$dir/helper" --deadline 20 "${devices[@]}" 2>&1 >/dev/null |
            awk -F': ' '/Maximum resident set size/ {print $2}')
        echo "cards=$count peak_rss_kib=$rss ($((rss / 1024)) MiB)"
    done
done
