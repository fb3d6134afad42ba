//! [`Failure`]: what stops a command, with its kind token and exit code.

use std::path::PathBuf;

/// A failure that stops a command (exit 1). Refusals and blocked resets are results, not
/// failures.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The config file could not be read.
    #[error("cannot read config file {}", path.display())]
    ConfigUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The config file is one another user could change: refused, nothing done.
    #[error("refusing the config file")]
    UnsafeConfig(#[source] gpu_host_probe::trust::Untrusted),
    /// A layout file another user could change: refused, nothing done.
    #[error("refusing the layout file")]
    UnsafeLayout(#[source] gpu_host_probe::trust::Untrusted),
    /// A layout could not be applied (its lock, the store, the sync after it, the reset).
    #[error("the layout could not be applied")]
    Apply(#[source] mig_layout::ApplyError),
    /// The state directory is one another user could change: refused, nothing written.
    #[error("refusing the state directory")]
    UnsafeStateDir(#[from] gpu_host_probe::trust::UnsafeDir),
    /// A config line has a bad value.
    #[error("{}:{line}: {message}", path.display())]
    ConfigValue {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// Standard output could not be written.
    #[error("cannot write the output")]
    Output {
        #[source]
        source: std::io::Error,
    },
    /// An output file could not be written whole.
    #[error("cannot write the output file")]
    OutputFile(#[from] gpu_host_probe::fs::WriteError),
    /// The metrics could not be encoded.
    #[error("cannot encode the metrics")]
    Metrics(#[source] mig_layout::MetricsError),
    /// The man pages or completions could not be written.
    #[error("cannot write {}", path.display())]
    Generate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// sysfs could not be scanned.
    #[error("cannot scan the PCI devices")]
    Scan(#[from] host_sync::ScanError),
    /// The stored state could not be read or written.
    #[error("cannot use the state store")]
    Store(#[from] host_sync::StoreError),
    /// The sync could not finish.
    #[error("the sync failed")]
    Sync(#[from] host_sync::SyncError),
    /// The host lock is held by another GPU operation past the bounded wait, or cannot be
    /// opened.
    #[error("cannot take the host GPU lock")]
    Lock(#[from] gpu_host_probe::LockError),
    /// A reset could not go on (journal or lock trouble); nothing was reset after it.
    #[error("the reset could not go on")]
    Reset(#[from] warm_reset::ExecuteError),
    /// A group file that cannot be read or planned.
    #[error("bad group file {}", path.display())]
    Group {
        path: std::path::PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A plan file that cannot be read.
    #[error("bad plan file {}", path.display())]
    Plan {
        path: std::path::PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A step could not run or finish.
    #[error("the step failed")]
    Step(#[from] warm_reset::PlanStepError),
    /// The command line asks for something that does not fit.
    #[error("{0}")]
    Usage(String),
    /// An input file could not be read.
    #[error("cannot read {what}")]
    Input {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The stored state did not read and was kept aside: what the host was declared to be is
    /// not known, so nothing can be restored.
    #[error("nothing can be restored: {0}")]
    StateLost(host_sync::StateLost),
}

impl Failure {
    /// A stable token for `{"error": {"kind": …}}`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ConfigUnreadable { .. } | Self::ConfigValue { .. } => "config",
            Self::UnsafeConfig(_) => "unsafe_config",
            Self::UnsafeLayout(_) => "unsafe_layout",
            Self::Apply(_) => "apply",
            Self::UnsafeStateDir(_)
            | Self::Lock(gpu_host_probe::LockError::UnsafeDir(_))
            | Self::Sync(host_sync::SyncError::Lock(gpu_host_probe::LockError::UnsafeDir(_))) => {
                "unsafe_state_dir"
            }
            Self::Input { .. } => "input",
            Self::Reset(_) => "reset",
            Self::Usage(_) => "usage",
            Self::Group { .. } => "group",
            Self::Plan { .. } => "plan",
            Self::Step(_) => "step",
            Self::Scan(_) => "sysfs",
            Self::Store(_) => "state",
            Self::StateLost(_) => "state_lost",
            Self::Sync(host_sync::SyncError::Cancelled { .. })
            | Self::Lock(gpu_host_probe::LockError::Cancelled { .. }) => "cancelled",
            Self::Sync(host_sync::SyncError::Lock(lock)) | Self::Lock(lock) if lock.is_busy() => {
                "lock_busy"
            }
            Self::Sync(host_sync::SyncError::Lock(_)) | Self::Lock(_) => "lock",
            Self::Sync(host_sync::SyncError::Store(_)) => "state",
            Self::Sync(host_sync::SyncError::Scan(_)) => "sysfs",
            Self::Sync(_) => "sync",
            Self::Output { .. } | Self::OutputFile(_) | Self::Generate { .. } => "output",
            Self::Metrics(_) => "metrics",
        }
    }

    /// How mxctl exits with it: a command line that does not fit is usage; anything else failed.
    pub fn exit(&self) -> crate::exit::Exit {
        match self {
            Self::Usage(_) => crate::exit::Exit::Usage,
            _ => crate::exit::Exit::Failed,
        }
    }

    /// The message with its chain of causes, for people.
    pub fn message(&self) -> String {
        gpu_host_probe::chain::Chain(self).to_string()
    }
}
