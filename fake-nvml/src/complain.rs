//! Saying on stderr why the fake answers or ends as it does: an error and each of its causes on
//! one line.
//!
//! It uses nothing of the crate: the `fake-nvml` binary includes this file as its own module, so
//! the library and the binary word their complaints alike.

/// Says on stderr why the fake answers as it does (a state or scenario it cannot use): the error
/// and each of its causes, as `fake-nvml: a: b: c`.
pub(crate) fn complain(error: &dyn std::error::Error) {
    let mut text = format!("fake-nvml: {error}");
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(&format!(": {next}"));
        cause = next.source();
    }
    eprintln!("{text}");
}
