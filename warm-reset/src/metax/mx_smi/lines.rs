//! The bordered boxes `mx-smi` draws: `+---+` rules, `|===|` rules and `| … |` lines.

use super::error::ParseError;

/// The text between the borders of a `| … |` line, or `None` for any other line.
pub(crate) fn bordered(line: &str) -> Option<&str> {
    let line = line.trim_end();
    let inner = line.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner)
}

/// The inside of line `number` of `output` as [`bordered`] reads it, or the error that the line
/// is not bordered, saying `why` it should have been.
pub(crate) fn bordered_or<'a>(
    output: &'static str,
    number: usize,
    line: &'a str,
    why: &'static str,
) -> Result<&'a str, ParseError> {
    bordered(line).ok_or_else(|| ParseError::line(output, number, line, why))
}

/// A `+-----+` rule (the edges of a box, and between the GPUs of a table).
pub(crate) fn is_edge(line: &str) -> bool {
    rule_of(line, '+', '-')
}

/// A `|=====|` rule (under a box's column header), `+` allowed where columns meet.
pub(crate) fn is_double_rule(line: &str) -> bool {
    rule_of(line, '|', '=')
}

/// A `|-----|` rule (between a box's header lines and its column header).
pub(crate) fn is_single_rule(line: &str) -> bool {
    rule_of(line, '|', '-')
}

fn rule_of(line: &str, edge: char, fill: char) -> bool {
    let line = line.trim_end();
    let Some(inner) = line.strip_prefix(edge).and_then(|rest| {
        rest.strip_suffix(edge)
            .or_else(|| rest.strip_suffix(if edge == '|' { '+' } else { '|' }))
    }) else {
        return false;
    };
    inner.contains(fill) && inner.chars().all(|c| c == fill || c == '+' || c == '|')
}

pub(crate) use crate::parse_error::numbered;

/// The words of `text` with the byte offset each starts at.
pub(crate) fn words_at(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(from)) => {
                words.push((from, &text[from..at]));
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(from) = start {
        words.push((from, &text[from..]));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_of_the_published_boxes_are_told_apart() {
        assert!(is_edge("+------------------+-----------------+"));
        assert!(is_double_rule("|==================+=================|"));
        assert!(is_single_rule("|------------------+-----------------+"));
        assert!(is_single_rule("|------------------+-----------------|"));
        assert!(!is_edge("| 0     MetaX C500 | 0           Off |"));
        assert!(!is_double_rule("|  no process found   |"));
        assert!(!is_edge("++"));
    }

    #[test]
    fn a_bordered_line_gives_what_is_between_its_borders() {
        assert_eq!(
            bordered("|  no process found  |  "),
            Some("  no process found  ")
        );
        assert_eq!(bordered("no borders"), None);
    }

    #[test]
    fn words_keep_where_they_start() {
        assert_eq!(words_at(" ab  c d"), [(1, "ab"), (5, "c"), (7, "d")]);
        assert!(words_at("   ").is_empty());
    }
}
