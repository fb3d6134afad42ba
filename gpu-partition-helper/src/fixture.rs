//! The fixture backend: a card described by a JSON file in the reply's own shape, so demos,
//! tests and examples run the real helper binary with no GPU.

use crate::read::{Answer, unreadable};
use gpu_partition_types::{Bdf, Reply};
use std::path::{Path, PathBuf};

/// A fixture that cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// The file could not be read.
    #[error("cannot read the fixture {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a reply.
    #[error("the fixture {} is not a reply", path.display())]
    NotAReply {
        /// The file.
        path: PathBuf,
        /// What the reader refused.
        #[source]
        source: gpu_partition_types::RefusedReply,
    },
}

/// Serves the card of `file` as the device asked for (the file's own `device` is replaced).
pub fn from_file(file: &Path, device: Bdf) -> Result<Answer, FixtureError> {
    let bytes = std::fs::read(file).map_err(|source| FixtureError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let mut reply = Reply::from_json(&bytes, None).map_err(|source| FixtureError::NotAReply {
        path: file.to_path_buf(),
        source,
    })?;
    reply.device = device;
    Ok(Answer::Reply(Box::new(reply)))
}

/// Serves `DIR/<bdf>.json`; a device without a file is an unreadable reply of kind `not_found`.
pub fn from_dir(dir: &Path, device: Bdf) -> Result<Answer, FixtureError> {
    let file = dir.join(format!("{device}.json"));
    if !file.exists() {
        let message = format!("no fixture {} for this device", file.display());
        return Ok(Answer::Reply(Box::new(unreadable(
            device,
            "not_found",
            message,
        ))));
    }
    from_file(&file, device)
}
