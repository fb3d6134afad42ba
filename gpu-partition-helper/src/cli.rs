//! The helper's command line: `--version`, `read --device BDF --format MAJOR` (with the fixture
//! and paging options in any order around its own), and `apply --device BDF --format MAJOR`
//! (the request on stdin).

use crate::apply::{Applied, apply};
use crate::fixture;
use crate::nvml::RealNvml;
use crate::read::{Answer, failed, read_card};
use clap::{Parser, Subcommand};
use gpu_partition_types::{
    ApplyRequest, Bdf, Command, EXIT_BUSY, FormatVersion, Lenient, VersionReply,
};
use std::io::{Read, Write};
use std::path::PathBuf;

/// The exit status of a malformed request (nothing was written) or a bad command line.
pub const EXIT_USAGE: u8 = 2;

/// The most a request on stdin may hold.
const MAX_REQUEST: u64 = 1 << 20;

/// Reports how an NVIDIA card is partitioned, as the GPU partition helper protocol's reply.
#[derive(Debug, Parser)]
#[command(name = "gpu-partition-helper", disable_version_flag = true)]
pub struct Cli {
    /// Print the version reply (the commands and formats served).
    #[arg(long)]
    pub version: bool,
    /// Serve the card described by this reply-shaped JSON file instead of reading NVML.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        conflicts_with = "fixture_dir"
    )]
    pub fixture: Option<PathBuf>,
    /// Serve `DIR/<bdf>.json` for each device instead of reading NVML.
    #[arg(long, global = true, value_name = "DIR")]
    pub fixture_dir: Option<PathBuf>,
    /// Split the reply into pages of at most N items of each list.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(usize))]
    pub page_size: Option<usize>,
    /// The command (none with `--version`).
    #[command(subcommand)]
    pub command: Option<HelperCommand>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum HelperCommand {
    /// Read one card.
    Read {
        /// The card's PCI address (dddd:bb:dd.f).
        #[arg(long, value_name = "BDF")]
        device: Bdf,
        /// The reply format's major version (1).
        #[arg(long, value_name = "MAJOR")]
        format: u32,
    },
    /// Change one card: the steps of the request on stdin (`{"steps": [...]}`), in order, to the
    /// first that does not succeed; answers the results and the card read after them.
    Apply {
        /// The card's PCI address (dddd:bb:dd.f).
        #[arg(long, value_name = "BDF")]
        device: Bdf,
        /// The answer format's major version (1).
        #[arg(long, value_name = "MAJOR")]
        format: u32,
    },
}

/// The version reply this helper gives.
pub fn version_reply() -> VersionReply {
    let mut reply = VersionReply::new(vec![
        Command::new("read".to_owned(), vec![FormatVersion::CURRENT]),
        Command::new("apply".to_owned(), vec![FormatVersion::CURRENT]),
    ]);
    reply.helper = Lenient::Read(env!("CARGO_PKG_NAME").to_owned());
    reply.version = Lenient::Read(env!("CARGO_PKG_VERSION").to_owned());
    reply
}

/// Runs the helper; answers the exit status.
pub fn run(cli: &Cli) -> u8 {
    if cli.version {
        return print(&[serde_json::to_string(&version_reply()).unwrap_or_default()]);
    }
    let (device, format) = match &cli.command {
        Some(HelperCommand::Read { device, format }) => (device, format),
        Some(HelperCommand::Apply { device, format }) => {
            return match check_format(*format) {
                Some(code) => code,
                None => run_apply(cli, *device),
            };
        }
        None => {
            eprintln!(
                "gpu-partition-helper: give --version, read --device BDF --format 1, or apply \
                 --device BDF --format 1"
            );
            return EXIT_USAGE;
        }
    };
    if let Some(code) = check_format(*format) {
        return code;
    }
    let answer = match (&cli.fixture, &cli.fixture_dir) {
        (Some(file), _) => fixture::from_file(file, *device),
        (None, Some(dir)) => fixture::from_dir(dir, *device),
        (None, None) => Ok(match RealNvml::open() {
            Ok(nvml) => read_card(&nvml, *device),
            Err(failure) => failed(*device, "loading NVML", &failure),
        }),
    };
    match answer {
        Ok(Answer::Reply(reply)) => {
            let pages = match cli.page_size {
                Some(size) => reply.to_pages(size),
                None => vec![reply.to_json()],
            };
            print(&pages)
        }
        Ok(Answer::Busy(message)) => {
            eprintln!("gpu-partition-helper: {message}");
            EXIT_BUSY
        }
        Err(error) => {
            let mut message = error.to_string();
            if let Some(source) = std::error::Error::source(&error) {
                message.push_str(&format!(": {source}"));
            }
            eprintln!("gpu-partition-helper: {message}");
            1
        }
    }
}

/// `Some(exit status)` when the format asked for is not the one this helper writes.
fn check_format(format: u32) -> Option<u8> {
    if format == FormatVersion::CURRENT.major {
        return None;
    }
    eprintln!(
        "gpu-partition-helper: format {format} is not served; this helper writes format {}",
        FormatVersion::CURRENT
    );
    Some(EXIT_USAGE)
}

/// Reads the request from stdin and runs it on NVML. A request that does not read is refused
/// (exit 2) before NVML is even loaded.
fn run_apply(cli: &Cli, device: Bdf) -> u8 {
    if cli.fixture.is_some() || cli.fixture_dir.is_some() || cli.page_size.is_some() {
        eprintln!(
            "gpu-partition-helper: apply changes a real card through NVML; --fixture, \
             --fixture-dir and --page-size are for read"
        );
        return EXIT_USAGE;
    }
    let mut input = Vec::new();
    if let Err(error) = std::io::stdin()
        .lock()
        .take(MAX_REQUEST + 1)
        .read_to_end(&mut input)
    {
        eprintln!("gpu-partition-helper: cannot read the request on stdin: {error}");
        return EXIT_USAGE;
    }
    if input.len() as u64 > MAX_REQUEST {
        eprintln!("gpu-partition-helper: the request is larger than {MAX_REQUEST} bytes");
        return EXIT_USAGE;
    }
    let request = match ApplyRequest::from_json(&input) {
        Ok(request) => request,
        Err(refused) => {
            eprintln!("gpu-partition-helper: {refused}; nothing was changed");
            return EXIT_USAGE;
        }
    };
    let nvml = match RealNvml::open() {
        Ok(nvml) => nvml,
        Err(failure) => {
            // No NVML, nothing to change: every step refused, and the reply says why.
            let host = crate::nvml::Unavailable(failure);
            return answer(apply(&host, device, &request));
        }
    };
    answer(apply(&nvml, device, &request))
}

fn answer(applied: Applied) -> u8 {
    match applied {
        Applied::Answer(answer) => print(&[answer.to_json()]),
        Applied::Busy(message) => {
            eprintln!("gpu-partition-helper: {message}");
            EXIT_BUSY
        }
    }
}

fn print(pages: &[String]) -> u8 {
    let mut stdout = std::io::stdout().lock();
    for page in pages {
        if writeln!(stdout, "{page}").is_err() {
            return 1;
        }
    }
    if stdout.flush().is_err() { 1 } else { 0 }
}
