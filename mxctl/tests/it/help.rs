//! What `mxctl --help` and the man pages say mxctl serves: every vendor whose GPUs it
//! partitions or resets, and every reset method.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn help(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The words that name what mxctl partitions and resets.
const SERVED: [&str; 6] = [
    "MetaX",
    "NVIDIA",
    "MIG",
    "vGPU",
    "AMD Instinct",
    "PCI function",
];

#[test]
fn the_short_and_the_long_help_name_every_vendor_and_the_pci_reset() {
    for flag in ["-h", "--help"] {
        let text = help(&[flag]);
        let about = text.split("Usage:").next().unwrap();
        for word in SERVED {
            assert!(about.contains(word), "mxctl {flag} lacks {word}: {about}");
        }
    }
}

#[test]
fn the_long_help_names_the_partition_command_of_each_vendor_and_each_reset_tool() {
    let text = help(&["--help"]);
    let about = text.split("Usage:").next().unwrap();
    for word in [
        "`partition`",
        "`vgpu`",
        "`amd`",
        "mx-smi",
        "nvidia-smi",
        "amd-smi",
    ] {
        assert!(about.contains(word), "mxctl --help lacks {word}: {about}");
    }
}

#[test]
fn the_reset_help_names_amd_and_any_pci_function() {
    for flag in ["-h", "--help"] {
        let text = help(&["reset", flag]);
        let about = text.split("Usage:").next().unwrap();
        for word in ["MetaX", "NVIDIA", "AMD Instinct", "any PCI function"] {
            assert!(
                about.contains(word),
                "mxctl reset {flag} lacks {word}: {about}"
            );
        }
        assert!(
            text.contains("amd (amd-smi reset --gpureset"),
            "mxctl reset {flag} has no amd method: {text}"
        );
    }
}

#[test]
fn the_man_page_of_mxctl_carries_the_long_description() {
    let dir = crate::generate::generate();
    let page = std::fs::read_to_string(dir.path().join("man/mxctl.1"))
        .unwrap()
        .replace("\\-", "-");
    for word in [
        "AMD Instinct compute and memory partitions",
        "amd-smi",
        "XGMI hive",
    ] {
        assert!(page.contains(word), "mxctl.1 lacks {word}");
    }
}
