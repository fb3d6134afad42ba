//! `mxctl generate` (hidden): the man pages and completions the package installs, made from the
//! command line's definition.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

/// The man pages and completions, generated into a temporary directory.
pub fn generate() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "generate", "--out-dir"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn every_visible_command_has_a_man_page_and_the_hidden_one_has_none() {
    let dir = generate();
    assert_eq!(
        names(&dir.path().join("man")),
        [
            "mxctl-amd-apply.1",
            "mxctl-amd-assert.1",
            "mxctl-amd-leave.1",
            "mxctl-amd-restore.1",
            "mxctl-amd.1",
            "mxctl-gpus.1",
            "mxctl-labels.1",
            "mxctl-metrics.1",
            "mxctl-partition-apply.1",
            "mxctl-partition-assert.1",
            "mxctl-partition-create.1",
            "mxctl-partition-destroy.1",
            "mxctl-partition-export.1",
            "mxctl-partition-leave.1",
            "mxctl-partition-list.1",
            "mxctl-partition-own.1",
            "mxctl-partition-restore.1",
            "mxctl-partition.1",
            "mxctl-probe.1",
            "mxctl-reply-check.1",
            "mxctl-reply.1",
            "mxctl-reset-plan.1",
            "mxctl-reset-step.1",
            "mxctl-reset.1",
            "mxctl-status.1",
            "mxctl-sync.1",
            "mxctl-vgpu-apply.1",
            "mxctl-vgpu-assert.1",
            "mxctl-vgpu-export.1",
            "mxctl-vgpu-leave.1",
            "mxctl-vgpu-restore.1",
            "mxctl-vgpu.1",
            "mxctl.1",
        ]
    );
    let sync = std::fs::read_to_string(dir.path().join("man/mxctl-sync.1")).unwrap();
    assert!(
        sync.starts_with(".ie \\n(.g .ds Aq"),
        "not roff: {sync:.80}"
    );
    assert!(sync.contains("after\\-boot"), "{sync}");
}

#[test]
fn bash_zsh_and_fish_completions_name_every_command() {
    let dir = generate();
    let completions = dir.path().join("completions");
    assert_eq!(names(&completions), ["_mxctl", "mxctl.bash", "mxctl.fish"]);
    for file in names(&completions) {
        let text = std::fs::read_to_string(completions.join(&file)).unwrap();
        for command in [
            "gpus", "sync", "status", "probe", "reply", "reset", "metrics",
        ] {
            assert!(text.contains(command), "{file} lacks {command}");
        }
        assert!(
            !text.contains("out-dir"),
            "{file} offers the hidden command"
        );
    }
}

#[test]
fn the_man_pages_name_the_declared_layouts_reasons_labels_and_series() {
    let dir = generate();
    let page = |name: &str| std::fs::read_to_string(dir.path().join("man").join(name)).unwrap();
    let partition = page("mxctl-partition.1")
        .replace("\\-", "-")
        .replace("\\_", "_");
    for word in [
        "layout_drifted",
        "card_changed",
        "hook_failed",
        "partition restore",
        "mxctl-layout.target",
        "layout-state",
        "mxctl_layout_declared",
        "mxctl_layout_drift",
    ] {
        assert!(partition.contains(word), "mxctl-partition.1 lacks {word}");
    }
    let labels = page("mxctl-labels.1").replace("\\-", "-");
    assert!(
        labels.contains("layout-state (holds, drifted or unknown"),
        "{labels}"
    );
}
