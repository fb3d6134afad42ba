#!/usr/bin/env bash
# Reads every NVIDIA card of this host with the reference helper through the real NVML, and
# checks each reply with `mxctl reply check`, as the probe would read it.
#
# Read only: it runs `gpu-partition-helper --version`, `gpu-partition-helper read` and
# `mxctl reply check`, which only query NVML. It never changes a MIG mode, never creates or
# destroys an instance, never resets a GPU.
#
# Usage: scripts/device-nvml-check.sh [OUT-DIR]   (replies and checks are kept in OUT-DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-target/device-nvml-check}}
mkdir -p "$out"

cargo build --release --quiet -p gpu-partition-helper -p mxctl
helper=target/release/gpu-partition-helper
mxctl=target/release/mxctl

echo "== helper --version"
"$helper" --version | tee "$out/version.json"

# Every NVIDIA display-class function, from sysfs (the helper's BDF form: dddd:bb:dd.f).
devices=()
for dir in /sys/bus/pci/devices/*; do
    [ "$(cat "$dir/vendor" 2>/dev/null)" = 0x10de ] || continue
    case "$(cat "$dir/class" 2>/dev/null)" in 0x03*) ;; *) continue ;; esac
    [ -e "$dir/physfn" ] && continue
    devices+=("$(basename "$dir")")
done
if [ ${#devices[@]} -eq 0 ]; then
    echo "no NVIDIA GPU on this host"
    exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,pci.bus_id,name,mig.mode.current --format=csv,noheader | tee "$out/nvidia-smi.csv" || true

failed=0
for device in "${devices[@]}"; do
    echo "== $device"
    reply="$out/reply-$device.json"
    status=0
    "$helper" read --device "$device" --format 1 >"$reply" 2>"$out/stderr-$device.txt" || status=$?
    echo "helper exit status: $status"
    if [ "$status" -ne 0 ]; then
        cat "$out/stderr-$device.txt"
        failed=1
        continue
    fi
    if "$mxctl" --config /dev/null --json reply check --device "$device" "$reply" | tee "$out/check-$device.json"; then
        echo "accepted"
    else
        echo "REFUSED"
        failed=1
    fi
done
exit "$failed"
