//! What `amd-smi reset --gpureset --gpu <ids>` printed. The words come from amd-smi's source
//! (its `reset` command stores one result per GPU under the key `gpu_reset`, and the human
//! readable form prints each GPU's block as `GPU: <id>` and the key in capitals):
//!
//! ```text
//! GPU: 0
//!     GPU_RESET: Successfully reset GPU
//! ```
//!
//! A failure is `[<AMDSMI_STATUS_…>] Unable to reset GPU` in current releases and `Failed to
//! reset GPU` in older ones, each under the same key, **with exit status 0**. No published run
//! shows either: the success line is not relied on (the exit status and the read-back of sysfs
//! decide), and only the failure words are looked for, with the shapes of a Python error. What
//! is neither is named apart, so a caller can say it did not read.

/// Words that say the reset of a GPU did not happen, or that amd-smi itself failed: amd-smi's
/// own failure results (`Unable to reset non-amd GPU` among them), and a Python error's marks.
const FAILURE_WORDS: [&str; 5] = [
    "Unable to reset",
    "Failed to reset",
    "Traceback (most recent call last)",
    "Exception",
    "requires elevation",
];

/// The result amd-smi's source stores for a GPU it reset.
const SUCCESS: &str = "Successfully reset GPU";

/// What the reset printed, line by line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetSaid {
    /// How many GPUs it said it reset (`GPU_RESET: Successfully reset GPU` lines).
    pub succeeded: usize,
    /// The lines that say it did not reset, or that it failed.
    pub failed: Vec<String>,
    /// The lines that are neither a `GPU: <id>` header nor one of the above.
    pub unknown: Vec<String>,
}

impl ResetSaid {
    /// Whether every line read, and it said it reset `count` GPUs and nothing failed.
    pub fn says_reset(&self, count: usize) -> bool {
        self.failed.is_empty() && self.unknown.is_empty() && self.succeeded == count
    }
}

/// The `GPU: <id>` line that heads each GPU's block.
fn is_header(line: &str) -> bool {
    line.strip_prefix("GPU:")
        .is_some_and(|id| id.trim().parse::<u32>().is_ok())
}

/// Reads the output (stdout and stderr together).
pub fn read_reset_output(text: &str) -> ResetSaid {
    let mut said = ResetSaid::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || is_header(line) {
            continue;
        }
        if FAILURE_WORDS.iter().any(|words| line.contains(words)) {
            said.failed.push(line.to_owned());
        } else if line
            .split_once(':')
            .is_some_and(|(key, result)| key.trim() == "GPU_RESET" && result.trim() == SUCCESS)
        {
            said.succeeded += 1;
        } else {
            said.unknown.push(line.to_owned());
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_under_the_reset_key_is_a_failure_not_a_success() {
        let said =
            read_reset_output("GPU: 0\n    GPU_RESET: [AMDSMI_STATUS_BUSY] Unable to reset GPU\n");
        assert_eq!(said.succeeded, 0);
        assert_eq!(said.failed.len(), 1);
        assert!(!said.says_reset(1));
    }
}
