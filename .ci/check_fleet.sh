#!/usr/bin/env bash
# The fleet's own tools on every `mxctl metrics` sample the tests left (DIR): Debian's
# `promtool check metrics`, and a real prometheus-node-exporter on 127.0.0.1 whose textfile
# collector reads the sample, scraped once: our series are served and
# node_textfile_scrape_error is 0.
set -euo pipefail
dir=$1
[ -n "$(ls "$dir"/*.prom 2>/dev/null)" ] || { echo "no samples in $dir" >&2; exit 1; }
for sample in "$dir"/*.prom; do
    echo "-- promtool check metrics < $(basename "$sample")"
    promtool check metrics <"$sample"
done
scratch=$(mktemp -d)
trap 'kill "$exporter" 2>/dev/null || true; rm -rf "$scratch"' EXIT
port=$((20000 + RANDOM % 20000))
for sample in "$dir"/*.prom; do
    rm -f "$scratch"/*.prom
    cp "$sample" "$scratch/mxctl.prom"
    prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
        --collector.disable-defaults --collector.textfile \
        --collector.textfile.directory="$scratch" >"$scratch/log" 2>&1 &
    exporter=$!
    scrape=""
    for _ in $(seq 50); do
        scrape=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())' \
            "http://127.0.0.1:$port/metrics" 2>/dev/null) && break
        sleep 0.1
    done
    kill "$exporter"; wait "$exporter" 2>/dev/null || true
    name=$(basename "$sample")
    grep -qx 'node_textfile_scrape_error 0' <<<"$scrape" || {
        echo "$name: node_exporter could not read it:" >&2
        grep -E '^node_textfile|level=' <<<"$scrape" >&2 || true
        cat "$scratch/log" >&2
        exit 1
    }
    grep -q '^mxctl_gpu_partitioning_status{status="not_reported"}' <<<"$scrape" || {
        echo "$name: our series are not served" >&2
        exit 1
    }
    echo "-- node_exporter served $name: $(grep -c '^mxctl_' <<<"$scrape") mxctl series, $(grep -x 'node_textfile_scrape_error 0' <<<"$scrape")"
    grep -E '^node_textfile_mtime_seconds|^mxctl_layout_last_apply|^mxctl_warm_reset_last' <<<"$scrape" || true
done
echo "fleet tools: ok"
