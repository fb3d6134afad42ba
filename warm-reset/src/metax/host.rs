//! [`MetaxHost`]: what the MetaX backend reads from a host — `mx-smi`'s outputs, the `metax`
//! module's use count, the kernel log — and [`MxSmiHost`], the real one (`mx-smi` through the
//! process runner, with a deadline on every call).

use super::error::MxSmiError;
use super::modules::{DriverUse, metax_use};
use crate::backend::BackendError;
use crate::kmsg::KernelLog;
use crate::tool::{Exits, Tool, ToolEnd};

use std::path::PathBuf;
use std::time::Duration;

/// Where `mx-smi` usually is, tried in order when none is configured; then `mx-smi` on `PATH`.
pub const MX_SMI_PLACES: [&str; 2] = ["/opt/mxdriver/bin/mx-smi", "/opt/maca/bin/mx-smi"];

/// A MetaX host as the backend reads it.
pub trait MetaxHost {
    host_trait_basics!();
    /// Whether `mx-smi` is there (present and executable), or why not.
    fn find_mx_smi(&mut self) -> Result<(), BackendError>;
    /// The `mx-smi` that answers, for messages.
    fn mx_smi_path(&self) -> PathBuf;
    /// The `metax` driver's use count.
    fn driver_use(&mut self) -> DriverUse;
    /// What plain `mx-smi` prints.
    fn plain(&mut self) -> Result<String, BackendError>;
    /// What `mx-smi -L` prints.
    fn listing(&mut self) -> Result<String, BackendError>;
    /// What `mx-smi topo -m` prints.
    fn topology(&mut self) -> Result<String, BackendError>;
    /// Runs `mx-smi -r -i ID`, killing it if it has not ended `within`.
    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ToolEnd;
}

/// The real MetaX host.
#[derive(Debug, Clone)]
pub struct MxSmiHost {
    mx_smi: Tool,
    proc_root: PathBuf,
    kernel_log: KernelLog,
}

impl MxSmiHost {
    /// A host using `mx_smi` (or the usual places when `None`), `<proc_root>/modules` and the
    /// kernel log at `kmsg`.
    pub fn new(
        mx_smi: Option<PathBuf>,
        proc_root: impl Into<PathBuf>,
        kmsg: impl Into<PathBuf>,
    ) -> Self {
        Self {
            mx_smi: Tool::new("mx-smi", mx_smi, &MX_SMI_PLACES),
            proc_root: proc_root.into(),
            kernel_log: KernelLog::new(kmsg),
        }
    }
}

impl MetaxHost for MxSmiHost {
    real_host_basics!();

    fn find_mx_smi(&mut self) -> Result<(), BackendError> {
        self.mx_smi.find_for::<MxSmiError>()
    }

    fn mx_smi_path(&self) -> PathBuf {
        self.mx_smi.path()
    }

    fn driver_use(&mut self) -> DriverUse {
        let path = self.proc_root.join("modules");
        match std::fs::read_to_string(&path) {
            Ok(text) => metax_use(&text),
            Err(error) => DriverUse::Unreadable(format!("{}: {error}", path.display())),
        }
    }

    fn plain(&mut self) -> Result<String, BackendError> {
        self.mx_smi.query_for::<MxSmiError>(&[])
    }

    fn listing(&mut self) -> Result<String, BackendError> {
        self.mx_smi.query_for::<MxSmiError>(&["-L"])
    }

    fn topology(&mut self) -> Result<String, BackendError> {
        self.mx_smi.query_for::<MxSmiError>(&["topo", "-m"])
    }

    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ToolEnd {
        self.mx_smi
            .reset::<MxSmiError>(&["-r", "-i", mx_smi_id], within, Exits::Zero)
    }
}
