//! [`HostBackend`]: one method's host behind the machine's questions. The shape is the same for
//! every method — a host the backend asks — and the rules are each method's own:
//! [`MetaxBackend`](crate::MetaxBackend), [`NvidiaBackend`](crate::NvidiaBackend) and
//! [`PciBackend`](crate::PciBackend) implement [`Backend`](crate::Backend) for their host trait.

use std::fmt;
use std::marker::PhantomData;

/// The [`Backend`](crate::Backend) answers every method's backend gives alike, by asking its
/// host: whether it is simulated, whether it runs as root, and the mark in its kernel log. A
/// macro, not a generic impl: each method's host trait is its own public trait (implemented
/// outside the crate too), so no bound names what they share.
macro_rules! backend_asks_host {
    () => {
        fn simulation(&self) -> bool {
            self.host().simulation()
        }

        fn is_root(&mut self) -> bool {
            self.host_mut().is_root()
        }

        fn mark_kernel_log(&mut self) -> Result<(), crate::backend::BackendError> {
            self.host_mut().kernel_log().mark_kernel_log()
        }
    };
}

/// The questions every method's host trait asks alike, declared once: whether it is simulated
/// (not, unless it says so), whether it runs as root, and its kernel log. A macro, not a
/// supertrait, for the reason [`backend_asks_host`] is: a supertrait would break the hosts
/// implemented outside the crate.
macro_rules! host_trait_basics {
    () => {
        /// Whether this is a simulated host ([`crate::Backend::simulation`]).
        fn simulation(&self) -> bool {
            false
        }
        /// Whether this runs as root.
        fn is_root(&mut self) -> bool;
        /// The host's kernel log, which a reset is verified against.
        fn kernel_log(&mut self) -> &mut dyn crate::backend::KernelLogSource;
    };
}

/// What every real host answers alike, whatever its method: root is the effective user's, and
/// the kernel log is its `kernel_log` field. A macro for the reason [`backend_asks_host`] is.
macro_rules! real_host_basics {
    () => {
        fn is_root(&mut self) -> bool {
            nix::unistd::geteuid().is_root()
        }

        fn kernel_log(&mut self) -> &mut dyn crate::backend::KernelLogSource {
            &mut self.kernel_log
        }
    };
}

/// The backend of method `M` over the host `H`. `M` names the method by the facts its targets
/// carry ([`MetaxTarget`](crate::metax::MetaxTarget),
/// [`NvidiaTarget`](crate::nvidia::NvidiaTarget), [`PciTarget`](crate::pci::PciTarget)); `H`
/// is the real host, a simulated one, or a test's.
pub struct HostBackend<M, H> {
    host: H,
    method: PhantomData<fn() -> M>,
}

impl<M, H> HostBackend<M, H> {
    /// The backend of `host`.
    pub fn of(host: H) -> Self {
        Self {
            host,
            method: PhantomData,
        }
    }

    /// The host it asks.
    pub fn host(&self) -> &H {
        &self.host
    }

    /// The host it asks, to change (a simulated host's faults, say).
    pub fn host_mut(&mut self) -> &mut H {
        &mut self.host
    }
}

impl<M, H: Clone> Clone for HostBackend<M, H> {
    fn clone(&self) -> Self {
        Self::of(self.host.clone())
    }
}

impl<M, H: fmt::Debug> fmt::Debug for HostBackend<M, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBackend")
            .field("host", &self.host)
            .finish()
    }
}
