//! A setting's value as the file writes it: read (an absolute path, seconds, a switch, a command
//! line, one of a set, a list of services) and written back as the file would.

use gpu_host_probe::run::CommandLine;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `enabled` or `disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// On.
    Enabled,
    /// Off.
    Disabled,
}

impl From<Switch> for host_sync::Pool {
    fn from(switch: Switch) -> Self {
        match switch {
            Switch::Enabled => Self::Enabled,
            Switch::Disabled => Self::Disabled,
        }
    }
}

/// An absolute path (a relative one would name whatever the working directory holds).
pub(super) fn absolute(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!("must be an absolute path, not {value:?}"))
    }
}

/// Service names separated by spaces, each one a systemd unit's (`mig_layout::amd::service_unit`,
/// the one rule).
pub(super) fn services(value: &str) -> Result<Vec<String>, String> {
    value
        .split_whitespace()
        .map(|name| match mig_layout::amd::service_unit(name) {
            Some(_) => Ok(name.to_owned()),
            None => Err(format!("{name:?} is no systemd service name")),
        })
        .collect()
}

/// A value of a token type (`enabled`, `match`), naming the choices when it is none.
pub(super) fn one_of<T: std::str::FromStr>(value: &str, choices: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("must be {choices}, not {value:?}"))
}

/// `enabled` or `disabled`, as `--pool` reads it.
pub(super) fn switch(value: &str) -> Result<Switch, String> {
    <Switch as clap::ValueEnum>::from_str(value, false)
        .map_err(|_| format!("must be enabled or disabled, not {value:?}"))
}

/// The switch as the file writes it.
pub(super) fn switch_name(switch: Switch) -> String {
    clap::ValueEnum::to_possible_value(&switch)
        .map(|value| value.get_name().to_owned())
        .unwrap_or_default()
}

/// A command line: an absolute program (or a bare name) and its words.
pub(super) fn command(value: &str) -> Result<CommandLine, String> {
    CommandLine::parse(value).map_err(|error| format!("is no command to run: {error}"))
}

/// A program setting: the one configured, or where it is looked for.
pub(super) fn program(configured: Option<&Path>, places: &[&str]) -> String {
    configured.map_or_else(
        || format!("(first of {}, PATH)", places.join(", ")),
        |path| path.display().to_string(),
    )
}

pub(super) fn positive_seconds(value: &str) -> Result<Duration, String> {
    seconds_value(value)
        .ok_or_else(|| format!("must be a number of seconds above 0, not {value:?}"))
}

fn seconds_value(value: &str) -> Option<Duration> {
    value
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs > 0.0 && *secs <= 86_400.0)
        .map(Duration::from_secs_f64)
}

/// A positive number of seconds, with a fraction if wanted (`0.5`).
pub fn seconds(key: &str, value: &str) -> Result<Duration, String> {
    positive_seconds(value).map_err(|why| format!("`{key}` {why}"))
}

pub(super) fn format_seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{}", duration.as_secs())
    } else {
        format!("{secs}")
    }
}
