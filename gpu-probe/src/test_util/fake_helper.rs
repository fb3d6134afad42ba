//! [`FakeHelper`]: one helper script for every test, example and benchmark that needs one.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A reply with MIG on and one GPU instance, `%s` standing for the device asked for.
pub const PARTITIONS: &str = r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "enabled", "pending": null}, "case": "partitions", "gpu_instances": [{"id": 1, "profile_id": 9, "uuid": null}]}"#;

/// What the helper does for a device before it replies.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Act {
    /// Never answer (it sleeps a minute, in place of the helper's process).
    Hang,
    /// Exit with this code at once (75: the card is busy).
    Exit(i32),
    /// Wait, then reply.
    Sleep(Duration),
    /// Run this shell snippet (`$dev` is the device), then reply unless it exits.
    Shell(String),
}

impl Act {
    fn shell(&self) -> String {
        match self {
            Self::Hang => "exec sleep 60".to_owned(),
            Self::Exit(code) => format!("exit {code}"),
            Self::Sleep(duration) => format!("sleep {}", duration.as_secs_f64()),
            Self::Shell(snippet) => snippet.clone(),
        }
    }
}

/// A fake GPU partition helper, written as a shell script.
#[derive(Debug, Clone)]
pub struct FakeHelper {
    dir: PathBuf,
    reply: String,
    acts: Vec<(String, Act)>,
}

impl FakeHelper {
    /// A helper in `dir` (written as `dir/helper`) that replies [`PARTITIONS`] to every read.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            reply: PARTITIONS.to_owned(),
            acts: Vec::new(),
        }
    }

    /// Replies `reply` instead (one JSON line; `%s` stands for the device, and no other `%`).
    pub fn reply(mut self, reply: &str) -> Self {
        self.reply = reply.to_owned();
        self
    }

    /// Does `act` before replying for `device` (a shell pattern: `0000:03:00.0`, `*`). The first
    /// pattern that matches wins.
    pub fn on(mut self, device: &str, act: Act) -> Self {
        self.acts.push((device.to_owned(), act));
        self
    }

    /// Does `act` before every reply.
    pub fn every_read(self, act: Act) -> Self {
        self.on("*", act)
    }

    /// Writes the script and answers its path. Every call goes to `calls` beside it, one line
    /// of arguments each.
    pub fn write(&self) -> io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let arms: String = self
            .acts
            .iter()
            .map(|(pattern, act)| format!("  {pattern}) {} ;;\n", act.shell()))
            .collect();
        let script = format!(
            r#"#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
if [ "$1" = --version ]; then echo '{{"commands": [{{"name": "read", "formats": ["1.0"]}}]}}'; exit 0; fi
dev="$3"
case "$dev" in
{arms}esac
printf '{reply}\n' "$dev"
"#,
            reply = self.reply.replace('\'', r"'\''"),
        );
        let path = self.path();
        write_executable(&path, &script)?;
        Ok(path)
    }

    /// Where the script is (once written).
    pub fn path(&self) -> PathBuf {
        self.dir.join("helper")
    }

    /// The calls a helper written in `dir` received, one argument line each.
    pub fn calls(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Writes an executable file through a child `sh`, so this process never holds it open for
/// writing: a test thread that forks while another writes a script would otherwise carry the
/// write descriptor until its exec, and running the script then fails with ETXTBSY.
pub fn write_executable(path: &Path, text: &str) -> io::Result<()> {
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes())?;
    }
    let status = child.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "cannot write {}: sh {status}",
            path.display()
        )))
    }
}
