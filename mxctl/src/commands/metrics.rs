//! `mxctl metrics`: the stored state and the last warm reset in the Prometheus text format
//! (0.0.4, what node_exporter's textfile collector reads; `mig_layout::render_metrics`), on
//! stdout or written atomically to a file.

use crate::cli::Metrics;
use crate::commands::text_file;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;

/// The metrics file's permission bits: the collector runs as another user.
const OUTPUT_MODE: u32 = 0o644;

/// Prints the metrics, or writes them to `--output`.
pub fn run(args: &Metrics, host: &Host, output: Output) -> Result<Exit, Failure> {
    let state = text_file::stored_state(host, output, "metrics prints the Prometheus text format")?;
    // The reset journal only adds a metric: one that does not read costs that metric, with a
    // warning, not the host's status.
    let last = match warm_reset::last_reset(host) {
        Ok(last) => last,
        Err(error) => {
            tracing::warn!(
                "the last warm reset is left out: {}",
                gpu_host_probe::chain::Chain(&error)
            );
            None
        }
    };
    let text =
        mig_layout::render_metrics(&state, last.as_ref(), &host.now()).map_err(Failure::Metrics)?;
    text_file::emit(args.output.as_deref(), &text, OUTPUT_MODE)
}
