//! [`ParseError`]: another program's output that does not read (`mx-smi`'s, `nvidia-smi`'s, a
//! driver's `/proc` file), naming the output and the line.

/// Output that does not read: the line that does not, or the part that is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A line that is not what the published layout has there.
    #[error("{output}, line {line}: {why}: {text:?}")]
    Line {
        /// Which output (`mx-smi -L`, `nvidia-smi topo -m`, …).
        output: &'static str,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What was wrong.
        why: &'static str,
    },
    /// A part the published layout always has is not there (the output may be cut short).
    #[error("{output}: {why}")]
    Missing {
        /// Which output.
        output: &'static str,
        /// What is missing.
        why: &'static str,
    },
}

impl ParseError {
    pub(crate) fn line(output: &'static str, number: usize, text: &str, why: &'static str) -> Self {
        Self::Line {
            output,
            line: number,
            text: text.to_owned(),
            why,
        }
    }
}

/// Lines with their 1-based numbers.
pub(crate) fn numbered(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line))
}

/// Reads each line of a headerless CSV output with `row`, passing over blank lines: `row` is
/// given the line and, to refuse it, the maker of the error naming that line of `output`.
pub(crate) fn csv_rows<T>(
    output: &'static str,
    text: &str,
    mut row: impl FnMut(&str, &dyn Fn(&'static str) -> ParseError) -> Result<T, ParseError>,
) -> Result<Vec<T>, ParseError> {
    let mut rows = Vec::new();
    for (number, line) in numbered(text) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why| ParseError::line(output, number, line, why);
        rows.push(row(line, &bad)?);
    }
    Ok(rows)
}
