//! Edits of a text line by line, for the property tests that mutate published outputs: each
//! tool's test draws its own edits and lines, and they are applied here alike.

use proptest::prelude::*;

/// One edit of a list of lines.
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    Delete(usize),
    Duplicate(usize),
    Replace(usize, String),
    Swap(usize, usize),
    Truncate(usize, usize),
}

/// The lines of `text` with `edits` applied in order, each position taken modulo the lines there
/// are then; the edits stop once no line is left.
pub(crate) fn edited_lines(text: &str, edits: &[Edit]) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for edit in edits {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match edit {
            Edit::Delete(at) => {
                lines.remove(at % n);
            }
            Edit::Duplicate(at) => {
                let line = lines[at % n].clone();
                lines.insert(at % n, line);
            }
            Edit::Replace(at, text) => lines[at % n] = text.clone(),
            Edit::Swap(a, b) => lines.swap(a % n, b % n),
            Edit::Truncate(at, keep) => {
                let line = &mut lines[at % n];
                let keep = line
                    .char_indices()
                    .nth(keep % (line.len() + 1))
                    .map_or(line.len(), |(i, _)| i);
                line.truncate(keep);
            }
        }
    }
    lines
}

/// An edit that deletes, duplicates or replaces one line (with one `line` draws), each as likely.
pub(crate) fn delete_duplicate_or_replace(
    line: impl Strategy<Value = String>,
) -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Duplicate),
        (any::<usize>(), line).prop_map(|(at, text)| Edit::Replace(at, text)),
    ]
}
