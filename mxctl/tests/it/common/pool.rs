//! A pool of three fake MetaX hosts under one directory, with a shared ordered log of every
//! `mx-smi` call and link command, a config naming the fake link commands, and a group file.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{Host, run_json, succeeded};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const LINKS: &str = "#!/bin/sh\necho \"$*\" >> \"$(pwd)/links.log\"\n[ -f ../order.log ] && echo \"$(basename \"$(pwd)\") $*\" >> ../order.log\n";

pub struct Pool {
    pub top: tempfile::TempDir,
    pub hosts: Vec<(String, Host)>,
    pub config: PathBuf,
}

impl Pool {
    pub fn new() -> Pool {
        let top = tempfile::tempdir().unwrap();
        let links = top.path().join("links");
        gpu_host_probe::test_util::write_executable(&links, LINKS).unwrap();
        let config = top.path().join("mxctl.conf");
        std::fs::write(
            &config,
            format!(
                "disconnect-links-command = {links} disconnect\nconnect-links-command = {links} connect\n",
                links = links.display()
            ),
        )
        .unwrap();
        std::fs::write(top.path().join("order.log"), "").unwrap();
        let hosts = ["h1", "h2", "h3"]
            .into_iter()
            .map(|name| {
                let dir = tempfile::Builder::new()
                    .prefix(name)
                    .tempdir_in(top.path())
                    .unwrap();
                (name.to_owned(), Host::in_dir(dir))
            })
            .collect();
        std::fs::write(
            top.path().join("group.json"),
            r#"{"hosts": [{"name": "h1", "nodes": [0, 1]}, {"name": "h2", "nodes": [0, 1]}, {"name": "h3", "nodes": [0]}],
                "links": [["h1", "h2"], ["h2", "h3"]]}"#,
        )
        .unwrap();
        Pool { top, hosts, config }
    }

    pub fn host(&self, name: &str) -> &Host {
        &self.hosts.iter().find(|(n, _)| n == name).unwrap().1
    }

    pub fn plan(&self) -> PathBuf {
        let output = succeeded(
            Command::new(env!("CARGO_BIN_EXE_mxctl"))
                .arg("--config")
                .arg(&self.config)
                .args([
                    "reset",
                    "plan",
                    "--faulty",
                    "h2",
                    "--strategy",
                    "faulty-only",
                    "--group",
                ])
                .arg(self.top.path().join("group.json")),
        );
        let path = self.top.path().join("plan.json");
        std::fs::write(&path, &output.stdout).unwrap();
        path
    }

    pub fn step(&self, plan: &Path, name: &str, phase: usize) -> (i32, serde_json::Value) {
        let host = self.host(name);
        let mut command = host.mxctl_configured(&self.config);
        command
            .current_dir(host.dir.path())
            .arg("--json")
            .args([
                "reset",
                "step",
                "--host",
                name,
                "--phase",
                &phase.to_string(),
                "--plan",
            ])
            .arg(plan)
            .arg("--mx-smi")
            .arg(host.path("bin/mx-smi"))
            .arg("--kmsg")
            .arg(host.path("bin/kmsg"));
        run_json(command)
    }

    /// Everything each host recorded: its mx-smi calls and its link commands.
    pub fn records(&self) -> Vec<(String, String, String)> {
        self.hosts
            .iter()
            .map(|(name, host)| {
                let read =
                    |file: &str| std::fs::read_to_string(host.path(file)).unwrap_or_default();
                (name.clone(), read("bin/calls"), read("links.log"))
            })
            .collect()
    }

    /// The pool's ordered log: `host call` lines, hosts by name.
    pub fn order(&self) -> Vec<String> {
        std::fs::read_to_string(self.top.path().join("order.log"))
            .unwrap()
            .lines()
            .map(|line| {
                let (dir, call) = line.split_once(' ').unwrap();
                format!("{} {call}", &dir[..2])
            })
            .collect()
    }

    /// Checks what a faulty-only plan with h2 faulty leaves: one reset, on h2; h1 and h3 drop
    /// their links and never touch mx-smi; every host connects its links once; and h2's reset
    /// comes before any disconnect, which comes before any connect. Answers the records.
    pub fn assert_faulty_only_ran_once_in_phase_order(&self) -> Vec<(String, String, String)> {
        let records = self.records();
        let resets: Vec<usize> = records
            .iter()
            .map(|(_, calls, _)| calls.lines().filter(|line| line.starts_with("-r")).count())
            .collect();
        assert_eq!(resets, [0, 1, 0]);
        let links: Vec<&str> = records.iter().map(|(_, _, links)| links.as_str()).collect();
        assert_eq!(
            links,
            [
                "disconnect\nconnect\n",
                "connect\n",
                "disconnect\nconnect\n"
            ]
        );
        assert_eq!((records[0].1.as_str(), records[2].1.as_str()), ("", ""));
        let order = self.order();
        let at = |wanted: &str| {
            order
                .iter()
                .position(|call| call == wanted)
                .unwrap_or_else(|| panic!("{wanted} not in {order:?}"))
        };
        for host in ["h1", "h3"] {
            assert!(
                at("h2 -r -i 0") < at(&format!("{host} disconnect")),
                "{order:?}"
            );
            assert!(
                at(&format!("{host} disconnect")) < at("h2 connect"),
                "{order:?}"
            );
        }
        records
    }
}
