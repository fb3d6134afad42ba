//! `mxctl labels`: the stored state as Kubernetes node labels, in the form of a
//! node-feature-discovery local feature file (`mig_layout::render_labels`), with an expiry so
//! stale labels vanish if syncs stop. Writes nothing but the file it is asked for.

use crate::cli::Labels;
use crate::commands::text_file;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use std::time::{SystemTime, UNIX_EPOCH};

/// The file is read by nfd-worker, which runs as another user.
const OUTPUT_MODE: u32 = 0o644;

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}

/// Prints the feature file, or writes it to `--output`.
pub fn run(args: &Labels, host: &Host, output: Output) -> Result<Exit, Failure> {
    let state = text_file::stored_state(
        host,
        output,
        "labels prints a node-feature-discovery feature file",
    )?;
    let expires = unix_now().saturating_add(args.expiry.as_secs().max(1));
    let text = mig_layout::render_labels(&state, expires, &host.now());
    text_file::emit(args.output.as_deref(), text.as_bytes(), OUTPUT_MODE)
}
