//! Before forking: find the program and check that it can run and may be trusted, so an absent,
//! non-executable or unsafe program (one another user could have written) is never forked.

use super::StartError;
use super::spec::CHILD_PATH;
use nix::unistd::{AccessFlags, access};
use std::path::{Path, PathBuf};

/// The path to execute: `program` itself when it names a path, else the first match in
/// [`CHILD_PATH`] (the `PATH` the child gets). An absent program, or one that is not a regular
/// file this process may execute, is an error: such a program is never forked.
pub fn resolve(program: &Path) -> Result<PathBuf, StartError> {
    if program.as_os_str().is_empty() {
        return Err(StartError::Absent {
            program: program.to_path_buf(),
        });
    }
    if is_relative_path(program) {
        return Err(StartError::RelativePath {
            program: program.to_path_buf(),
        });
    }
    if program.is_absolute() {
        check(program)?;
        return Ok(program.to_path_buf());
    }
    let mut first_error = None;
    for dir in CHILD_PATH.split(':') {
        let candidate = Path::new(dir).join(program);
        match check(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(StartError::Absent { .. }) => {}
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| StartError::Absent {
        program: program.to_path_buf(),
    }))
}

/// Whether `program` is a relative path — more than a bare name, not starting at `/` — that
/// the runner refuses ([`StartError::RelativePath`]): the one rule, which a reader of commands
/// calls to refuse one before anything runs.
pub fn is_relative_path(program: &Path) -> bool {
    !program.is_absolute() && program.components().count() > 1
}

/// A regular file this process may execute, that no other user could have written.
fn check(path: &Path) -> Result<(), StartError> {
    executable(path)?;
    crate::trust::check_trusted(path).map_err(|untrusted| StartError::Untrusted {
        program: path.to_path_buf(),
        fault: untrusted.fault,
    })
}

/// A regular file this process may execute.
fn executable(path: &Path) -> Result<(), StartError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(StartError::Absent {
                program: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(StartError::NotExecutable {
                program: path.to_path_buf(),
                why: source.to_string(),
            });
        }
    };
    if !metadata.is_file() {
        return Err(StartError::NotExecutable {
            program: path.to_path_buf(),
            why: "not a regular file".to_owned(),
        });
    }
    access(path, AccessFlags::X_OK).map_err(|errno| StartError::NotExecutable {
        program: path.to_path_buf(),
        why: format!("no execute permission ({errno})"),
    })
}
