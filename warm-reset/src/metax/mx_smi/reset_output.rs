//! What `mx-smi -r` printed. Nothing is published about it, and another vendor's reset tool
//! exits 0 after printing "Reset failed": an exit status alone proves nothing, so output that
//! says error or fail is a failed reset (the guide: an error on the console means cold reboot).

/// The first line of `output` that says error or fail (any case), trimmed; `None` when none
/// does.
pub fn reset_failure(output: &str) -> Option<String> {
    output
        .lines()
        .map(str::trim)
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            lower.contains("error") || lower.contains("fail")
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_says_error_or_fail_in_any_case_is_a_failure() {
        assert_eq!(
            reset_failure("resetting GPU#1\nGPU#1: Reset FAILED\n"),
            Some("GPU#1: Reset FAILED".into())
        );
        assert_eq!(
            reset_failure("Error: timeout\n"),
            Some("Error: timeout".into())
        );
        assert_eq!(reset_failure("GPU#1 reset done\n"), None);
        assert_eq!(reset_failure(""), None);
    }
}
