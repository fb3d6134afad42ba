//! `mxctl generate --out-dir DIR` (hidden): the man pages and the bash, zsh and fish
//! completions, made from the command-line definition, for the package.

use crate::cli::{Cli, Generate};
use crate::exit::Exit;
use crate::failure::Failure;
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::Path;

/// Writes `DIR/man/*.1` (one page per command) and `DIR/completions/` (`mxctl.bash`, `_mxctl`,
/// `mxctl.fish`).
pub fn run(args: &Generate) -> Result<Exit, Failure> {
    let man = args.out_dir.join("man");
    let completions = args.out_dir.join("completions");
    for dir in [&man, &completions] {
        std::fs::create_dir_all(dir).map_err(failed(dir))?;
    }
    clap_mangen::generate_to(visible(), &man).map_err(failed(&man))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut visible(), "mxctl", &completions)
            .map_err(failed(&completions))?;
    }
    Ok(Exit::Done)
}

/// The command line without its hidden commands (this one): the completion generators would
/// otherwise offer them.
fn visible() -> clap::Command {
    let full = Cli::command();
    let mut visible = clap::Command::new("mxctl")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(
            full.get_subcommands()
                .filter(|sub| !sub.is_hide_set())
                .cloned(),
        )
        .subcommand_required(true)
        .propagate_version(true);
    if let Some(about) = full.get_about() {
        visible = visible.about(about.clone());
    }
    if let Some(long_about) = full.get_long_about() {
        visible = visible.long_about(long_about.clone());
    }
    visible.after_long_help(exit_status())
}

/// The man page's exit status, from the one table of codes.
fn exit_status() -> String {
    let lines: Vec<String> = Exit::ALL
        .iter()
        .map(|exit| format!("{}: {}", exit.code(), exit.meaning()))
        .collect();
    format!("Exit status: {}.", lines.join("; "))
}

fn failed(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |source| Failure::Generate {
        path: path.to_path_buf(),
        source,
    }
}
