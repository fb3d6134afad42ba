//! [`redact_temp_dirs`]: output that names a temporary directory, made stable for a snapshot.

/// `text` with every temporary directory that `tempfile` names (`<temp dir>/.tmpXXXXXX`, six
/// characters after `.tmp`) written `[tmp]`, so that a message naming a test's files can be
/// snapshotted.
pub fn redact_temp_dirs(text: &str) -> String {
    let prefix = std::env::temp_dir().join(".tmp");
    let prefix = prefix.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix.as_ref()) {
        let (before, found) = rest.split_at(at);
        out.push_str(before);
        let after = found.get(prefix.len()..).unwrap_or_default();
        let name_len: usize = after
            .chars()
            .take(6)
            .take_while(char::is_ascii_alphanumeric)
            .map(char::len_utf8)
            .sum();
        if name_len == 6 {
            out.push_str("[tmp]");
            rest = after.get(name_len..).unwrap_or_default();
        } else {
            out.push_str(&prefix);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_directory_is_redacted_and_other_text_is_kept() {
        let tmp = std::env::temp_dir();
        let text = format!(
            "{t}/.tmpAb12Cd/helper exited; {t}/.tmpx is short; /var/lib/mxctl",
            t = tmp.display()
        );
        assert_eq!(
            redact_temp_dirs(&text),
            format!(
                "[tmp]/helper exited; {t}/.tmpx is short; /var/lib/mxctl",
                t = tmp.display()
            )
        );
    }
}
