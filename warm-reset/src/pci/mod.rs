//! Any PCI function through the kernel's sysfs `reset` file, with the checks a toolstack should
//! make and none makes all of (the kernel's rules and published log lines are in
//! `warm-reset/tests/data/pci-reset/README.md`):
//!
//! - preflight: the function exists; its `reset_method` lists a method (else
//!   `reset_unsupported`); it is bound to a stub driver (`vfio-pci`, `pciback`, `xen-pciback`,
//!   `pci-stub`) or to none (else `driver_in_use`); no process holds its VFIO group
//!   `/dev/vfio/<n>` (else `gpu_busy`, naming them); when the first method is `bus`, every
//!   function on the bus is in the group and must pass the same checks (else `group_in_use`);
//! - the reset: `1` written to `reset` by a child process under the window's deadline (a write
//!   still blocked at the window's end is `reset_hung`);
//! - the verification: every function of the group present with its old vendor, device and
//!   class (gone or `0xffff`: `gpu_missing`), and no kernel record about one of them that is an
//!   error or a published failure (`not ready …; giving up` is logged at warning level).

pub(crate) mod backend;
mod error;
mod function;
mod host;
mod target;

pub use error::SysfsError;
pub use function::{FunctionState, GONE_VENDOR, STUB_DRIVERS, read_function};
pub(crate) use function::{device_entries, link_name};
pub use host::{PciHost, SysfsHost};
pub use target::{Member, PciTarget};
