//! `mxctl systemd-generator DIR…`: the package's systemd generator
//! (`/usr/lib/systemd/system-generators/mxctl-generator` runs it at boot and at every
//! `systemctl daemon-reload`). It writes the sync timer's interval from the config's
//! `sync-interval` as a drop-in of `mxctl-sync.timer` in the generator's first directory, so the
//! timer reads the cards as often as the config says; a config that does not read leaves the
//! timer's own interval (the failure is in the journal).

use crate::cli::SystemdGenerator;
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use std::time::Duration;

/// The drop-in's directory and name inside the generator's directory.
pub const DROP_IN: (&str, &str) = ("mxctl-sync.timer.d", "50-sync-interval.conf");

/// The drop-in that runs the sync timer every `interval` (its first run one interval after
/// boot; within a second of it, where systemd would otherwise coalesce by up to a minute).
pub fn drop_in(interval: Duration) -> String {
    let ms = interval.as_millis().max(1);
    format!(
        "# Written by mxctl-generator from sync-interval in /etc/mxctl.conf.\n\
         [Timer]\n\
         OnBootSec=\n\
         OnBootSec={ms}ms\n\
         OnUnitActiveSec=\n\
         OnUnitActiveSec={ms}ms\n\
         AccuracySec=1s\n"
    )
}

/// Writes the drop-in into the first directory systemd gave.
pub fn run(args: &SystemdGenerator, config: &Config) -> Result<Exit, Failure> {
    let Some(normal) = args.dirs.first() else {
        return Err(Failure::Usage(
            "systemd-generator needs the generator's directory".to_owned(),
        ));
    };
    let dir = normal.join(DROP_IN.0);
    gpu_host_probe::fs::write_atomic_mode(
        &dir,
        DROP_IN.1,
        drop_in(config.sync_interval).as_bytes(),
        0o644,
    )?;
    Ok(Exit::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drop_in_replaces_the_timers_intervals_with_the_configs_in_milliseconds() {
        let text = drop_in(Duration::from_secs(20));
        assert!(
            text.contains("OnUnitActiveSec=\nOnUnitActiveSec=20000ms\n"),
            "{text}"
        );
        assert!(text.contains("OnBootSec=\nOnBootSec=20000ms\n"), "{text}");
        assert!(text.contains("AccuracySec=1s\n"), "{text}");
    }
}
