//! `mx-smi --show-process`: a header, then one row per process, or "no process found".

/// A process listing that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: cannot read the process row {text:?}")]
#[non_exhaustive]
pub struct ProcessesError {
    /// 1-based line number (0 when the output is empty).
    pub line: usize,
    /// The line.
    pub text: String,
}

/// The pids using the GPUs. Rows start with the GPU index and the pid; a header line and blank
/// lines are skipped; "no process found" means none. Anything else is an error, never "idle".
pub fn parse_processes(text: &str) -> Result<Vec<u32>, ProcessesError> {
    let mut pids = Vec::new();
    let mut said_none = false;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if lower.contains("no process") {
            said_none = true;
            continue;
        }
        let mut fields = line.split_whitespace();
        let (first, second) = (fields.next(), fields.next());
        if first.is_some_and(|f| f.eq_ignore_ascii_case("gpu")) && lower.contains("pid") {
            continue;
        }
        match (first.map(str::parse::<u32>), second.map(str::parse::<u32>)) {
            (Some(Ok(_gpu)), Some(Ok(pid))) => pids.push(pid),
            _ => {
                return Err(ProcessesError {
                    line: number + 1,
                    text: line.to_owned(),
                });
            }
        }
    }
    if pids.is_empty() && !said_none {
        return Err(ProcessesError {
            line: 0,
            text: text.trim().to_owned(),
        });
    }
    Ok(pids)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rows_give_their_pids_and_names_may_hold_spaces() {
        let text = "GPU  PID    Process name          GPU Memory\n0    4242   python3               1024MiB\n1 77 my trainer 2GiB\n";
        assert_eq!(parse_processes(text), Ok(vec![4242, 77]));
    }

    #[test]
    fn no_process_found_is_idle() {
        assert_eq!(parse_processes("no process found\n"), Ok(vec![]));
    }

    #[test]
    fn empty_output_is_an_error_not_idle() {
        assert!(parse_processes("").is_err());
    }

    #[test]
    fn a_row_that_does_not_read_is_an_error() {
        assert!(parse_processes("GPU PID name\nsome garbage here\n").is_err());
    }
}
