#!/usr/bin/env bash
# NVIDIA's own Python binding (nvidia-ml-py) drives a MIG session against the fake NVML on one
# card of every published part (fake-nvml/scenarios/parts), then compares what it read with
# what gpu-partition-helper reads of the same state. Usage: .ci/check_nvml_python.sh PYTHON
# (a Python with nvidia-ml-py), after `cargo build -p fake-nvml -p gpu-partition-helper`.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$1
build=${CARGO_TARGET_DIR:-target}/debug
for tool in libfake_nvml.so gpu-partition-helper fake-nvml; do
    [ -e "$build/$tool" ] || { echo "no $build/$tool: run cargo build -p fake-nvml -p gpu-partition-helper first" >&2; exit 1; }
done
"$python" -c 'import pynvml, importlib.metadata as m; print("nvidia-ml-py", m.version("nvidia-ml-py"))'
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for scenario in fake-nvml/scenarios/parts/*.json; do
    part=$(basename "$scenario" .json)
    mkdir -p "$work/$part/lib"
    cp "$build/libfake_nvml.so" "$work/$part/lib/libnvidia-ml.so.1"
    echo "== $part"
    LD_LIBRARY_PATH="$work/$part/lib" FAKE_NVML_SCENARIO="$scenario" \
        FAKE_NVML_STATE="$work/$part/state.json" \
        "$python" fake-nvml/tests/python/session.py "$scenario" \
        "$build/gpu-partition-helper" "$build/fake-nvml"
done
