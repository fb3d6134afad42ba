//! What the commands that print one file for another program to read (`labels`, `metrics`)
//! share: the file is their only output, so `--json` is refused; they read the stored state;
//! and they print the file or write it to `--output`.

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::{FileStore, HostState, StateStore};
use std::path::Path;

/// The stored state (none stored: the default) for a command that `prints` what it says (its
/// `--json` refused, naming that).
pub fn stored_state(host: &Host, output: Output, prints: &str) -> Result<HostState, Failure> {
    if output.json {
        return Err(Failure::Usage(format!("{prints}; --json does not apply")));
    }
    Ok(FileStore::read_only(host.state_dir())
        .load()?
        .unwrap_or_default())
}

/// Prints `text`, or writes it to `path` with the permission bits `mode` (the program that
/// reads it runs as another user).
pub fn emit(path: Option<&Path>, text: &[u8], mode: u32) -> Result<Exit, Failure> {
    match path {
        None => crate::output::stdout(text)?,
        Some(path) => crate::output::write_file(path, text, mode)?,
    }
    Ok(Exit::Done)
}
