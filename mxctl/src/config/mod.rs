//! The config file (`key = value` lines) and the settings in force.

use crate::failure::Failure;
use gpu_host_probe::Program;
use gpu_host_probe::helper::HelperConfig;
use mig_layout::{HookPoint, Hooks};
use std::path::{Path, PathBuf};
use std::time::Duration;
use warm_reset::LinkCommands;
use warm_reset::amd::AMD_SMI_PLACES;
use warm_reset::metax::MX_SMI_PLACES;
use warm_reset::nvidia::NVIDIA_SMI_PLACES;

#[cfg(test)]
mod tests;
mod values;

pub use values::Switch;

pub use values::seconds;
use values::{
    absolute, command, format_seconds, one_of, positive_seconds, program, services, switch,
    switch_name,
};

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
    /// `amd-smi`: `None` looks in the usual places.
    pub amd_smi: Option<PathBuf>,
    /// `sriov-manage`: NVIDIA's script that enables and disables a GPU's virtual functions (the
    /// machine's own, at its installed path, unless the file names one).
    pub sriov_manage: Program,
    /// `modprobe`: the program that reloads the amdgpu driver (an AMD memory partition
    /// change; the machine's own unless the file names one).
    pub modprobe: Program,
    /// `amd-client-services`: the systemd services that use the AMD GPUs (one running blocks
    /// an AMD partition change), beside a Device Config Manager file's own.
    pub amd_client_services: Vec<String>,
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

/// One setting: its key, what it is for (logged at start), how a value in the file sets it,
/// and how the value in force is written. [`SETTINGS`] is the one table of them.
pub struct Setting {
    /// The key.
    pub key: &'static str,
    /// What it is for, in one line.
    pub about: &'static str,
    /// Sets it from a value of the file; the message names what is wrong.
    read: fn(&mut Config, &str) -> Result<(), String>,
    /// The value in force, as the file would write it (or what a default does).
    show: fn(&Config) -> String,
}

impl Setting {
    /// The value in force.
    pub fn value(&self, config: &Config) -> String {
        (self.show)(config)
    }
}

/// Every setting, in the order they are logged.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "gpu-partition-helper",
        about: "Reads the partitions of the host's GPUs",
        read: |c, v| set_program(&mut c.helper.program, v),
        show: |c| c.helper.program.path().display().to_string(),
    },
    Setting {
        key: "helper-deadline",
        about: "Seconds a helper run may take",
        read: |c, v| set(&mut c.helper.deadline, positive_seconds(v)),
        show: |c| format_seconds(c.helper.deadline),
    },
    Setting {
        key: "gpu-partitioning",
        about: "The pool switch for GPU partitioning: enabled or disabled",
        read: |c, v| set(&mut c.pool, one_of(v, "enabled or disabled")),
        show: |c| c.pool.to_string(),
    },
    Setting {
        key: "mx-smi",
        about: "The MetaX mx-smi program",
        read: |c, v| set(&mut c.mx_smi, absolute(v).map(Some)),
        show: |c| program(c.mx_smi.as_deref(), &MX_SMI_PLACES),
    },
    Setting {
        key: "nvidia-smi",
        about: "The NVIDIA nvidia-smi program (reset --method nvidia)",
        read: |c, v| set(&mut c.nvidia_smi, absolute(v).map(Some)),
        show: |c| program(c.nvidia_smi.as_deref(), &NVIDIA_SMI_PLACES),
    },
    Setting {
        key: "amd-smi",
        about: "The AMD amd-smi program (reset --method amd)",
        read: |c, v| set(&mut c.amd_smi, absolute(v).map(Some)),
        show: |c| program(c.amd_smi.as_deref(), &AMD_SMI_PLACES),
    },
    Setting {
        key: "sriov-manage",
        about: "NVIDIA's sriov-manage, which enables and disables a GPU's virtual functions (vgpu apply, leave, restore)",
        read: |c, v| set_program(&mut c.sriov_manage, v),
        show: |c| c.sriov_manage.path().display().to_string(),
    },
    Setting {
        key: "modprobe",
        about: "The modprobe program that reloads the amdgpu driver for an AMD memory partition change",
        read: |c, v| set_program(&mut c.modprobe, v),
        show: |c| c.modprobe.path().display().to_string(),
    },
    Setting {
        key: "amd-client-services",
        about: "The systemd services that use the AMD GPUs (space-separated): one running blocks an AMD partition change",
        read: |c, v| set(&mut c.amd_client_services, services(v)),
        show: |c| {
            if c.amd_client_services.is_empty() {
                "(none)".to_owned()
            } else {
                c.amd_client_services.join(" ")
            }
        },
    },
    Setting {
        key: "reset-window",
        about: "Seconds a warm reset may take, from the reset to the end of its verification",
        read: |c, v| set(&mut c.reset_window, positive_seconds(v)),
        show: |c| format_seconds(c.reset_window),
    },
    Setting {
        key: "kmsg",
        about: "The kernel log device",
        read: |c, v| set(&mut c.kmsg, absolute(v)),
        show: |c| c.kmsg.display().to_string(),
    },
    Setting {
        key: "disconnect-links-command",
        about: "Multi-host reset: drops this host's cross-host links",
        read: |c, v| set(&mut c.links.disconnect, command(v)),
        show: |c| c.links.disconnect.to_string(),
    },
    Setting {
        key: "connect-links-command",
        about: "Multi-host reset: connects the cross-host links again",
        read: |c, v| set(&mut c.links.connect, command(v).map(Some)),
        show: |c| {
            c.links
                .connect
                .as_ref()
                .map_or_else(|| "(none: a manual step)".to_owned(), ToString::to_string)
        },
    },
    Setting {
        key: "restore-at-boot",
        about: "The boot unit restores the declared MIG layout: enabled or disabled",
        read: |c, v| {
            set(
                &mut c.restore_at_boot,
                switch(v).map(|switch| switch == Switch::Enabled),
            )
        },
        show: |c| {
            switch_name(if c.restore_at_boot {
                Switch::Enabled
            } else {
                Switch::Disabled
            })
        },
    },
    Setting {
        key: "hook-apply-start",
        about: "A command run when a layout apply, leave or restore starts (one per line)",
        read: |c, v| hook(c, HookPoint::ApplyStart, v),
        show: |c| hooks(c, HookPoint::ApplyStart),
    },
    Setting {
        key: "hook-pre-apply-mode",
        about: "A command run before a MIG mode change and its reset (one per line)",
        read: |c, v| hook(c, HookPoint::PreApplyMode, v),
        show: |c| hooks(c, HookPoint::PreApplyMode),
    },
    Setting {
        key: "hook-pre-apply-config",
        about: "A command run before GPU instances are destroyed or created (one per line)",
        read: |c, v| hook(c, HookPoint::PreApplyConfig, v),
        show: |c| hooks(c, HookPoint::PreApplyConfig),
    },
    Setting {
        key: "hook-apply-exit",
        about: "A command run when a layout apply, leave or restore ends (one per line)",
        read: |c, v| hook(c, HookPoint::ApplyExit, v),
        show: |c| hooks(c, HookPoint::ApplyExit),
    },
    Setting {
        key: "hook-deadline",
        about: "Seconds one hook command may run",
        read: |c, v| set(&mut c.hooks.deadline, positive_seconds(v)),
        show: |c| format_seconds(c.hooks.deadline),
    },
    Setting {
        key: "sync-interval",
        about: "Seconds between the sync timer's reads of the cards (systemctl daemon-reload applies it)",
        read: |c, v| set(&mut c.sync_interval, positive_seconds(v)),
        show: |c| format_seconds(c.sync_interval),
    },
    Setting {
        key: "unnamed-instances",
        about: "What apply and restore do with GPU instances a layout does not name: match or adopt",
        read: |c, v| set(&mut c.unnamed, one_of(v, "match or adopt")),
        show: |c| c.unnamed.to_string(),
    },
];

impl Default for Config {
    fn default() -> Self {
        Self {
            helper: HelperConfig::default(),
            pool: host_sync::Pool::Disabled,
            mx_smi: None,
            nvidia_smi: None,
            amd_smi: None,
            sriov_manage: mig_layout::vgpu::SriovManage::default().program,
            modprobe: gpu_host_probe::amdgpu::Modprobe::default().program,
            amd_client_services: Vec::new(),
            reset_window: warm_reset::DEFAULT_WINDOW,
            kmsg: PathBuf::from(warm_reset::io::DEFAULT_KMSG),
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
            match SETTINGS.iter().find(|setting| setting.key == key) {
                Some(setting) => (setting.read)(&mut config, value)
                    .map_err(|why| bad(format!("`{key}` {why}")))?,
                None if key.starts_with("hook-") => {
                    return Err(bad(format!(
                        "unknown hook `{key}`: the hooks are hook-apply-start, \
                         hook-pre-apply-mode, hook-pre-apply-config and hook-apply-exit"
                    )));
                }
                None => {
                    tracing::warn!("{}:{line_no}: unknown key `{key}` ignored", path.display());
                }
            }
        }
        Ok(config)
    }

    /// Logs every setting in force at debug, as `key = value (what it is for)`.
    pub fn log(&self) {
        for setting in SETTINGS {
            tracing::debug!(
                "{} = {} ({})",
                setting.key,
                setting.value(self),
                setting.about
            );
        }
    }
}

/// One more hook command at `point`.
/// Sets `field` to a value of the file read into `value`, or leaves it and says what is wrong.
fn set<T>(field: &mut T, value: Result<T, String>) -> Result<(), String> {
    *field = value?;
    Ok(())
}

/// Sets `program` to the same program at the file's absolute path `value`, named by the file.
fn set_program(program: &mut Program, value: &str) -> Result<(), String> {
    *program = program.at(absolute(value)?);
    Ok(())
}

fn hook(config: &mut Config, point: HookPoint, value: &str) -> Result<(), String> {
    let command = command(value)?;
    config.hooks = std::mem::take(&mut config.hooks).with(point, command);
    Ok(())
}

/// The hook commands at `point`, as the log shows them.
fn hooks(config: &Config, point: HookPoint) -> String {
    let commands = config.hooks.at(point);
    if commands.is_empty() {
        return "(none)".to_owned();
    }
    commands
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ; ")
}
