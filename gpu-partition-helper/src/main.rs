//! `gpu-partition-helper`: the reference GPU partition helper (see the library's docs).

use clap::Parser;
use gpu_partition_helper::cli::{Cli, run};
use std::process::ExitCode;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("gpu-partition-helper: internal error: {info}")
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    ExitCode::from(run(&cli))
}
