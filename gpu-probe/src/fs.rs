//! Writing a file whole or not at all: temp file, fsync, rename, fsync of the directory.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}", path.display())]
#[non_exhaustive]
pub struct WriteError {
    /// What failed: `create`, `write`, `fsync`, `rename into`.
    pub action: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

/// Replaces `dir/name` with `bytes` atomically: a reader sees the old file or the new one,
/// never a torn one, even if the process is killed or the host loses power. Temporary files
/// start with `.{name}.`; [`remove_stale_temporaries`] removes those a killed writer left.
/// The file is readable by its owner only (mode 0600); see [`write_atomic_mode`].
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_mode(dir, name, bytes, 0o600)
}

/// [`write_atomic`] with the file's permission bits (`0o644` for a file others read, such as
/// a metrics file for a collector running as another user).
pub fn write_atomic_mode(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<(), WriteError> {
    let fail = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| WriteError {
            action,
            path,
            source,
        }
    };
    let path = dir.join(name);
    std::fs::create_dir_all(dir).map_err(fail("create", dir))?;
    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(name))
        .tempfile_in(dir)
        .map_err(fail("create a temporary file in", dir))?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(fail("set the mode of", temp.path()))?;
    temp.write_all(bytes).map_err(fail("write", temp.path()))?;
    temp.as_file()
        .sync_all()
        .map_err(fail("fsync", temp.path()))?;
    temp.persist(&path)
        .map_err(|error| fail("rename into", &path)(error.error))?;
    std::fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(fail("fsync", dir))?;
    Ok(())
}

/// Removes the temporary files of [`write_atomic`] for `dir/name` that a killed writer left
/// behind. Only safe while no other writer of that file is in flight (under the host lock).
pub fn remove_stale_temporaries(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = temp_prefix(name);
    for entry in entries.filter_map(Result::ok) {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            if let Err(error) = std::fs::remove_file(entry.path()) {
                tracing::debug!("cannot remove {}: {error}", entry.path().display());
            }
        }
    }
}

fn temp_prefix(name: &str) -> String {
    format!(".{name}.")
}
