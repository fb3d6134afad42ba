//! The Ansible playbook of `examples/ansible` run for real: `ansible-playbook` (ansible-core,
//! installed by `.ci/run`) over an inventory of three hosts that all use the local connection,
//! each with its own state directory and fake `mx-smi`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::pool::Pool;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `ansible-playbook`: `$ANSIBLE_PLAYBOOK`, the virtual environment `.ci/run` makes, or `PATH`.
fn ansible_playbook() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ANSIBLE_PLAYBOOK") {
        return Some(PathBuf::from(path));
    }
    let venv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ansible-venv/bin/ansible-playbook");
    if venv.exists() {
        return Some(venv);
    }
    let on_path = Command::new("ansible-playbook").arg("--version").output();
    on_path
        .is_ok_and(|output| output.status.success())
        .then(|| PathBuf::from("ansible-playbook"))
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_playbook_runs_every_action_of_a_plan_once_in_phase_order() {
    common::require_root();
    let Some(playbook_runner) = ansible_playbook() else {
        // CI installs ansible-core; there its absence is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "ansible-playbook is not installed"
        );
        eprintln!("skipped: ansible-playbook is not installed (bash .ci/run installs it)");
        return;
    };
    let pool = Pool::new();
    let plan = pool.plan();
    let mut inventory = String::from("[metax_group]\n");
    for (name, host) in &pool.hosts {
        let list = |items: &[&Path]| {
            let quoted: Vec<String> = items.iter().map(|p| format!("'{}'", p.display())).collect();
            format!("\"[{}]\"", quoted.join(", "))
        };
        let config = pool.config.as_path();
        let state = host.path("state");
        let proc_root = host.path("proc");
        let mx_smi = host.path("bin/mx-smi");
        let kmsg = host.path("bin/kmsg");
        inventory.push_str(&format!(
            "{name} ansible_connection=local mxctl={mxctl} workdir={workdir} mxctl_args={args} step_args={step}\n",
            mxctl = env!("CARGO_BIN_EXE_mxctl"),
            workdir = host.dir.path().display(),
            args = list(&[Path::new("--config"), config, Path::new("--state-dir"), &state, Path::new("--proc-root"), &proc_root]),
            step = list(&[Path::new("--mx-smi"), &mx_smi, Path::new("--kmsg"), &kmsg]),
        ));
    }
    inventory.push_str(
        "\n[metax_group:vars]\nansible_python_interpreter=\"{{ ansible_playbook_python }}\"\n",
    );
    let inventory_path = pool.top.path().join("inventory.ini");
    std::fs::write(&inventory_path, inventory).unwrap();
    let ansible_home = pool.top.path().join("ansible-home");
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ansible/warm-reset.yml");
    let run = || {
        Command::new(&playbook_runner)
            .arg("-i")
            .arg(&inventory_path)
            .arg(&playbook)
            .arg("-e")
            .arg(format!("plan_file={}", plan.display()))
            .env("ANSIBLE_HOME", &ansible_home)
            .env("ANSIBLE_LOCAL_TEMP", ansible_home.join("tmp"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_HOST_KEY_CHECKING", "False")
            .output()
            .unwrap()
    };
    let output = run();
    let log = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{log}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let records = pool.assert_faulty_only_ran_once_in_phase_order();

    // Run again: every step reports its first result; nothing runs twice.
    let again = run();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert_eq!(pool.records(), records);
}
