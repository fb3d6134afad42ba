//! Writing a file whole or not at all (temp file, fsync, rename, fsync of the directory), and
//! reading one, never through a link and never into or from a file another user owns.

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
    // The rename would replace a link, never write through it; still, a link or another
    // user's file where ours belongs is a planted trap: refuse it, loudly.
    check_replaceable(&path).map_err(fail("replace", &path))?;
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

/// Why a link is never written or read through.
pub(crate) const A_LINK: &str = "it is a symbolic link; root never writes or reads through one";

/// A regular file of this user: what may be replaced, read, or locked.
pub(crate) fn check_own(metadata: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if metadata.file_type().is_symlink() {
        return Err(std::io::Error::other(A_LINK));
    }
    if !metadata.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    if nix::unistd::Uid::from_raw(metadata.uid()) != nix::unistd::geteuid() {
        return Err(std::io::Error::other(format!(
            "it is owned by uid {}, not by this user",
            metadata.uid()
        )));
    }
    Ok(())
}

fn check_replaceable(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) => check_own(&metadata),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// Reads `path` whole when it is a regular file of this user, opened without following a link
/// (`O_NOFOLLOW`); `None` when there is none.
pub fn read_own(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) => {
            return Err(std::io::Error::other(A_LINK));
        }
        Err(error) => return Err(error),
    };
    check_own(&file.metadata()?)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
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
