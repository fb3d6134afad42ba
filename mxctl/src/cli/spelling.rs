//! `partition apply|assert --config FILE`: the layout file under the name its users type.
//!
//! `--config` is also mxctl's own config file, a global option clap accepts after any command
//! name; clap cannot give one long name two meanings, so the words are read first: after
//! `partition apply` or `partition assert`, `--config` becomes `--layout`. mxctl's own config
//! file is then given before `partition`.

use std::ffi::{OsStr, OsString};

/// The global options that take a value (as the next word or after `=`), as the CLI declares
/// them.
fn globals_with_value() -> Vec<String> {
    use clap::CommandFactory;
    crate::cli::Cli::command()
        .get_arguments()
        .filter(|arg| arg.is_global_set() && arg.get_action().takes_values())
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}

/// The command line with `--config` after `partition apply|assert` spelled `--layout`; every
/// other word as it was.
pub fn layout_spelling(words: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut words: Vec<OsString> = words.into_iter().collect();
    let Some(start) = layout_command_end(&words) else {
        return words;
    };
    for word in &mut words[start..] {
        let Some(text) = word.to_str() else { continue };
        if text == "--" {
            break;
        }
        if text == "--config" {
            *word = OsString::from("--layout");
        } else if let Some(value) = text.strip_prefix("--config=") {
            *word = OsString::from(format!("--layout={value}"));
        }
    }
    words
}

/// The index of the first word after `partition apply` or `partition assert`, when that is the
/// command (global options may stand before and between the two names).
fn layout_command_end(words: &[OsString]) -> Option<usize> {
    let globals = globals_with_value();
    let mut names = Vec::new();
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_os_str();
        index += 1;
        if word == OsStr::new("--") {
            return None;
        }
        match word.to_str() {
            Some(option) if globals.iter().any(|global| global == option) => index += 1,
            Some(option) if option.starts_with('-') => {}
            name => {
                names.push(name?);
                match names.as_slice() {
                    ["partition"] => {}
                    ["partition", "apply" | "assert"] => return Some(index),
                    _ => return None,
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::layout_spelling;
    use std::ffi::OsString;

    fn spelled(line: &str) -> String {
        let words = line.split(' ').map(OsString::from);
        let out: Vec<String> = layout_spelling(words)
            .into_iter()
            .map(|word| word.into_string().unwrap())
            .collect();
        out.join(" ")
    }

    #[test]
    fn config_after_partition_apply_names_the_layout() {
        assert_eq!(
            spelled("mxctl partition apply --config l.yaml --select x"),
            "mxctl partition apply --layout l.yaml --select x"
        );
    }

    #[test]
    fn config_with_an_equals_sign_after_partition_assert_names_the_layout() {
        assert_eq!(
            spelled("mxctl partition assert --select x --config=l.yaml"),
            "mxctl partition assert --select x --layout=l.yaml"
        );
    }

    #[test]
    fn config_before_the_command_stays_mxctls_own_with_globals_between_the_names() {
        assert_eq!(
            spelled("mxctl --config m.conf --state-dir apply partition --json apply --config l"),
            "mxctl --config m.conf --state-dir apply partition --json apply --layout l"
        );
    }

    #[test]
    fn config_after_any_other_command_stays_mxctls_own() {
        for line in [
            "mxctl sync --config m.conf",
            "mxctl partition leave --config m.conf",
            "mxctl partition export --config m.conf",
            "mxctl reset partition apply --config m.conf",
        ] {
            assert_eq!(spelled(line), line);
        }
    }

    #[test]
    fn a_global_taking_a_value_between_the_names_is_skipped_with_its_value() {
        assert_eq!(
            spelled("mxctl partition --lock-dir apply apply --config l"),
            "mxctl partition --lock-dir apply apply --layout l"
        );
    }

    #[test]
    fn words_after_a_double_dash_are_left_alone() {
        assert_eq!(
            spelled("mxctl partition apply -- --config"),
            "mxctl partition apply -- --config"
        );
        assert_eq!(
            spelled("mxctl -- partition apply --config l"),
            "mxctl -- partition apply --config l"
        );
    }
}
