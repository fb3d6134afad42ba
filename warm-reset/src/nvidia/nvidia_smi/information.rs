//! `/proc/driver/nvidia/gpus/<bdf>/information`: the `Device Minor:` line gives the GPU's device
//! file, `/dev/nvidia<minor>` (minors need not follow `nvidia-smi`'s indices).

use crate::parse_error::{ParseError, numbered};

const OUTPUT: &str = "/proc/driver/nvidia/gpus/<bdf>/information";

/// The device minor the file names.
pub fn device_minor(text: &str) -> Result<u32, ParseError> {
    for (number, line) in numbered(text) {
        if let Some(value) = line.strip_prefix("Device Minor:") {
            return value
                .trim()
                .parse()
                .map_err(|_| ParseError::line(OUTPUT, number, line, "the minor is not a number"));
        }
    }
    Err(ParseError::Missing {
        output: OUTPUT,
        why: "no `Device Minor:` line",
    })
}
