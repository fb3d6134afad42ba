#!/usr/bin/env bash
# NVIDIA's own Python binding (nvidia-ml-py) drives a MIG session against the fake NVML on one
# card of every published part (fake-nvml/scenarios/parts), then compares what it read with
# what gpu-partition-helper reads of the same state; on a card with SR-IOV it writes vGPUs
# through the VFs' sysfs files, served by the fake driver (`fake-driver-files host`: a FUSE
# mount, so root and /dev/fuse), and asks NVML what the driver made of them.
# Usage: .ci/check_nvml_python.sh PYTHON (a Python with nvidia-ml-py), after
# `cargo build -p fake-nvml -p gpu-partition-helper -p fake-driver-files`.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1
build=${CARGO_TARGET_DIR:-target}/debug
for tool in libfake_nvml.so gpu-partition-helper fake-nvml fake-driver-files; do
    [ -e "$build/$tool" ] || { echo "no $build/$tool: run cargo build -p fake-nvml -p gpu-partition-helper -p fake-driver-files first" >&2; exit 1; }
done
"$python" -c 'import pynvml, importlib.metadata as m; print("nvidia-ml-py", m.version("nvidia-ml-py"))'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The drivers' files are served by a FUSE mount, which needs root and /dev/fuse (CI has both);
# elsewhere the session runs without it, and its vGPU steps say they were skipped.
served=()
if [ "$(id -u)" = 0 ] && [ -e /dev/fuse ]; then
    served=("$build/fake-driver-files" host)
else
    echo "not root, or no /dev/fuse: the sessions run without the drivers' files" >&2
fi
for scenario in fake-nvml/scenarios/parts/*.json; do
    part=$(basename "$scenario" .json)
    mkdir -p "$work/$part/lib"
    cp "$build/libfake_nvml.so" "$work/$part/lib/libnvidia-ml.so.1"
    echo "== $part"
    LD_LIBRARY_PATH="$work/$part/lib" FAKE_NVML_SCENARIO="$scenario" \
        FAKE_NVML_STATE="$work/$part/state.json" \
        ${served[@]+"${served[@]}" "$work/$part/host" --} \
        "$python" fake-nvml/tests/python/session.py "$scenario" \
        "$build/gpu-partition-helper" "$build/fake-nvml" | tee "$work/$part/session.log"
done
# A session stops at its first failure (exit 1), so reaching here means none failed.
passed=$(cat "$work"/*/session.log | grep -c '^ok ' || true)
skipped=$(cat "$work"/*/session.log | grep -c '^     skipped:' || true)
echo "the binding's sessions: $passed steps passed ($skipped of them had nothing to do on their card), 0 failed"
