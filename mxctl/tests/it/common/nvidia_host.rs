//! A host for `mxctl reset --method nvidia`: a fake `nvidia-smi` printing the published
//! messages (`warm-reset/tests/data/nvidia-smi/`), the driver's `information` files and fd
//! links under a `<proc-root>`, a kernel log file and a state directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::machine::Machine;

/// Four RTX 3090 in two NVLink pairs (GPU0–GPU2, GPU1–GPU3), as published.
pub const TOPOLOGY: &str =
    include_str!("../../../../warm-reset/tests/data/nvidia-smi/topo-m-4x3090-nvlink-pairs.txt");

/// The published busy block.
pub const BUSY: &str =
    include_str!("../../../../warm-reset/tests/data/nvidia-smi/gpu-reset-busy.txt");

/// The GPUs: index, bus ID, UUID.
pub const GPUS: [(u32, &str, &str); 4] = [
    (
        0,
        "00000000:18:00.0",
        "GPU-737e2423-874a-23a4-1126-dfbe3e770000",
    ),
    (
        1,
        "00000000:19:00.0",
        "GPU-737e2423-874a-23a4-1126-dfbe3e770001",
    ),
    (
        2,
        "00000000:1A:00.0",
        "GPU-737e2423-874a-23a4-1126-dfbe3e770002",
    ),
    (
        3,
        "00000000:1B:00.0",
        "GPU-737e2423-874a-23a4-1126-dfbe3e770003",
    ),
];

/// A fake `nvidia-smi`: queries print their files (`gpus-after` once a reset has run);
/// `--gpu-reset -i IDS` does what `reset-mode` says. Every call is logged to `calls`.
const FAKE: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
case "$*" in
  "--query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader")
    if [ -f "$d/reset-done" ] && [ -f "$d/gpus-after" ]; then cat "$d/gpus-after"; else cat "$d/gpus"; fi ;;
  "topo -m") cat "$d/topo" ;;
  "--query-compute-apps=pid,gpu_bus_id --format=csv,noheader") cat "$d/apps" ;;
  "--gpu-reset -i "*)
    mode=$(cat "$d/reset-mode")
    case "$mode" in
      busy) cat "$d/busy"; exit 255 ;;
      error) echo "Unable to reset this GPU: Not Supported"; exit 3 ;;
      hang) exec sleep 60 ;;
      slow) sleep 1 ;;
      kernel-errors) echo "4,900,5000,-;nvidia 0000:18:00.0: not ready 65535ms after FLR; giving up" >> "$d/../kmsg" ;;
    esac
    touch "$d/reset-done"
    for id in $(echo "$3" | tr ',' ' '); do echo "GPU $id was successfully reset."; done ;;
  *) echo "nvidia-smi: unknown option $*" >&2; exit 2 ;;
esac
"#;

machine_host!(NvidiaHost, method "nvidia", tool "nvidia-smi", resets "--gpu-reset", fd 9);

impl NvidiaHost {
    pub fn new() -> NvidiaHost {
        let host = NvidiaHost {
            machine: Machine::new(),
        };
        host.program("bin/nvidia-smi", FAKE);
        let lines: String = GPUS
            .iter()
            .map(|(index, bus, uuid)| format!("{index}, {bus}, {uuid}, NVIDIA GeForce RTX 3090\n"))
            .collect();
        host.write("bin/gpus", &lines);
        host.write("bin/topo", TOPOLOGY);
        host.write("bin/apps", "");
        host.write("bin/busy", BUSY);
        host.write("bin/reset-mode", "ok");
        host.write("kmsg", "6,1,100,-;nvidia: module loaded\n");
        for (minor, bus, uuid) in GPUS {
            let bdf = format!("0000:{}", &bus[9..]).to_ascii_lowercase();
            host.write(
                &format!("proc/driver/nvidia/gpus/{bdf}/information"),
                &format!(
                    "Model:           NVIDIA GeForce RTX 3090\nGPU UUID:        {uuid}\nBus Location:    {bdf}\nDevice Minor:    {minor}\nGPU Excluded:    No\n"
                ),
            );
        }
        host
    }
}
