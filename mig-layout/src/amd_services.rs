//! Which of the AMD GPUs' client services run ([`running_services`]: Device Config Manager's
//! `gpuClientSystemdServices`, by their systemd cgroups), and the one rule of a service's name
//! ([`service_unit`]). The kernel's side of an AMD layout's writes is
//! `gpu_host_probe::amdgpu::SysfsAmdgpu`.

use std::path::Path;

/// The systemd unit of the service `name` (a bare name, as Device Config Manager's
/// `gpuClientSystemdServices` gives them, is a `.service`), or `None` where `name` is no
/// unit's: empty, a character a unit name never has (outside `A-Za-z0-9:-_.\@`), a leading dot,
/// or `..` — never a path of its own under the cgroup tree. The one rule of a client service's
/// name: the Device Config Manager reader, mxctl's config and [`running_services`] call it.
pub fn service_unit(name: &str) -> Option<String> {
    let unit_text = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":-_.\\@".contains(&b));
    if !unit_text {
        return None;
    }
    Some(if name.ends_with(".service") {
        name.to_owned()
    } else {
        format!("{name}.service")
    })
}

/// A client service of the GPUs that has processes now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunningService {
    /// Its unit (`amd-metrics-exporter.service`).
    pub unit: String,
    /// Its processes, by pid.
    pub pids: Vec<u32>,
}

impl std::fmt::Display for RunningService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pids: Vec<String> = self.pids.iter().map(ToString::to_string).collect();
        write!(f, "{} is running (pid {})", self.unit, pids.join(", "))
    }
}

/// Which of `services` (systemd units, [`service_unit`]) have processes now: the
/// `cgroup.procs` of the unit's cgroup under `<sysfs>/fs/cgroup` — the unified hierarchy's
/// `system.slice/<unit>/`, or the legacy one's `systemd/system.slice/<unit>/` —; a unit with
/// neither is not running. A name that is no unit's is an error naming it.
pub fn running_services(
    sysfs_root: &Path,
    services: &[String],
) -> std::io::Result<Vec<RunningService>> {
    let mut running = Vec::new();
    for service in services {
        let unit = service_unit(service).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{service:?} is no systemd service's name"),
            )
        })?;
        let cgroup = sysfs_root.join("fs/cgroup");
        let places = [
            cgroup.join("system.slice").join(&unit).join("cgroup.procs"),
            cgroup
                .join("systemd/system.slice")
                .join(&unit)
                .join("cgroup.procs"),
        ];
        for place in places {
            let text = match std::fs::read_to_string(&place) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            let mut pids = Vec::new();
            for line in text.lines() {
                let pid = line.trim().parse::<u32>().map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{}: {line:?} is not a pid", place.display()),
                    )
                })?;
                pids.push(pid);
            }
            if !pids.is_empty() {
                running.push(RunningService {
                    unit: unit.clone(),
                    pids,
                });
            }
            break;
        }
    }
    Ok(running)
}
