//! What `nvidia-smi --gpu-reset -i <ids>` printed: the GPUs it says it reset, and the GPUs it
//! refused as in use. Anything else proves nothing (the exit status and these lines decide).
//!
//! ```text
//! GPU 00000000:1A:00.0 was successfully reset.
//! ```
//! ```text
//! The following GPUs could not be reset:
//!   GPU 00000000:1A:00.0: In use by another client
//! ```

use super::bus_id::parse_bus_id;
use gpu_partition_types::Bdf;

/// What the reset said of the GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetSaid {
    /// The GPUs it says were reset.
    pub reset: Vec<Bdf>,
    /// The lines that name a GPU as in use (nothing was done to it).
    pub in_use: Vec<String>,
}

/// The bus ID right after `GPU ` at the start of a trimmed line.
fn gpu_named(line: &str) -> Option<Bdf> {
    let rest = line.strip_prefix("GPU ")?;
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_hexdigit() || *c == ':' || *c == '.')
        .collect();
    parse_bus_id(id.trim_end_matches(':'))
}

/// Reads the output (stdout and stderr together).
pub fn read_reset_output(text: &str) -> ResetSaid {
    let mut said = ResetSaid::default();
    for line in text.lines().map(str::trim) {
        let Some(bdf) = gpu_named(line) else {
            continue;
        };
        // Loosely: a look-alike tool puts two spaces before `was`.
        if line.ends_with("was successfully reset.") || line.contains(" was successfully reset") {
            said.reset.push(bdf);
        } else if line.ends_with("In use by another client")
            || line.contains("is currently in use by another process")
        {
            said.in_use.push(line.to_owned());
        }
    }
    said
}
