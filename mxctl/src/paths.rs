//! Default locations that depend on who runs `mxctl`.

use std::path::PathBuf;

/// `/var/lib/mxctl` as root; otherwise `$XDG_STATE_HOME/mxctl`, or `~/.local/state/mxctl`, so a
/// user can run the commands that keep state without preparing anything.
pub fn default_state_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/var/lib/mxctl");
    }
    let nonempty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(state_home) = nonempty("XDG_STATE_HOME") {
        return PathBuf::from(state_home).join("mxctl");
    }
    match nonempty("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/mxctl"),
        // No home at all (a bare service account): the working directory is all that is left.
        None => PathBuf::from(".mxctl-state"),
    }
}
