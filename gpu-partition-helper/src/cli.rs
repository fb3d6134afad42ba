//! The helper's command line: `--version`, and `read --device BDF --format MAJOR`, with the
//! fixture and paging options in any order around `read`'s own.

use crate::fixture;
use crate::nvml::RealNvml;
use crate::read::{Answer, failed, read_card};
use clap::{Parser, Subcommand};
use gpu_partition_types::{Bdf, Command, EXIT_BUSY, FormatVersion, Lenient, VersionReply};
use std::io::Write;
use std::path::PathBuf;

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
}

/// The version reply this helper gives.
pub fn version_reply() -> VersionReply {
    let mut reply = VersionReply::new(vec![Command::new(
        "read".to_owned(),
        vec![FormatVersion::CURRENT],
    )]);
    reply.helper = Lenient::Read(env!("CARGO_PKG_NAME").to_owned());
    reply.version = Lenient::Read(env!("CARGO_PKG_VERSION").to_owned());
    reply
}

/// Runs the helper; answers the exit status.
pub fn run(cli: &Cli) -> u8 {
    if cli.version {
        return print(&[serde_json::to_string(&version_reply()).unwrap_or_default()]);
    }
    let Some(HelperCommand::Read { device, format }) = &cli.command else {
        eprintln!("gpu-partition-helper: give --version, or read --device BDF --format 1");
        return 2;
    };
    if *format != FormatVersion::CURRENT.major {
        eprintln!(
            "gpu-partition-helper: format {format} is not served; this helper writes format {}",
            FormatVersion::CURRENT
        );
        return 2;
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

fn print(pages: &[String]) -> u8 {
    let mut stdout = std::io::stdout().lock();
    for page in pages {
        if writeln!(stdout, "{page}").is_err() {
            return 1;
        }
    }
    if stdout.flush().is_err() { 1 } else { 0 }
}
