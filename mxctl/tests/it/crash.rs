//! Crash safety: `mxctl sync` killed with SIGKILL at random points while it writes; the state
//! file always reads, old or new, never torn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::test_util::{Act, FakeHelper};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{FileStore, StateStore};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

const KILLS: usize = 200;

#[test]
fn a_sync_killed_at_random_points_never_leaves_a_torn_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
    for bus in 1..=8 {
        sysfs
            .nvidia(&format!("0000:{bus:02x}:00.0"), Some("nvidia"))
            .unwrap();
    }
    // A read of a card whose `block-<card>` file exists says so (`blocked`) and hangs: a kill
    // then lands inside the sync by construction, whatever the machine's speed.
    let marks = dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let helper = FakeHelper::new(dir.path())
        .reply(r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "disabled", "pending": null}, "case": "none_carved"}"#)
        .every_read(Act::Shell(format!(
            "[ ! -f {m}/block-$dev ] || {{ touch {m}/blocked; exec sleep 5; }}",
            m = marks.display()
        )))
        .write()
        .unwrap();
    let state = dir.path().join("state");
    let sync = |pool: &str| {
        let mut command = common::mxctl_on(sysfs.root(), &state, &state.with_file_name("locks"));
        command
            .arg("-q")
            .args(["sync", "--after-boot", "yes", "--pool", pool, "--helper"])
            .arg(&helper);
        command
    };
    // How long one whole sync takes here, so the kills land inside it.
    let started = Instant::now();
    assert!(sync("enabled").status().unwrap().success());
    let span = started.elapsed().as_micros().max(1000) as u64;

    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut killed_mid_run = 0;
    let mut blocked_rounds = 0;
    for round in 0..KILLS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // One round in four (the pool on) a card's read hangs and the kill comes once it does
        // (a kill in the middle by construction); the others, the pool on or off, are killed at
        // a random time within one sync's span (before it, during its writes, or after it).
        let block = (round % 4 == 0).then(|| format!("0000:{:02x}:00.0", seed % 8 + 1));
        if let Some(card) = &block {
            std::fs::write(marks.join(format!("block-{card}")), "").unwrap();
        }
        let mut child = sync(if round % 4 < 2 { "enabled" } else { "disabled" })
            .spawn()
            .unwrap();
        if block.is_some() {
            let give_up = Instant::now() + Duration::from_secs(30);
            while !marks.join("blocked").exists() {
                assert!(
                    Instant::now() < give_up,
                    "round {round}: the read never began"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_micros(seed % 2000));
        } else {
            std::thread::sleep(Duration::from_micros(seed % span));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            killed_mid_run += 1;
        }
        if let Some(card) = &block {
            blocked_rounds += 1;
            assert_eq!(
                status.signal(),
                Some(9),
                "round {round}: the sync ended while a read of {card} hung"
            );
            std::fs::remove_file(marks.join(format!("block-{card}"))).unwrap();
            std::fs::remove_file(marks.join("blocked")).unwrap();
        }
        match FileStore::new(&state).load() {
            Ok(_) => {}
            Err(error) => panic!("round {round}: the state file does not read: {error}"),
        }
    }
    eprintln!(
        "{KILLS} kills, {killed_mid_run} of them before the sync ended ({blocked_rounds} inside a \
         hanging read by construction)"
    );
    // A sync after all that still works, and cleans up what the killed ones left.
    assert!(sync("enabled").status().unwrap().success());
    let leftovers: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".state.json."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_helper_dies_with_the_mxctl_that_started_it_so_no_write_outlives_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("helper.pid");
    let helper = dir.path().join("helper");
    gpu_host_probe::test_util::write_executable(
        &helper,
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{{\"commands\": [{{\"name\": \"read\", \"formats\": [\"1.0\"]}}]}}'; exit 0; fi\necho $$ > '{}'\nexec sleep 30\n",
            pid_file.display()
        ),
    )
    .unwrap();
    let mut probe = common::mxctl_on(
        &dir.path().join("sys"),
        &dir.path().join("state"),
        &dir.path().join("locks"),
    )
    .arg("-q")
    .args([
        "probe",
        "--device",
        "0000:3b:00.0",
        "--deadline",
        "60",
        "--helper",
    ])
    .arg(&helper)
    .spawn()
    .unwrap();
    let waited = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "the helper never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    probe.kill().unwrap();
    probe.wait().unwrap();
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
    };
    let killed = Instant::now();
    while alive(pid) && killed.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !alive(pid),
        "the helper {pid} outlived the mxctl that started it"
    );
}
