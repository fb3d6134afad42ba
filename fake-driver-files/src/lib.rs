//! Test support: the files a GPU driver serves in sysfs, answering as the driver does.
//!
//! A test host's sysfs is a tree of plain files (`host_sync::fake_sysfs`): a write to one
//! reaches no driver and can never fail as the kernel's would. [`ServedSysfs`] mounts a FUSE
//! filesystem over a second directory that shows the tree whole (every directory, file and
//! link of it, read and written through; nothing made or removed, as in sysfs), except the
//! files a driver serves, which answer from the fakes' one state, read again at every call:
//!
//! | file | read | write |
//! | --- | --- | --- |
//! | a VF's `nvidia/current_vgpu_type`, `creatable_vgpu_types`, `gpu_instance_id`, `placement_id` | the fake NVML's state (`fake_nvml::sysfs::vf_file`; where the vGPU sits reads `ENXIO` while it has none) | `current_vgpu_type` only: the vGPU manager's rules (`fake_nvml::StateFile::write_vgpu_type`), a refusal its errno (`EIO`, `EPERM`) |
//! | the PF's `sriov_numvfs` | the VFs the state has | the kernel's `sriov_numvfs_store` for a PF `nvidia` drives (`fake_nvml::StateFile::write_numvfs`): `EINVAL`, `ERANGE`, `ENOENT`; VFs come from `sriov-manage` |
//! | amdgpu's `current_compute_partition`, `current_memory_partition`, `available_*` | the fake amdgpu's file | the kernel's rules (`host_sync::fake_amdgpu`): `EINVAL`, `EBUSY`, `EPERM` |
//!
//! So a write through the mount reaches the state NVML answers from, every later read of any
//! process sees it, and another process's state write cannot undo it. The fakes' own writers
//! keep writing the tree underneath (each `StateFile` shows its VFs there), so the two views
//! never fight over a file.
//!
//! A reload of amdgpu has no file in sysfs: [`modprobe_script`] is a stand-in for `modprobe`
//! that asks the mount for it through one file of the mount's own, `.fake-amdgpu-modprobe`, at
//! its root (not a kernel file; only the tests' `modprobe` writes it).
//!
//! Mounting needs root and `/dev/fuse`: the tests that use it are root tests.

#![deny(missing_docs)]

mod served;
mod tree;

use fake_nvml::StateFile;
use host_sync::fake_amdgpu::FakeAmdgpuFile;
use std::io;
use std::path::{Path, PathBuf};

pub use served::MODPROBE_FILE;

/// The drivers whose files a [`ServedSysfs`] answers.
#[derive(Debug, Clone, Default)]
pub struct Drivers {
    /// NVIDIA's vGPU manager, over the fake NVML's state file (showing its VFs in the tree
    /// the mount shows, `StateFile::with_sysfs`).
    pub nvidia: Option<StateFile>,
    /// amdgpu, over a fake amdgpu's file (shown in the tree the mount shows).
    pub amdgpu: Option<FakeAmdgpuFile>,
}

/// A test host's sysfs tree shown at a mount point, the drivers' files answered by the
/// drivers. Dropping it unmounts it.
#[derive(Debug)]
pub struct ServedSysfs {
    at: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl ServedSysfs {
    /// Shows the tree at `tree` on the empty directory `at`, with `drivers` answering their
    /// files. Needs root and `/dev/fuse`. Refused where a driver shows its state through the
    /// mount itself: a driver's file is answered under the state's lock, which a write through
    /// the mount would wait for while it holds it.
    pub fn mount(tree: &Path, at: &Path, drivers: Drivers) -> io::Result<ServedSysfs> {
        let shown = [
            drivers.nvidia.as_ref().and_then(StateFile::sysfs),
            drivers.amdgpu.as_ref().map(FakeAmdgpuFile::sysfs_root),
        ];
        if let Some(through) = shown
            .into_iter()
            .flatten()
            .find(|root| root.starts_with(at))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a driver shows its state in {}, through the mount at {}: show it in the \
                     tree ({}) instead",
                    through.display(),
                    at.display(),
                    tree.display()
                ),
            ));
        }
        let filesystem = tree::Tree::new(tree.to_path_buf(), served::Served::new(drivers));
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("fake-sysfs".to_owned()),
            fuser::MountOption::DefaultPermissions,
        ];
        let session = fuser::spawn_mount(filesystem, at, &config)?;
        Ok(ServedSysfs {
            at: at.to_path_buf(),
            session: Some(session),
        })
    }

    /// Where it is mounted: the sysfs root a program under test is given.
    pub fn root(&self) -> &Path {
        &self.at
    }

    /// Unmounts it and waits for its session to end; the unmount's error where it failed (a
    /// file of it still open, say).
    pub fn unmount(mut self) -> io::Result<()> {
        self.session
            .take()
            .map_or(Ok(()), fuser::BackgroundSession::umount_and_join)
    }
}

impl Drop for ServedSysfs {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(error) = session.umount_and_join() {
                // A drop cannot fail: the mount is detached instead, so no test leaves it
                // behind, and the error said.
                eprintln!(
                    "fake-driver-files: unmounting {}: {error}",
                    self.at.display()
                );
                let _ = std::process::Command::new("umount")
                    .arg("--lazy")
                    .arg(&self.at)
                    .status();
            }
        }
    }
}

/// A `modprobe` stand-in (a shell script's text) for a host whose sysfs is served at `root`:
/// `modprobe -r amdgpu` unloads the fake amdgpu (every memory request holds, each compute
/// partition set anew by AUTO, as `host_sync::fake_amdgpu` says), refused as the real one is
/// while a process holds a GPU ("Module amdgpu is in use", exit 1); `modprobe amdgpu` loads it.
pub fn modprobe_script(root: &Path) -> String {
    let file = root.join(MODPROBE_FILE);
    let quoted = format!("'{}'", file.display().to_string().replace('\'', r"'\''"));
    format!(
        r#"#!/bin/sh
if [ "$1" = -r ]; then what=unload; shift; else what=load; fi
if [ "$1" != amdgpu ]; then echo "modprobe: FATAL: Module $1 not found." >&2; exit 1; fi
if ! printf '%s\n' "$what" 2>/dev/null > {quoted}; then
    echo "modprobe: FATAL: Module amdgpu is in use." >&2
    exit 1
fi
"#
    )
}
