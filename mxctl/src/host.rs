//! [`Host`]: where this host's facts and state are, as the command line says.

use std::path::PathBuf;

/// Where this host's facts and state are.
#[derive(Debug, Clone)]
pub struct Host {
    /// The state directory.
    pub state_dir: PathBuf,
    /// The root of sysfs.
    pub sysfs_root: PathBuf,
    /// The root of procfs.
    pub proc_root: PathBuf,
}
