//! The config file (`key = value` lines) and the settings in force.

use crate::failure::Failure;
use gpu_host_probe::helper::HelperConfig;
use mig_layout::{Hook, HookPoint, Hooks};
use std::path::{Path, PathBuf};
use std::time::Duration;
use warm_reset::LinkCommands;
use warm_reset::metax::MX_SMI_PLACES;
use warm_reset::nvidia::NVIDIA_SMI_PLACES;

/// The config file read when `--config` is not given, if it exists.
pub const DEFAULT_CONFIG: &str = "/etc/mxctl.conf";

/// The lasting settings, from the config file or their defaults. Every default is the
/// library's own: nothing here restates one.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `gpu-partition-helper` (its path) and `helper-deadline`.
    pub helper: HelperConfig,
    /// `gpu-partitioning`: the pool switch.
    pub pool: host_sync::Pool,
    /// `mx-smi`: `None` looks in the usual places.
    pub mx_smi: Option<PathBuf>,
    /// `nvidia-smi`: `None` looks in the usual places.
    pub nvidia_smi: Option<PathBuf>,
    /// `reset-window`.
    pub reset_window: Duration,
    /// `kmsg`.
    pub kmsg: PathBuf,
    /// `disconnect-links-command` and `connect-links-command` (`None`: a manual step).
    pub links: LinkCommands,
    /// `restore-at-boot`: whether `partition restore --at-boot` (the boot unit) restores the
    /// declared layout.
    pub restore_at_boot: bool,
    /// `hook-apply-start`, `hook-pre-apply-mode`, `hook-pre-apply-config`, `hook-apply-exit`
    /// (each line one more command, in order) and `hook-deadline`.
    pub hooks: Hooks,
    /// `sync-interval`: how often the package's timer runs the sync (read-only on the cards),
    /// so a change made outside mxctl shows within one interval.
    pub sync_interval: Duration,
    /// `unnamed-instances`: what an apply or restore does with instances a layout does not
    /// name (`match`: destroyed; `adopt`: kept and reported).
    pub unnamed: mig_layout::Unnamed,
}

/// The sync timer's interval by default: a change made outside mxctl shows within it.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(300);

/// Every key, with the one-line description logged at start and written in the sample file.
pub const KEYS: [(&str, &str); 17] = [
    (
        "gpu-partition-helper",
        "Reads the partitions of the host's GPUs",
    ),
    ("helper-deadline", "Seconds a helper run may take"),
    (
        "gpu-partitioning",
        "The pool switch for GPU partitioning: enabled or disabled",
    ),
    ("mx-smi", "The MetaX mx-smi program"),
    (
        "nvidia-smi",
        "The NVIDIA nvidia-smi program (reset --method nvidia)",
    ),
    (
        "reset-window",
        "Seconds a warm reset may take, from the reset to the end of its verification",
    ),
    ("kmsg", "The kernel log device"),
    (
        "disconnect-links-command",
        "Multi-host reset: drops this host's cross-host links",
    ),
    (
        "connect-links-command",
        "Multi-host reset: connects the cross-host links again",
    ),
    (
        "restore-at-boot",
        "The boot unit restores the declared MIG layout: enabled or disabled",
    ),
    (
        "hook-apply-start",
        "A command run when a layout apply, leave or restore starts (one per line)",
    ),
    (
        "hook-pre-apply-mode",
        "A command run before a MIG mode change and its reset (one per line)",
    ),
    (
        "hook-pre-apply-config",
        "A command run before GPU instances are destroyed or created (one per line)",
    ),
    (
        "hook-apply-exit",
        "A command run when a layout apply, leave or restore ends (one per line)",
    ),
    ("hook-deadline", "Seconds one hook command may run"),
    (
        "sync-interval",
        "Seconds between the sync timer's reads of the cards (systemctl daemon-reload applies it)",
    ),
    (
        "unnamed-instances",
        "What apply and restore do with GPU instances a layout does not name: match or adopt",
    ),
];

impl Default for Config {
    fn default() -> Self {
        Self {
            helper: HelperConfig::default(),
            pool: host_sync::Pool::Disabled,
            mx_smi: None,
            nvidia_smi: None,
            reset_window: warm_reset::DEFAULT_WINDOW,
            kmsg: PathBuf::from(warm_reset::DEFAULT_KMSG),
            links: LinkCommands::default(),
            restore_at_boot: true,
            hooks: Hooks::default(),
            sync_interval: DEFAULT_SYNC_INTERVAL,
            unnamed: mig_layout::Unnamed::Match,
        }
    }
}

impl Config {
    /// Loads `named`, or the default file when it exists; a missing named file is an error. A
    /// file another user could change (the file, or a directory on its way) is refused before
    /// it is read: its keys name the programs root runs. `/dev/null` is an empty file.
    pub fn load(named: Option<&Path>) -> Result<Config, Failure> {
        let (path, must_exist) = match named {
            Some(path) => (path.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_CONFIG), false),
        };
        if path == Path::new("/dev/null") {
            return Ok(Config::default());
        }
        if path.exists() {
            gpu_host_probe::trust::check_trusted(&path).map_err(Failure::UnsafeConfig)?;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path),
            Err(error) if !must_exist && error.kind() == std::io::ErrorKind::NotFound => {
                Ok(Config::default())
            }
            Err(source) => Err(Failure::ConfigUnreadable { path, source }),
        }
    }

    /// Reads `key = value` lines; `#` starts a comment line; unknown keys are warned about.
    pub fn parse(text: &str, path: &Path) -> Result<Config, Failure> {
        let mut config = Config::default();
        for (number, line) in text.lines().enumerate() {
            let line_no = number + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |message: String| Failure::ConfigValue {
                path: path.to_path_buf(),
                line: line_no,
                message,
            };
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(format!("expected `key = value`, found {line:?}")));
            };
            let (key, value) = (key.trim(), value.trim());
            if value.is_empty() {
                return Err(bad(format!("`{key}` has no value")));
            }
            match key {
                "gpu-partition-helper" => config.helper.path = absolute(key, value).map_err(bad)?,
                "helper-deadline" => config.helper.deadline = seconds(key, value).map_err(bad)?,
                "gpu-partitioning" => {
                    config.pool = value.parse().map_err(|_| {
                        bad(format!(
                            "`{key}` must be enabled or disabled, not {value:?}"
                        ))
                    })?;
                }
                "mx-smi" => config.mx_smi = Some(PathBuf::from(value)),
                "nvidia-smi" => config.nvidia_smi = Some(PathBuf::from(value)),
                "reset-window" => config.reset_window = seconds(key, value).map_err(bad)?,
                "kmsg" => config.kmsg = PathBuf::from(value),
                "disconnect-links-command" => config.links.disconnect = value.to_owned(),
                "connect-links-command" => config.links.connect = Some(value.to_owned()),
                "restore-at-boot" => {
                    config.restore_at_boot = match value {
                        "enabled" => true,
                        "disabled" => false,
                        _ => {
                            return Err(bad(format!(
                                "`{key}` must be enabled or disabled, not {value:?}"
                            )));
                        }
                    }
                }
                "hook-deadline" => config.hooks.deadline = seconds(key, value).map_err(bad)?,
                "sync-interval" => config.sync_interval = seconds(key, value).map_err(bad)?,
                "unnamed-instances" => {
                    config.unnamed = value.parse().map_err(|_| {
                        bad(format!("`{key}` must be match or adopt, not {value:?}"))
                    })?;
                }
                hook if hook.starts_with("hook-") => {
                    let point: HookPoint = hook["hook-".len()..].parse().map_err(|_| {
                        bad(format!(
                            "unknown hook `{hook}`: the hooks are hook-apply-start, \
                             hook-pre-apply-mode, hook-pre-apply-config and hook-apply-exit"
                        ))
                    })?;
                    let command =
                        Hook::parse(value).ok_or_else(|| bad(format!("`{key}` has no command")))?;
                    config.hooks = std::mem::take(&mut config.hooks).with(point, command);
                }
                _ => tracing::warn!("{}:{line_no}: unknown key `{key}` ignored", path.display()),
            }
        }
        Ok(config)
    }

    /// Each setting's value as written in the file, in the order of [`KEYS`].
    pub fn values(&self) -> [String; 17] {
        let hooks = |point: HookPoint| {
            let commands = self.hooks.at(point);
            if commands.is_empty() {
                "(none)".to_owned()
            } else {
                commands
                    .iter()
                    .map(Hook::to_string)
                    .collect::<Vec<_>>()
                    .join(" ; ")
            }
        };
        [
            self.helper.path.display().to_string(),
            format_seconds(self.helper.deadline),
            self.pool.to_string(),
            self.mx_smi.as_ref().map_or_else(
                || format!("(first of {}, PATH)", MX_SMI_PLACES.join(", ")),
                |path| path.display().to_string(),
            ),
            self.nvidia_smi.as_ref().map_or_else(
                || format!("(first of {}, PATH)", NVIDIA_SMI_PLACES.join(", ")),
                |path| path.display().to_string(),
            ),
            format_seconds(self.reset_window),
            self.kmsg.display().to_string(),
            self.links.disconnect.clone(),
            self.links
                .connect
                .clone()
                .unwrap_or_else(|| "(none: a manual step)".to_owned()),
            if self.restore_at_boot {
                "enabled"
            } else {
                "disabled"
            }
            .to_owned(),
            hooks(HookPoint::ApplyStart),
            hooks(HookPoint::PreApplyMode),
            hooks(HookPoint::PreApplyConfig),
            hooks(HookPoint::ApplyExit),
            format_seconds(self.hooks.deadline),
            format_seconds(self.sync_interval),
            self.unnamed.to_string(),
        ]
    }

    /// Logs every setting in force at debug, as `key = value (description)`.
    pub fn log(&self) {
        for ((key, description), value) in KEYS.iter().zip(self.values()) {
            tracing::debug!("{key} = {value} ({description})");
        }
    }
}

fn absolute(key: &str, value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!("`{key}` must be an absolute path, not {value:?}"))
    }
}

/// A positive number of seconds, with a fraction if wanted (`0.5`).
pub fn seconds(key: &str, value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs > 0.0 && *secs <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{key}` must be a number of seconds above 0, not {value:?}"))
}

fn format_seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{}", duration.as_secs())
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<Config, Failure> {
        Config::parse(text, Path::new("test.conf"))
    }

    #[test]
    fn an_empty_file_gives_the_defaults() {
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn comments_and_blank_lines_are_skipped_and_spaces_around_equals_are_free() {
        let config =
            parse("# a comment\n\n  helper-deadline=2.5  \ngpu-partitioning =enabled\n").unwrap();
        assert_eq!(config.helper.deadline, Duration::from_millis(2500));
        assert!(config.pool.is_enabled());
    }

    #[test]
    fn an_unknown_key_is_ignored() {
        assert_eq!(parse("colour = blue\n").unwrap(), Config::default());
    }

    #[test]
    fn a_bad_value_names_the_file_and_line() {
        let error = parse("\nhelper-deadline = soon\n").unwrap_err();
        assert!(error.to_string().starts_with("test.conf:2: "), "{error}");
    }

    #[test]
    fn a_relative_helper_path_is_refused() {
        assert!(parse("gpu-partition-helper = bin/helper").is_err());
    }

    #[test]
    fn a_line_without_equals_is_refused() {
        assert!(parse("gpu-partitioning enabled").is_err());
    }

    #[test]
    fn the_pool_switch_takes_only_enabled_or_disabled() {
        assert!(parse("gpu-partitioning = on").is_err());
    }

    #[test]
    fn every_key_is_logged_with_its_description() {
        assert_eq!(Config::default().values().len(), KEYS.len());
    }
}
