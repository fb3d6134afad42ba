//! What every reader of a document (a layout, a vGPU config, a DCM profile file) promises of
//! a refusal: it names its line, within the text; a refusal of the whole text (its size) names
//! none. Each target includes this file as a module: the fuzz targets share no library.

/// Asserts that the refusal `error` of `text`, at `line`, keeps that promise.
pub fn check(text: &str, line: Option<usize>, error: &dyn std::fmt::Display) {
    // YAML's line breaks: LF, CR LF, and a CR alone; the end of the text may be on the line
    // after the last break.
    let breaks =
        text.matches('\n').count() + text.matches('\r').count() - text.matches("\r\n").count();
    let lines = breaks + 1;
    match line {
        Some(line) => assert!(line >= 1 && line <= lines, "{error} (of {lines} lines)"),
        None => assert!(text.len() > mig_layout::MAX_DOCUMENT, "{error}"),
    }
}
