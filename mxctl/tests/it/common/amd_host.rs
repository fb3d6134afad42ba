//! A host for `mxctl reset --method amd`: eight MI300X in one XGMI hive in a built sysfs tree
//! (`host_sync::fake_sysfs::FakeSysfs::amd_instinct`, each with its render node), a fake
//! `amd-smi` printing `amd-smi list` in its published layout
//! (`warm-reset/tests/data/amd-smi/`), fd links under a `<proc-root>`, a kernel log file and a
//! state directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::machine::Machine;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};

/// The published two-GPU listing (amd-smi's changelog).
pub const LISTING_2GPU: &str =
    include_str!("../../../../warm-reset/tests/data/amd-smi/list-2gpu-changelog.txt");

/// The hive every GPU of the host is in, as the kernel prints it: the simulated host's, whose
/// platform this host is too.
pub const HIVE: u64 = warm_reset::sim::SIM_HIVE;

/// The eight GPUs of an eight-way MI300X platform, in `amd-smi list`'s order.
pub const GPUS: [&str; 8] = warm_reset::sim::SIM_HIVE_GPUS;

/// A fake `amd-smi`: `list` prints its file; `reset --gpureset --gpu ADDRESSES` does what
/// `reset-mode` says. The success output is the layout amd-smi's source prints (inferred: no
/// run of it is published). Every call is logged to `calls`.
const FAKE: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
case "$*" in
  list) cat "$d/list" ;;
  "reset --gpureset --gpu "*)
    mode=$(cat "$d/reset-mode")
    case "$mode" in
      hang) exec sleep 60 ;;
      error) cat "$d/exception"; exit 1 ;;
      unable) echo "GPU: 0"; echo "    GPU_RESET: [AMDSMI_STATUS_BUSY] Unable to reset GPU"; exit 0 ;;
      driver-lost) rm "$d/../sys/devices/pci0000:00/0000:65:00.0/driver" ;;
      kernel-errors) echo "6,900,5000,-;amdgpu 0000:46:00.0: amdgpu: GPU reset(1) failed" >> "$d/../kmsg" ;;
    esac
    # The kernel resets the hive and logs it, GPU by GPU, at information level.
    n=900
    for gpu in $(cat "$d/hive"); do
      n=$((n + 1)); echo "6,$n,5000,-;amdgpu $gpu: amdgpu: GPU reset begin!" >> "$d/../kmsg"
      n=$((n + 1)); echo "6,$n,5001,-;amdgpu $gpu: amdgpu: GPU reset(1) succeeded!" >> "$d/../kmsg"
    done
    shift 3
    i=0
    for gpu in "$@"; do echo "GPU: $i"; echo "    GPU_RESET: Successfully reset GPU"; i=$((i + 1)); done ;;
  *) echo "amd-smi: unknown arguments $*" >&2; exit 2 ;;
esac
"#;

machine_host!(AmdHost, method "amd", tool "amd-smi", resets "reset", fd 7);

impl AmdHost {
    /// Eight MI300X in hive [`HIVE`], in CPX/NPS1, render nodes 128 to 135.
    pub fn new() -> AmdHost {
        Self::with_gpus(&GPUS)
    }

    /// The GPUs at `addresses`, all in hive [`HIVE`], listed by `amd-smi list` in that order
    /// in the published layout.
    pub fn with_gpus(addresses: &[&str]) -> AmdHost {
        let host = AmdHost {
            machine: Machine::new(),
        };
        host.program("bin/amd-smi", FAKE);
        let mut listing = Vec::new();
        for ((index, bdf), node) in addresses.iter().enumerate().zip(128..) {
            host.sysfs
                .amd_instinct(
                    bdf,
                    "0x74a1",
                    (
                        ComputePartition::Cpx,
                        &[
                            ComputePartition::Spx,
                            ComputePartition::Dpx,
                            ComputePartition::Qpx,
                            ComputePartition::Cpx,
                        ],
                    ),
                    Some((
                        MemoryPartition::Nps1,
                        &[MemoryPartition::Nps1, MemoryPartition::Nps4],
                    )),
                    Some(HIVE),
                )
                .unwrap();
            std::fs::create_dir_all(
                host.sysfs
                    .device_dir(bdf)
                    .join(format!("drm/renderD{node}")),
            )
            .unwrap();
            listing.push(format!(
                "GPU: {index}\n    BDF: {bdf}\n    UUID: {index:02x}ff74a1-0000-1000-8000-{index:012x}\n    KFD_ID: {}\n    NODE_ID: {}\n    PARTITION_ID: 0\n",
                40000 + index,
                index + 2
            ));
        }
        host.write("bin/list", &listing.join("\n"));
        host.write("bin/hive", &addresses.join(" "));
        host.write(
            "bin/exception",
            include_str!("../../../../warm-reset/tests/data/amd-smi/library-exception-busy.txt"),
        );
        host.write("bin/reset-mode", "ok");
        host.write(
            "kmsg",
            "6,1,100,-;[drm] amdgpu kernel modesetting enabled.\n",
        );
        host
    }
}
