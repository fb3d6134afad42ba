//! The rules of a card's virtual functions tested, with the MIG mode changes, instances and
//! reboots they meet (the VF rules use none of those; their tests do).

#![allow(clippy::unwrap_used)]
use super::gpu_instances::create_gpu_instance_anywhere;
use super::mode::{MigModeError, reboot, set_mig_mode};
use super::sriov::*;
use crate::scenario::{Client, Device, VirtualFunction};

/// The A100-PCIE-40GB part: 16 VFs, disabled; MIG as `mig` says.
fn a100(mig: u32) -> Device {
    super::tests::part_card(crate::scenarios::PART_A100_PCIE_40GB, mig)
}

#[test]
fn enabling_makes_every_vf_the_card_has_and_wipes_its_gpu_instances_and_heterogeneous_mode() {
    let mut card = a100(1);
    card.vgpu_heterogeneous_mode = Some(true);
    create_gpu_instance_anywhere(&mut card, 19).unwrap();
    assert_eq!(enable_vfs(&mut card), Managed::Enabled);
    assert_eq!(card.sriov.as_ref().unwrap().vfs.len(), 16);
    assert!(card.gpu_instances.is_empty());
    assert_eq!(card.vgpu_heterogeneous_mode, Some(false));
    assert_eq!(enable_vfs(&mut card), Managed::AlreadyEnabled);
}

#[test]
fn heterogeneous_mode_is_set_with_mig_off_and_refused_in_mig_mode_or_without_the_setting() {
    let mut card = a100(0);
    assert_eq!(set_heterogeneous_mode(&mut card, true), Err(()));
    card.vgpu_heterogeneous_mode = Some(false);
    assert_eq!(set_heterogeneous_mode(&mut card, true), Ok(()));
    assert_eq!(card.vgpu_heterogeneous_mode, Some(true));
    let mut mig = a100(1);
    mig.vgpu_heterogeneous_mode = Some(false);
    assert_eq!(set_heterogeneous_mode(&mut mig, true), Err(()));
    assert_eq!(mig.vgpu_heterogeneous_mode, Some(false));
}

#[test]
fn disabling_takes_every_vf_with_its_type_and_the_gpu_instances() {
    let mut card = a100(1);
    enable_vfs(&mut card);
    create_gpu_instance_anywhere(&mut card, 19).unwrap();
    write_type(&mut card, 0, 474).unwrap();
    assert_eq!(disable_vfs(&mut card), Managed::Disabled);
    assert!(card.sriov.as_ref().unwrap().vfs.is_empty());
    assert!(card.gpu_instances.is_empty());
    assert_eq!(disable_vfs(&mut card), Managed::AlreadyDisabled);
}

#[test]
fn a_process_on_the_gpu_keeps_the_unbind_lock_from_sriov_manage() {
    let mut card = a100(0);
    card.clients.push(Client {
        pid: 4242,
        name: "python3".to_owned(),
    });
    assert_eq!(enable_vfs(&mut card), Managed::Held);
    assert!(!vfs_enabled(&card));
}

#[test]
fn mig_mode_cannot_change_either_way_while_vfs_exist() {
    let mut card = a100(1);
    enable_vfs(&mut card);
    assert_eq!(
        set_mig_mode(&mut card, false),
        Err(MigModeError::VfsEnabled)
    );
    let mut off = a100(0);
    enable_vfs(&mut off);
    assert_eq!(set_mig_mode(&mut off, true), Err(MigModeError::VfsEnabled));
    // Asking for the mode it has changes nothing, and is no error.
    assert_eq!(set_mig_mode(&mut off, false), Ok(()));
}

#[test]
fn a_type_on_a_vf_that_has_one_and_zero_on_one_that_has_none_are_eperm() {
    let mut card = a100(0);
    enable_vfs(&mut card);
    assert_eq!(
        write_type(&mut card, 0, 0),
        Err(TypeWriteError::NotPermitted)
    );
    write_type(&mut card, 0, 471).unwrap();
    assert_eq!(
        write_type(&mut card, 0, 471),
        Err(TypeWriteError::NotPermitted)
    );
    write_type(&mut card, 0, 0).unwrap();
    assert_eq!(
        card.sriov.as_ref().unwrap().vfs[0],
        VirtualFunction::default()
    );
    assert_eq!(write_type(&mut card, 16, 471), Err(TypeWriteError::NoVf));
}

#[test]
fn a_mig_backed_type_without_a_free_instance_of_its_profile_is_eio_and_changes_nothing() {
    let mut card = a100(1);
    enable_vfs(&mut card);
    assert_eq!(
        write_type(&mut card, 0, 474),
        Err(TypeWriteError::CannotCreate)
    );
    let gi = create_gpu_instance_anywhere(&mut card, 19).unwrap();
    write_type(&mut card, 0, 474).unwrap();
    let vf = &card.sriov.as_ref().unwrap().vfs[0];
    assert_eq!((vf.gpu_instance_id, vf.placement_id), (Some(gi), Some(0)));
    // One vGPU per instance where no source gives more: the instance is full.
    assert_eq!(
        write_type(&mut card, 1, 474),
        Err(TypeWriteError::CannotCreate)
    );
    assert_eq!(creatable_on_vf(&card, 1), Vec::<u32>::new());
    assert_eq!(creatable_on_vf(&card, 0), Vec::<u32>::new());
}

#[test]
fn an_instance_that_holds_several_takes_them_in_placement_order() {
    let mut card = a100(1);
    if let Some(kind) = card.vgpu_types.iter_mut().find(|kind| kind.id == 474) {
        kind.max_instances_per_gpu_instance = Some(2);
    }
    enable_vfs(&mut card);
    let gi = create_gpu_instance_anywhere(&mut card, 19).unwrap();
    write_type(&mut card, 0, 474).unwrap();
    write_type(&mut card, 1, 474).unwrap();
    let vfs = &card.sriov.as_ref().unwrap().vfs;
    assert_eq!(vfs[1].gpu_instance_id, Some(gi));
    assert_eq!(vfs[1].placement_id, Some(1));
}

#[test]
fn a_reboot_leaves_no_vf() {
    let mut card = a100(0);
    enable_vfs(&mut card);
    write_type(&mut card, 0, 471).unwrap();
    reboot(&mut card);
    assert!(!vfs_enabled(&card));
}

#[test]
fn a_gpu_instance_under_a_vfs_vgpu_is_not_destroyed_and_answers_in_use() {
    let mut card = a100(1);
    enable_vfs(&mut card);
    let gi = create_gpu_instance_anywhere(&mut card, 19).unwrap();
    write_type(&mut card, 0, 474).unwrap();
    assert_eq!(
        super::gpu_instances::destroy_gpu_instance(&mut card, gi),
        Err(super::device::IN_USE)
    );
    assert_eq!(card.gpu_instances.len(), 1);
    write_type(&mut card, 0, 0).unwrap();
    assert_eq!(
        super::gpu_instances::destroy_gpu_instance(&mut card, gi),
        Ok(())
    );
}

#[test]
fn sriov_numvfs_written_on_a_pf_nvidia_drives_answers_as_the_kernels_store_without_sriov_configure()
{
    let mut card = a100(0);
    assert_eq!(write_numvfs(&card, "four\n"), Err(nix::libc::EINVAL));
    assert_eq!(write_numvfs(&card, "16\n\n"), Err(nix::libc::EINVAL));
    assert_eq!(write_numvfs(&card, "17\n"), Err(nix::libc::ERANGE));
    assert_eq!(write_numvfs(&card, "0x11"), Err(nix::libc::ERANGE));
    // The count it has is no change; another is refused (the driver has no sriov_configure).
    assert_eq!(write_numvfs(&card, "0\n"), Ok(()));
    assert_eq!(write_numvfs(&card, "+0"), Ok(()));
    assert_eq!(write_numvfs(&card, "16\n"), Err(nix::libc::ENOENT));
    enable_vfs(&mut card);
    assert_eq!(write_numvfs(&card, "020\n"), Ok(()));
    assert_eq!(write_numvfs(&card, "0x10"), Ok(()));
    assert_eq!(write_numvfs(&card, "0\n"), Err(nix::libc::ENOENT));
    assert_eq!(card.sriov.as_ref().unwrap().vfs.len(), 16);
}
