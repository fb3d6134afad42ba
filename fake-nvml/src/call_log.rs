//! The call log: with `FAKE_NVML_LOG` naming a file, one line appended to it per call (the
//! library's NVML functions, the `fake-nvml` command's reset and reboot), so a test can count
//! what a client asked.
//!
//! Processes write it at once (eight helpers reading, a reset beside them), so each line goes
//! out whole: made first, then one `write(2)` of it on a file opened `O_APPEND`, which puts
//! it at the end as one piece. A line written in pieces (its text, then its newline, as
//! `writeln!` does) lets another process's line land between them (`nvmlInit_v2nvmlInit_v2`).
//!
//! It uses nothing of the crate: the `fake-nvml` binary includes this file as its own module.

use std::io::Write;

/// Appends `line` and a newline to the file `FAKE_NVML_LOG` names, in one write; nothing when
/// the variable is unset, and a log that cannot be written is no client's failure.
pub(crate) fn append(line: &str) {
    if let Some(path) = std::env::var_os("FAKE_NVML_LOG") {
        append_to(std::path::Path::new(&path), line);
    }
}

/// Appends `line` and a newline to the log at `path`, in one write.
#[allow(dead_code)] // The `fake-nvml` binary includes this file and logs by the variable only.
pub(crate) fn append_to(path: &std::path::Path, line: &str) {
    let mut whole = String::with_capacity(line.len() + 1);
    whole.push_str(line);
    whole.push('\n');
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One `write` of the whole line (`write_all` issues more only after a short write,
        // which a regular file gives for a line only when the disk is full).
        let _ = file.write_all(whole.as_bytes());
    }
}
