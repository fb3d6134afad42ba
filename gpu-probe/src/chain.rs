//! [`Chain`]: an error with its causes on one line, for people (`top: cause: cause`).
//!
//! Errors here name their cause with `#[source]` and never repeat it in their own message, so
//! a message for people walks the chain; this is the one place that does.

use std::error::Error;
use std::fmt;

/// Displays an error followed by each of its sources, joined by `": "`.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read the journal")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_chain_shows_the_error_then_each_cause() {
        let error = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(
            Chain(&error).to_string(),
            "cannot read the journal: disk on fire"
        );
    }

    #[test]
    fn an_error_without_a_cause_is_its_own_message() {
        let error = std::io::Error::other("alone");
        assert_eq!(Chain(&error).to_string(), "alone");
    }
}
