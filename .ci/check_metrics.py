"""Reads the `mxctl metrics` samples that `mxctl/tests/it/metrics.rs` left with the Prometheus
project's own text parser (prometheus_client), and checks what each must say.

Usage: check_metrics.py DIR   (DIR holds fresh.prom, no-gpus.prom, four-gpus.prom, after-reset.prom)
"""

import math
import pathlib
import sys

from prometheus_client.parser import text_string_to_metric_families

STATUSES = {"active", "entering", "inactive", "leaving", "not_reported"}
MODES = {
    "not_supported", "disabled", "enable_on_reboot", "enabled", "disable_on_reboot",
    "unknown", "not_checked", "not_in_use", "possibly_enabled",
}


def parse(path):
    """Families by name; every one a gauge with its help text."""
    families = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.type == "gauge", (path, family.name, family.type)
        assert family.documentation, (path, family.name)
        families[family.name] = family.samples
    return families


def status_is(families, current):
    samples = families["mxctl_gpu_partitioning_status"]
    assert {s.labels["status"] for s in samples} == STATUSES, samples
    for s in samples:
        assert s.value == (1.0 if s.labels["status"] == current else 0.0), s


def main(directory):
    d = pathlib.Path(directory)

    fresh = parse(d / "fresh.prom")
    status_is(fresh, "not_reported")
    assert "mxctl_last_sync_timestamp_seconds" not in fresh
    assert "mxctl_warm_reset_last" not in fresh

    no_gpus = parse(d / "no-gpus.prom")
    status_is(no_gpus, "inactive")
    [reason] = no_gpus["mxctl_gpu_partitioning_reason_info"]
    assert reason.labels == {"reason": "no_partitionable_gpu"} and reason.value == 1.0, reason
    [synced] = no_gpus["mxctl_last_sync_timestamp_seconds"]
    assert synced.value > 1.6e9 and math.isfinite(synced.value), synced

    four = parse(d / "four-gpus.prom")
    status_is(four, "entering")
    by_device = {}
    for s in four["mxctl_gpu_partition_mode"]:
        assert s.labels["mode"] in MODES, s
        by_device.setdefault(s.labels["device"], []).append(s)
    assert len(by_device) == 4, sorted(by_device)
    current = {}
    for device, samples in by_device.items():
        assert {s.labels["mode"] for s in samples} == MODES, device
        ones = [s.labels["mode"] for s in samples if s.value == 1.0]
        assert len(ones) == 1 and sum(s.value for s in samples) == 1.0, (device, samples)
        current[device] = ones[0]
    assert current == {
        "0000:3b:00.0": "enabled",
        "0000:3d:00.0": "enable_on_reboot",
        "0000:3e:00.0": "not_supported",
        "0000:3f:00.0": "not_checked",
    }, current

    reset = parse(d / "after-reset.prom")
    [last] = reset["mxctl_warm_reset_last"]
    assert last.labels == {"outcome": "done", "reason": ""}, last
    assert last.value > 1.6e9, last

    print(f"metrics: {len(list(d.glob('*.prom')))} samples read by prometheus_client, all as expected")


if __name__ == "__main__":
    main(sys.argv[1])
