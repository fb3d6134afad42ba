#!/usr/bin/env bash
# The machine locks a run leaves behind: `snapshot FILE` lists the directory of machine locks
# (/run/gpu-host-probe for root, as gpu-host-probe's machine_lock_dir); `compare FILE` fails,
# naming them, when a file was added since. Every test, doctest and example builds its host over
# a built sysfs tree, whose machine lock is kept beside the tree (gpu-host-probe's rendezvous
# rule), or names a directory of its own (a tree's, or one named as the machine's on the real
# /sys), so a run adds nothing there.
set -euo pipefail
dir=/run/gpu-host-probe
list() { if [ -d "$dir" ]; then (cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort); fi; }
case ${1:-} in
    snapshot) list > "$2" ;;
    compare)
        added=$(comm -13 "$2" <(list))
        if [ -n "$added" ]; then
            echo "the run left these files in $dir:" >&2
            printf '  %s\n' $added >&2
            exit 1
        fi
        echo "nothing added to $dir"
        ;;
    *) echo "usage: $0 snapshot|compare FILE" >&2; exit 2 ;;
esac
