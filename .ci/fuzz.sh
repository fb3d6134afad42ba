#!/usr/bin/env bash
# Every fuzz target, instrumented for coverage on the stable toolchain (the flags cargo-fuzz
# gives, without a sanitizer), run from a seed corpus of the repository's fixtures for a fixed
# number of runs from a fixed seed: the same inputs on every machine, so the step cannot fail
# by chance, and a target that finds a defect fails CI. Usage: .ci/fuzz.sh [RUNS_SCALE]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}/fuzz
scale=${1:-1}
triple=$(rustc -vV | sed -n 's/^host: //p')
# Only the targets are instrumented: with --target, RUSTFLAGS skip the build scripts.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
    cargo build --locked -q --release --manifest-path fuzz/Cargo.toml --bins \
    --target "$triple" --target-dir "$target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# target runs seed-files...
run() {
    local name=$1 runs=$(($2 * scale))
    shift 2
    mkdir -p "$work/$name"
    cp "$@" "$work/$name/"
    printf '%s: %s runs from %s seeds\n' "$name" "$runs" "$#"
    "$target/$triple/release/$name" -seed=1 -runs="$runs" -max_len=8192 \
        -artifact_prefix="$work/$name-" "$work/$name" >"$work/$name.log" 2>&1 || {
        tail -n 40 "$work/$name.log"
        for crash in "$work/$name"-*; do
            [ -e "$crash" ] && { echo "== $crash"; od -c "$crash" | head -n 20; }
        done
        exit 1
    }
    grep -E '^Done [0-9]+ runs' "$work/$name.log"
}
run layout_reader 100000 mig-layout/tests/data/mig-parted/*
run reply_reader 300000 mig-layout/tests/data/replies/*.json mxctl/tests/replies/*.json
run apply_readers 300000 mxctl/tests/replies/*.json
run mx_smi_parsers 100000 warm-reset/tests/data/mx-smi/*.txt
run nvidia_smi_parsers 300000 warm-reset/tests/data/nvidia-smi/*.txt
run state_reader 100000 fuzz/seeds/state/*
run amd_readers 100000 fuzz/seeds/amd/* mig-layout/tests/data/dcm/*.json \
    warm-reset/tests/data/amd-smi/list-*.txt
run vgpu_readers 100000 host-sync/tests/samples/vgpu/creatable_vgpu_types-*.txt \
    host-sync/tests/samples/vgpu/current_vgpu_type-*.txt \
    host-sync/tests/samples/vgpu/vgpu-device-manager-config-example-excerpt.yaml
