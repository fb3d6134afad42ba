//! `mxctl check-trust PATH…` (hidden): the trust rule `mxctl` applies to its config file and
//! to every program it runs, said of each path; exit 1 when one fails. The package's checks use
//! it on the files the package installs.

use crate::cli::CheckTrust;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::stdout;

/// Prints `PATH: trusted` or `PATH: not safe: …` for each path; 0 when all are trusted.
pub fn run(args: &CheckTrust) -> Result<Exit, Failure> {
    let mut all = true;
    for path in &args.paths {
        let line = match gpu_host_probe::trust::check_trusted(path) {
            Ok(()) => format!("{}: trusted\n", path.display()),
            Err(untrusted) => {
                all = false;
                format!("{}: not safe: {}\n", path.display(), untrusted.fault)
            }
        };
        stdout(line.as_bytes())?;
    }
    Ok(if all { Exit::Done } else { Exit::Failed })
}
