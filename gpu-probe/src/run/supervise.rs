//! Starting the child and watching it: drain both pipes, enforce the deadline and the caps,
//! bound the wait for pipe EOF, kill the group before reaping the leader.

use super::classify::{RunFacts, Stream, Termination, classify};
use super::spec::{CHILD_PATH, RunSpec};
use super::{Run, StartError, prepare};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How often a child with open pipes is checked for having exited (to notice a grandchild
/// that holds the pipes).
const EXIT_CHECK: Duration = Duration::from_millis(10);

/// The most a capture reserves up front; a larger cap grows past it as output comes.
const PREALLOCATED_MAX: usize = 4 << 20;

/// How many times the watch yields, before it sleeps, for a child that closed its pipes to end.
const EXIT_SPINS: u32 = 200;

/// How long a child may take to end after SIGKILL before the caller stops waiting for it.
const STUCK: Duration = Duration::from_secs(2);

/// Has the child ask the kernel for SIGKILL when its parent thread dies, and end at once if
/// the parent is already gone (it died between the fork and the request).
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes two system calls (prctl and getppid) and
    // touches no lock, no allocation and no shared state.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|errno| std::io::Error::from_raw_os_error(errno as i32))?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other("the parent is gone"));
            }
            Ok(())
        });
    }
}

/// Runs `spec` to its end and reports what happened. Never panics, never leaves a zombie.
pub fn run(spec: &RunSpec) -> Run {
    let started = Instant::now();
    if crate::cancel::cancelled(spec.cancel.as_ref()) {
        let facts = RunFacts {
            cancelled: true,
            ..RunFacts::default()
        };
        return Run {
            result: classify(&facts),
            stdout: Vec::new(),
            stderr: Vec::new(),
            elapsed: started.elapsed(),
            pid: None,
        };
    }
    let program = match prepare::resolve(&spec.program) {
        Ok(program) => program,
        Err(error) => return not_started(error, started),
    };
    let mut command = Command::new(&program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(
            spec.env
                .iter()
                .filter(|(name, _)| name != "PATH" && name != "LANG")
                .map(|(name, value)| (name, value)),
        )
        .env("PATH", CHILD_PATH)
        .env("LANG", "C")
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if spec.die_with_parent {
        die_with_parent(&mut command);
    }
    let mut child = match spawn(&mut command) {
        Ok(child) => child,
        Err(error) => {
            let error = StartError::SpawnFailed {
                program,
                why: error.to_string(),
            };
            return not_started(error, started);
        }
    };
    let pid = child.id();
    let group = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    // The input goes in from a thread of its own, so a child that does not read it never
    // blocks the watch; the write ends (EPIPE) once the child is gone.
    if let (Some(input), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
        std::thread::spawn(move || {
            use std::io::Write;
            if let Err(error) = pipe.write_all(&input) {
                tracing::debug!("stdin of pid {pid}: {error}");
            }
        });
    }
    let mut pipes = [
        Pipe::new(
            child.stdout.take().map(OwnedFd::from),
            Stream::Stdout,
            spec.limits.stdout,
        ),
        Pipe::new(
            child.stderr.take().map(OwnedFd::from),
            Stream::Stderr,
            spec.limits.stderr,
        ),
    ];
    let (mut facts, exited) = watch(spec, started, group, &mut pipes);
    let termination = if exited || wait_for_exit(group, STUCK) {
        // The leader is still unreaped (seen with WNOWAIT), so its group id cannot have been
        // reused: the group is killed first, then the leader reaped.
        match child.wait() {
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => Termination::Exited(code),
                (None, Some(signal)) => Termination::Signaled(signal),
                (None, None) => Termination::Unknown,
            },
            Err(error) => {
                tracing::warn!("cannot reap pid {pid}: {error}");
                Termination::Unknown
            }
        }
    } else {
        // Killed, yet not gone (stuck in the kernel, as a process in a driver call can be):
        // the caller gets its answer now, and a thread reaps the child whenever it ends.
        tracing::warn!(
            "{}: pid {pid} does not end after SIGKILL; reaped in the background",
            spec.display()
        );
        std::thread::spawn(move || child.wait());
        Termination::Signaled(Signal::SIGKILL as i32)
    };
    facts.termination = Some(termination);
    let [stdout, stderr] = pipes;
    Run {
        result: classify(&facts),
        stdout: stdout.buffer,
        stderr: stderr.buffer,
        elapsed: started.elapsed(),
        pid: Some(pid),
    }
}

/// Spawns, retrying a few times on ETXTBSY: a file that another thread of this process has
/// just written may still be open for writing in a child forked meanwhile, for the moment
/// before that child's exec closes it.
fn spawn(command: &mut Command) -> std::io::Result<std::process::Child> {
    let mut pause = Duration::from_millis(1);
    for _ in 0..8 {
        match command.spawn() {
            Err(error) if error.raw_os_error() == Some(Errno::ETXTBSY as i32) => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            other => return other,
        }
    }
    command.spawn()
}

pub(super) fn not_started(error: StartError, started: Instant) -> Run {
    let facts = RunFacts {
        start_error: Some(error),
        ..RunFacts::default()
    };
    Run {
        result: classify(&facts),
        stdout: Vec::new(),
        stderr: Vec::new(),
        elapsed: started.elapsed(),
        pid: None,
    }
}

/// One output pipe: open until EOF (or until we close it), with what it gave so far.
struct Pipe {
    file: Option<File>,
    stream: Stream,
    cap: usize,
    buffer: Vec<u8>,
}

impl Pipe {
    fn new(fd: Option<OwnedFd>, stream: Stream, cap: usize) -> Self {
        Self {
            file: fd.map(File::from),
            stream,
            cap,
            // Room for the whole cap at once (untouched pages cost nothing): growing by doubling
            // leaves freed halves behind in the allocator, which a fan-out of floods piles up.
            buffer: Vec::with_capacity(cap.min(PREALLOCATED_MAX)),
        }
    }

    /// Reads what is ready. Answers `false` when the stream passed its cap.
    fn read_ready(&mut self, chunk: &mut [u8]) -> bool {
        let Some(file) = self.file.as_mut() else {
            return true;
        };
        match file.read(chunk) {
            Ok(0) => self.file = None,
            Ok(n) => {
                let room = self.cap.saturating_sub(self.buffer.len());
                self.buffer.extend_from_slice(&chunk[..n.min(room)]);
                if n > room {
                    self.file = None;
                    return false;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::debug!("{} read failed: {error}", self.stream);
                self.file = None;
            }
        }
        true
    }
}

/// Waits up to `limit` for the child to end (without reaping it); answers whether it did.
fn wait_for_exit(pid: Pid, limit: Duration) -> bool {
    let give_up = Instant::now() + limit;
    loop {
        if has_exited(pid) {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        std::thread::sleep(EXIT_CHECK);
    }
}

/// The child's life from spawn to end; answers what was seen, and whether the child ended.
fn watch(spec: &RunSpec, started: Instant, group: Pid, pipes: &mut [Pipe; 2]) -> (RunFacts, bool) {
    let mut facts = RunFacts::default();
    let deadline = started + spec.deadline;
    let mut terminated_at: Option<Instant> = None;
    let mut killed_at: Option<Instant> = None;
    let mut exited_at: Option<Instant> = None;
    let mut backoff = Duration::from_micros(50);
    let mut spins = 0;
    let mut chunk = [0u8; 16 << 10];
    loop {
        let now = Instant::now();
        if terminated_at.is_none() && killed_at.is_none() {
            if crate::cancel::cancelled(spec.cancel.as_ref()) {
                signal_group(group, Signal::SIGTERM);
                terminated_at = Some(now);
                facts.cancelled = true;
            } else if now >= deadline {
                signal_group(group, Signal::SIGTERM);
                terminated_at = Some(now);
                facts.deadline_passed = true;
            }
        }
        if let Some(at) = terminated_at {
            if killed_at.is_none() && now >= at + spec.grace {
                signal_group(group, Signal::SIGKILL);
                killed_at = Some(now);
            }
        }
        if exited_at.is_none() && has_exited(group) {
            exited_at = Some(now);
        }
        let open = pipes.iter().any(|pipe| pipe.file.is_some());
        if !open && exited_at.is_some() {
            break;
        }
        // Killed and still not ended: the caller stops waiting (see `run`).
        if let (None, Some(killed)) = (exited_at, killed_at) {
            if now >= killed + spec.eof_grace + STUCK {
                break;
            }
        }
        // Pipes still open after the child ended, or after the group was killed: something
        // outside our reach holds them. Wait a bounded time, then give up on them.
        let eof_limit = exited_at.or(killed_at).map(|since| since + spec.eof_grace);
        if open {
            if let Some(limit) = eof_limit {
                if now >= limit {
                    facts.pipes_leaked = exited_at.is_some();
                    signal_group(group, Signal::SIGKILL);
                    if killed_at.is_none() || exited_at.is_some() {
                        tracing::warn!(
                            "{}: the pipes stayed open after the child ended; group killed",
                            spec.display()
                        );
                    }
                    break;
                }
            }
        }
        let next_event = [
            (terminated_at.is_none() && killed_at.is_none()).then_some(deadline),
            terminated_at
                .filter(|_| killed_at.is_none())
                .map(|at| at + spec.grace),
            if open { eof_limit } else { None },
        ]
        .into_iter()
        .flatten()
        .min();
        let until_event = next_event.map_or(EXIT_CHECK, |at| at.saturating_duration_since(now));
        if open {
            let wait = if exited_at.is_none() {
                until_event.min(EXIT_CHECK)
            } else {
                until_event
            };
            if let Some(stream) = wait_and_read(pipes, wait, &mut chunk) {
                facts.output_over_cap.get_or_insert(stream);
                signal_group(group, Signal::SIGKILL);
                killed_at.get_or_insert(Instant::now());
            }
        } else if spins < EXIT_SPINS {
            // The child closed its pipes but has not exited yet: it usually is exiting, on
            // another core, within microseconds. Yield rather than sleep: the shortest sleep
            // costs a timer's slack (about 50 µs) on every run.
            spins += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(backoff.min(until_event.max(Duration::from_micros(10))));
            backoff = (backoff * 2).min(EXIT_CHECK);
        }
    }
    (facts, exited_at.is_some())
}

/// Waits up to `wait` for output and reads it; answers the stream that passed its cap, if any.
fn wait_and_read(pipes: &mut [Pipe; 2], wait: Duration, chunk: &mut [u8]) -> Option<Stream> {
    let millis = u16::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(u16::MAX);
    let mut ready = [false, false];
    {
        let mut slots = Vec::with_capacity(2);
        let mut fds = Vec::with_capacity(2);
        for (slot, pipe) in pipes.iter().enumerate() {
            if let Some(file) = pipe.file.as_ref() {
                slots.push(slot);
                fds.push(PollFd::new(file.as_fd(), PollFlags::POLLIN));
            }
        }
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(error) => tracing::debug!("poll failed: {error}"),
        }
        for (slot, fd) in slots.into_iter().zip(&fds) {
            ready[slot] = fd.revents().is_some_and(|events| !events.is_empty());
        }
    }
    let mut over = None;
    for (slot, ready) in ready.into_iter().enumerate() {
        if ready && !pipes[slot].read_ready(chunk) {
            over.get_or_insert(pipes[slot].stream);
        }
    }
    over
}

/// Whether the child has ended, without reaping it (so its pid and group stay ours).
fn has_exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        Err(Errno::EINTR) => false,
        // ECHILD or worse: nothing left to wait for.
        Err(_) => true,
    }
}

/// Signals the whole process group; a group that is gone already is fine.
fn signal_group(group: Pid, signal: Signal) {
    match killpg(group, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => tracing::warn!("cannot send {signal} to process group {group}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn waiting_for_exit_is_bounded_and_leaves_the_child_unreaped() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
        let started = Instant::now();
        assert!(!wait_for_exit(pid, Duration::from_millis(100)));
        assert!(started.elapsed() < Duration::from_secs(1));
        child.kill().unwrap();
        assert!(wait_for_exit(pid, Duration::from_secs(2)));
        // Still ours to reap: WNOWAIT left it a zombie.
        assert!(child.wait().is_ok_and(|status| status.signal() == Some(9)));
    }
}
