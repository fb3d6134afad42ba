//! The driver's rules the fake enforces, as pure functions over a device of the scenario: what
//! is free, what fits, what may be destroyed, what a GPU reset and a reboot do. The C functions
//! (`exports`) only decode their arguments and call these, and the reader of a scenario
//! (`read`) checks a state by them; they import the scenario's types and nothing else of the
//! crate. The rules of a card's virtual functions ([`sriov`]) are theirs too.
//!
//! Each part reads the device by [`device`]'s few rules and imports no part above it: the
//! instances ([`gpu_instances`], [`compute`]), the vGPU types creatable ([`vgpu`]), the virtual
//! functions ([`sriov`]), then the mode, the reset and the reboot ([`mode`]).

mod compute;
mod device;
mod gpu_instances;
mod mode;
#[cfg(test)]
mod room_tests;
pub(crate) mod sriov;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vf_tests;
mod vgpu;

pub use compute::{
    COMPUTE_PROFILE_COUNT, compute_multiprocessors, compute_placements, compute_profile_name,
    compute_profile_slices, compute_remaining, create_compute_instance, destroy_compute_instance,
};
pub(crate) use device::overlaps;
pub use device::{clients, gpu_instance, mig_on, profile};
pub use gpu_instances::{
    create_gpu_instance, create_gpu_instance_anywhere, destroy_gpu_instance, remaining,
};
pub(crate) use mode::{MigModeError, set_mig_mode};
pub use mode::{gpu_reset, reboot};
pub use vgpu::creatable_vgpu_types;
