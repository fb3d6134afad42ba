//! `mxctl partition`: apply, assert, export and leave MIG layouts (`mig-layout`), list the
//! host's partitions, and what
//! they share: the layout file, the pool switch, the reset backend.

pub mod apply;
pub mod assert;
pub mod export;
pub mod list;
pub mod one;
pub mod own;

use crate::cli::{LayoutArgs, Switch, WriteArgs};
use crate::config::Config;
use crate::failure::Failure;
use gpu_host_probe::Host;
use mig_layout::{Document, MAX_DOCUMENT, Spec};
use std::io::Read;
use std::path::Path;
use warm_reset::NvidiaSmiBackend;

/// Reads the layout file (`-`: standard input), at most [`MAX_DOCUMENT`] bytes; a file
/// another user could change is refused before it is read (it says what root writes to the
/// GPUs).
pub fn read_text(path: &Path) -> Result<String, Failure> {
    let what = || format!("the layout {}", path.display());
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_DOCUMENT).unwrap_or(u64::MAX) + 1;
    let read = if path == Path::new("-") {
        std::io::stdin().lock().take(limit).read_to_end(&mut bytes)
    } else {
        gpu_host_probe::trust::check_trusted(path).map_err(Failure::UnsafeLayout)?;
        std::fs::File::open(path).and_then(|file| file.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|source| Failure::Input {
        what: what(),
        source,
    })?;
    String::from_utf8(bytes)
        .map_err(|error| Failure::Usage(format!("{}: not UTF-8 text: {error}", what())))
}

/// The layout `args` select: its specs, or a usage failure naming the line and member.
pub fn layout(args: &LayoutArgs) -> Result<Vec<Spec>, Failure> {
    let text = read_text(&args.layout)?;
    let document = Document::from_text(&text)
        .map_err(|error| Failure::Usage(format!("{}: {error}", args.layout.display())))?;
    match document.label(&args.select) {
        Some(specs) => Ok(specs.to_vec()),
        None => Err(not_in(
            &args.layout,
            "layout",
            &args.select,
            "labels",
            document.labels(),
        )),
    }
}

/// The usage failure of a name (`what`) a file does not have, naming those it has (its
/// `kinds`): one wording for a layout's label, a vGPU config and a DCM profile.
pub fn not_in<'n>(
    file: &Path,
    what: &str,
    name: &str,
    kinds: &str,
    known: impl Iterator<Item = &'n str>,
) -> Failure {
    Failure::Usage(format!(
        "{} has no {what} {name:?}; its {kinds} are: {}",
        file.display(),
        known.collect::<Vec<_>>().join(", ")
    ))
}

/// A failure of the layout executor as mxctl reports it: what the command line asked that the
/// host does not have is a usage error (exit 2), the rest a failure (exit 1).
pub fn layout_failure(error: mig_layout::ApplyError) -> Failure {
    match error {
        mig_layout::ApplyError::NotNamed { .. } | mig_layout::ApplyError::Select(_) => {
            Failure::Usage(gpu_host_probe::chain::Chain(&error).to_string())
        }
        // A lock that could not be taken is the lock's failure (`lock_busy` naming the holder,
        // `cancelled`, `unsafe_state_dir`), as every command reports it.
        mig_layout::ApplyError::Lock(lock) => Failure::Lock(lock),
        other => Failure::Apply(other),
    }
}

/// The pool switch: `--pool`, else the config's.
pub fn pool(switch: Option<Switch>, config: &Config) -> host_sync::Pool {
    switch.map_or(config.pool, host_sync::Pool::from)
}

/// The nvidia method's backend, which completes a pending mode change.
pub fn reset_backend(args: &WriteArgs, config: &Config, host: &Host) -> NvidiaSmiBackend {
    NvidiaSmiBackend::of(warm_reset::nvidia::NvidiaSmiHost::new(
        args.nvidia_smi
            .clone()
            .or_else(|| config.nvidia_smi.clone()),
        host.proc_root(),
        args.kmsg.clone().unwrap_or_else(|| config.kmsg.clone()),
    ))
}
