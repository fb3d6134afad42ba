//! The Ansible playbook of `examples/ansible` run for real: `ansible-playbook` (ansible-core,
//! installed by `.ci/run`) over an inventory of three hosts that all use the local connection,
//! each with its own state directory and fake `mx-smi`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::pool::Pool;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `ansible-playbook`: `$ANSIBLE_PLAYBOOK`, the virtual environment `.ci/run` makes in the
/// target directory (wherever `CARGO_TARGET_DIR` puts it), or `PATH`.
fn ansible_playbook() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ANSIBLE_PLAYBOOK") {
        return Some(PathBuf::from(path));
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let venv = tmp
        .parent()
        .unwrap_or(tmp)
        .join("ansible-venv/bin/ansible-playbook");
    if venv.exists() {
        return Some(venv);
    }
    let on_path = Command::new("ansible-playbook").arg("--version").output();
    on_path
        .is_ok_and(|output| output.status.success())
        .then(|| PathBuf::from("ansible-playbook"))
}

/// `RUNNER -i INVENTORY PLAYBOOK`, Ansible's home (its temporary files under it) in `home`,
/// without colours or host key checks.
fn playbook_run(runner: &Path, inventory: &Path, playbook: &Path, home: &Path) -> Command {
    let mut command = Command::new(runner);
    command
        .arg("-i")
        .arg(inventory)
        .arg(playbook)
        .env("ANSIBLE_HOME", home)
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False");
    command
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_playbook_runs_every_action_of_a_plan_once_in_phase_order() {
    common::require_root();
    let Some(playbook_runner) = installed() else {
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
        let locks = host.path("locks");
        let proc_root = host.path("proc");
        // A machine of its own per host: the three hosts' steps run at once.
        let sysfs = host.path("sys");
        let mx_smi = host.path("bin/mx-smi");
        let kmsg = host.path("bin/kmsg");
        inventory.push_str(&format!(
            "{name} ansible_connection=local mxctl={mxctl} workdir={workdir} mxctl_args={args} step_args={step}\n",
            mxctl = env!("CARGO_BIN_EXE_mxctl"),
            workdir = host.dir.path().display(),
            args = list(&[Path::new("--config"), config, Path::new("--state-dir"), &state, Path::new("--lock-dir"), &locks, Path::new("--proc-root"), &proc_root, Path::new("--sysfs-root"), &sysfs]),
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
        playbook_run(&playbook_runner, &inventory_path, &playbook, &ansible_home)
            .arg("-e")
            .arg(format!("plan_file={}", plan.display()))
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

/// The inventory of `hosts` for `partition.yml`, each host local with its own state, sysfs,
/// helper and nvidia-smi.
fn partition_inventory(
    dir: &Path,
    hosts: &[(&str, &common::partition_host::PartitionHost)],
) -> PathBuf {
    let mut inventory = String::from("[gpu_pool]\n");
    for (name, host) in hosts {
        let list = |items: &[&std::ffi::OsStr]| {
            let quoted: Vec<String> = items
                .iter()
                .map(|p| format!("'{}'", p.to_string_lossy()))
                .collect();
            format!("\"[{}]\"", quoted.join(", "))
        };
        let state = host.path("state");
        let locks = host.path("locks");
        let proc_root = host.path("proc");
        let sysfs = host.sysfs.root().to_path_buf();
        let nvidia_smi = host.path("bin/nvidia-smi");
        let kmsg = host.path("kmsg");
        inventory.push_str(&format!(
            "{name} ansible_connection=local mxctl={mxctl} layout_dest={dest} mxctl_args={args} apply_args={apply}\n",
            mxctl = env!("CARGO_BIN_EXE_mxctl"),
            dest = host.path("layout.yaml").display(),
            args = list(&[
                "--config".as_ref(), "/dev/null".as_ref(),
                "--state-dir".as_ref(), state.as_os_str(),
                "--lock-dir".as_ref(), locks.as_os_str(),
                "--sysfs-root".as_ref(), sysfs.as_os_str(),
                "--proc-root".as_ref(), proc_root.as_os_str(),
            ]),
            apply = list(&[
                "--pool".as_ref(), "enabled".as_ref(),
                "--helper".as_ref(), host.helper.as_os_str(),
                "--nvidia-smi".as_ref(), nvidia_smi.as_os_str(),
                "--kmsg".as_ref(), kmsg.as_os_str(),
            ]),
        ));
    }
    inventory.push_str(
        "\n[gpu_pool:vars]\nansible_python_interpreter=\"{{ ansible_playbook_python }}\"\n",
    );
    let path = dir.join("inventory.ini");
    std::fs::write(&path, inventory).unwrap();
    path
}

fn run_partition(
    runner: &Path,
    dir: &Path,
    inventory: &Path,
    layout: &Path,
    batch: u32,
) -> std::process::Output {
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ansible/partition.yml");
    playbook_run(runner, inventory, &playbook, &dir.join("ansible-home"))
        .arg("-e")
        .arg(format!("layout_file={}", layout.display()))
        .args(["-e", "layout=all-balanced", "-e", &format!("batch={batch}")])
        .output()
        .unwrap()
}

/// [`ansible_playbook`], or none, said on stderr, for the test to skip. CI installs
/// ansible-core; there its absence is a failure, not a skip.
fn installed() -> Option<PathBuf> {
    let found = ansible_playbook();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "ansible-playbook is not installed"
        );
        eprintln!("skipped: ansible-playbook is not installed (bash .ci/run installs it)");
    }
    found
}

#[test]
fn the_partition_playbook_applies_a_layout_in_batches_and_stops_at_the_first_failed_host() {
    use common::partition_host::{H100_OFF, PartitionHost};
    let Some(runner) = installed() else { return };
    let dir = tempfile::tempdir().unwrap();
    let layout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mig-layout/tests/data/mig-parted/gpu-operator-h100-excerpt.yaml");
    let h100 = || PartitionHost::new(&[("0000:3b:00.0", H100_OFF, "0x2330")]);
    let (p1, p2, p3) = (h100(), h100(), h100());
    // p2's card has a client: its apply is blocked (gpu_busy), which fails the play.
    p2.sync("enabled");
    p2.change_nvml(|state| {
        state["devices"][0]["clients"] = serde_json::json!([{"pid": 4242, "name": "python3"}]);
    });
    let inventory = partition_inventory(dir.path(), &[("p1", &p1), ("p2", &p2), ("p3", &p3)]);
    let output = run_partition(&runner, dir.path(), &inventory, &layout, 1);
    let log = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{log}");
    // p1 done; p2 blocked; p3 never ran.
    assert_eq!(p1.card("0000:3b:00.0")["mig_mode"]["current"], 1, "{log}");
    assert!(log.contains("gpu_busy"), "{log}");
    assert_eq!(p2.card("0000:3b:00.0")["mig_mode"]["current"], 0, "{log}");
    assert_eq!(
        p3.calls(),
        Vec::<String>::new(),
        "p3 ran after p2 failed:\n{log}"
    );
    assert_eq!(p3.status()["status"], "not_reported");
    // p2's client gone, every host in one batch: p1 is zero steps, p2 and p3 done.
    p2.change_nvml(|state| {
        state["devices"][0]["clients"] = serde_json::json!([]);
    });
    let pool = [("p1", &p1), ("p2", &p2), ("p3", &p3)];
    let inventory = partition_inventory(dir.path(), &pool);
    let output = run_partition(&runner, dir.path(), &inventory, &layout, 3);
    let log = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{log}");
    for (name, host) in &pool {
        assert_eq!(host.status()["reason"], "ready", "{name}:\n{log}");
    }
    // Again: nothing changes anywhere.
    let again = run_partition(&runner, dir.path(), &inventory, &layout, 3);
    let log = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{log}");
    assert!(log.contains("changed=0"), "{log}");
    assert!(!log.contains("changed=1"), "{log}");
}
