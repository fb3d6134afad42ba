//! One machine, one rendezvous: over the machine's own sysfs every `Host` meets every other at
//! one lock and one record of writes, whatever directory it names; a built tree's lock is kept
//! beside the tree. The machine's hosts here take a test's directory for the user's default
//! (`test_util::machine_host`), so nothing touches the machine's own locks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::test_util::machine_host;
use gpu_host_probe::{Host, Ledger, LockError, Since, Writer, machine_lock_path};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};

const CARD: Bdf = Bdf::on_bus(0x3b);

/// A host of the machine's own sysfs whose default directory of machine locks is `run`; its
/// lock there is `sys.lock` (which says `/sys` is the machine's sysfs here).
fn of_the_machine(state: PathBuf, run: &Path) -> Host {
    let host = machine_host(state, run);
    assert_eq!(
        machine_lock_path(&host).unwrap(),
        run.join("sys.lock"),
        "/sys is not a sysfs mount here"
    );
    host
}

/// Records a write to [`CARD`] under `host`'s lock, and gives the mark of the record before.
fn record_a_write(host: &Host) -> gpu_host_probe::WriteMark {
    let before = host.now().writes.mark().unwrap();
    let lock = host.try_lock().unwrap();
    lock.record_write(&[CARD], Writer::HelperApply).unwrap();
    before
}

/// Whether `reader` tells a write `writer` records to [`CARD`] (under `writer`'s lock, so none
/// may be held): the two hosts meet at one record of writes.
fn sees_a_write_of(reader: &Host, writer: &Host) -> bool {
    let mark = record_a_write(writer);
    matches!(reader.now().writes.since(&mark, &[CARD]), Since::Written(_))
}

#[test]
fn over_the_machines_sysfs_a_second_lock_directory_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let toolstack = of_the_machine(dir.path().join("toolstack"), &run);
    let _held = toolstack.try_lock().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let mxctl = machine_host(dir.path().join("mxctl"), &run).with_lock_dir(&elsewhere);
    let refused = mxctl.try_lock().unwrap_err();
    match &refused {
        LockError::SecondLockDir {
            named,
            machines,
            sysfs_root,
        } => {
            assert_eq!(named, &elsewhere);
            assert_eq!(machines, &run);
            assert_eq!(sysfs_root, Path::new("/sys"));
        }
        other => panic!("{other}"),
    }
    assert!(!refused.is_busy());
    let said = refused.to_string();
    assert!(said.contains(&elsewhere.display().to_string()), "{said}");
    assert!(said.contains(&run.display().to_string()), "{said}");
    // Refused before anything is made: no directory of locks, no state directory.
    assert!(!elsewhere.exists());
    assert!(!dir.path().join("mxctl").exists());
    assert!(matches!(
        mxctl.lock_dir(),
        Err(LockError::SecondLockDir { .. })
    ));
}

#[test]
fn a_host_refused_its_lock_directory_cannot_tell_the_writes_since_an_observation() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let refused =
        machine_host(dir.path().join("state"), &run).with_lock_dir(dir.path().join("elsewhere"));
    let writes = refused.now().writes;
    match &writes {
        Ledger::Unreadable { path, why } => {
            assert!(path.starts_with(dir.path().join("elsewhere")), "{path:?}");
            assert!(why.contains("refusing the lock directory"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let mark = gpu_host_probe::WriteMark::new(None, 0);
    assert!(matches!(writes.since(&mark, &[CARD]), Since::CannotTell(_)));
}

#[test]
fn every_host_of_the_machines_sysfs_meets_at_one_lock_and_one_record_however_it_spells_the_directory()
 {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run/gpu-host-probe");
    std::fs::create_dir_all(&run).unwrap();
    std::os::unix::fs::symlink(dir.path().join("run"), dir.path().join("var-run")).unwrap();
    let toolstack = of_the_machine(dir.path().join("toolstack"), &run);
    // The machine's own directory, named by another path (as `/var/run` is `/run`): it is the
    // machine's, so it is taken.
    let mxctl = machine_host(dir.path().join("mxctl"), &run)
        .with_lock_dir(dir.path().join("var-run/gpu-host-probe"));
    let held = toolstack.try_lock().unwrap();
    match mxctl.try_lock().unwrap_err() {
        LockError::MachineBusy { state_dir, .. } => {
            assert_eq!(state_dir.as_deref(), Some(toolstack.state_dir()));
        }
        other => panic!("{other}"),
    }
    drop(held);
    let mark = record_a_write(&toolstack);
    match mxctl.now().writes.since(&mark, &[CARD]) {
        Since::Written(found) => assert_eq!(found[0].device, Some(CARD)),
        other => panic!("{other:?}"),
    }
    assert!(sees_a_write_of(&toolstack, &mxctl));
}

#[test]
fn a_directory_named_as_the_machines_is_taken_as_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let named = dir.path().join("named");
    let host = machine_host(dir.path().join("state"), &run).with_machine_lock_dir(&named);
    let held = host.try_lock().unwrap();
    assert_eq!(held.machine_path(), named.join("sys.lock"));
    assert_eq!(host.lock_dir().unwrap(), named);
    assert!(!run.exists(), "the default directory was touched");
}

#[test]
fn a_container_naming_the_hosts_directory_mounted_elsewhere_meets_the_hosts_processes() {
    let dir = tempfile::tempdir().unwrap();
    // The host's /run/gpu-host-probe; the container's own /run; and the host's /run mounted
    // into the container at /host-run (a link stands for the bind mount: the same directory
    // at another path).
    let host_run = dir.path().join("host/run");
    let container = dir.path().join("container");
    std::fs::create_dir_all(&host_run).unwrap();
    std::fs::create_dir_all(&container).unwrap();
    std::os::unix::fs::symlink(&host_run, container.join("host-run")).unwrap();
    let mxctl = of_the_machine(
        dir.path().join("host/state"),
        &host_run.join("gpu-host-probe"),
    );
    let mounted = container.join("host-run/gpu-host-probe");
    let toolstack = machine_host(
        container.join("state"),
        container.join("run/gpu-host-probe"),
    )
    .with_machine_lock_dir(&mounted);

    let held = mxctl.try_lock().unwrap();
    common::assert_machine_busy_for(&toolstack, &mxctl);
    drop(held);
    assert!(sees_a_write_of(&toolstack, &mxctl));
    let held = toolstack.try_lock().unwrap();
    assert!(mxctl.try_lock().unwrap_err().is_busy());
    drop(held);
    // Named plainly, the host's directory is not the container's default: refused, not split.
    let plain = machine_host(
        container.join("state"),
        container.join("run/gpu-host-probe"),
    )
    .with_lock_dir(&mounted);
    assert!(matches!(
        plain.try_lock(),
        Err(LockError::SecondLockDir { .. })
    ));
    assert!(
        !container.join("run").exists(),
        "the container's own /run was touched"
    );
}

#[test]
fn a_built_trees_machine_lock_is_kept_beside_it_where_its_hosts_meet() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("sys");
    std::fs::create_dir(&tree).unwrap();
    let first = Host::new(dir.path().join("a")).with_sysfs_root(&tree);
    let second = Host::new(dir.path().join("b")).with_sysfs_root(&tree);
    let held = first.try_lock().unwrap();
    let beside = std::fs::canonicalize(dir.path())
        .unwrap()
        .join("gpu-host-probe");
    assert_eq!(held.machine_path().parent(), Some(beside.as_path()));
    let name = held.machine_path().file_name().unwrap().to_string_lossy();
    assert!(name.ends_with("-sys.lock"), "{name}");
    assert!(matches!(
        second.try_lock().unwrap_err(),
        LockError::MachineBusy { .. }
    ));
    drop(held);
    assert!(sees_a_write_of(&second, &first));
}

#[test]
fn a_built_trees_directory_is_never_made_for_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(dir.path().join("state")).with_sysfs_root(dir.path().join("absent/sys"));
    assert!(matches!(host.try_lock().unwrap_err(), LockError::Io { .. }));
    assert!(!dir.path().join("absent").exists());
}

#[test]
fn over_a_built_tree_any_directory_may_be_named() {
    let dir = tempfile::tempdir().unwrap();
    for named in [dir.path().join("locks"), dir.path().join("others")] {
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(dir.path().join("sys"))
            .with_lock_dir(&named);
        assert_eq!(
            host.try_lock().unwrap().machine_path().parent(),
            Some(named.as_path())
        );
    }
}

#[test]
fn a_built_tree_in_a_group_writable_directory_keeps_its_lock_in_a_private_one_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // What a temporary directory is under umask 002.
    let holder = dir.path().join("work");
    std::fs::create_dir(&holder).unwrap();
    std::fs::set_permissions(&holder, std::fs::Permissions::from_mode(0o775)).unwrap();
    let host = Host::new(holder.join("state")).with_sysfs_root(holder.join("sys"));
    let held = host.try_lock().unwrap();
    let locks = held.machine_path().parent().unwrap();
    assert_eq!(locks.file_name().unwrap(), "gpu-host-probe");
    let mode = std::fs::metadata(locks).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}
