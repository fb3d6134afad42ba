//! [`HelperConfig`]: where the helper is and how it is run.

use crate::run::{OutputLimits, RunSpec};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The helper's default path.
pub const DEFAULT_HELPER: &str = "/opt/xensource/libexec/gpu-partition-helper";

/// What the helper is, for people.
const HELPER: &str = "gpu-partition-helper";

/// A program that wraps the helper's call (a lock, say): `PROGRAM ARGS… HELPER HELPER-ARGS…`.
/// Its arguments are kept apart from the helper's own, so adding one changes no call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Wrapper {
    /// The wrapping program.
    pub program: PathBuf,
    /// Its own arguments, before the helper's path.
    pub args: Vec<OsString>,
}

impl Wrapper {
    /// A wrapper `program args…`.
    pub fn new(program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            args,
        }
    }
}

/// How the helper is run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HelperConfig {
    /// The helper program: the machine's own at [`DEFAULT_HELPER`] by default, which a host
    /// whose roots are not the machine's never runs ([`crate::Program`]).
    pub program: crate::Program,
    /// How long one run may take (default 5 s).
    pub deadline: Duration,
    /// Output caps (default 4 MiB stdout, 64 KiB stderr). The stdout cap is one read's, and the
    /// budget of a fan-out ([`Helper::read_all`](crate::helper::Helper::read_all)), shared by its
    /// runs in flight (each at least [`MIN_SHARE`](crate::helper::MIN_SHARE)).
    pub limits: OutputLimits,
    /// How many cards are read at once (default 8).
    pub concurrency: usize,
    /// A wrapper around each call (none by default).
    pub wrapper: Option<Wrapper>,
    /// Ends every run, and every card not read yet, when triggered (none by default): a card
    /// then reads `unknown (cancelled)`.
    pub cancel: Option<crate::Cancel>,
}

impl Default for HelperConfig {
    fn default() -> Self {
        Self {
            program: crate::Program::installed(HELPER, DEFAULT_HELPER),
            deadline: Duration::from_secs(5),
            limits: OutputLimits::default(),
            concurrency: 8,
            wrapper: None,
            cancel: None,
        }
    }
}

impl HelperConfig {
    /// The default configuration with the helper at `path`, named by the caller.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            program: crate::Program::named(HELPER, path),
            ..Self::default()
        }
    }

    crate::setters! {
        /// Sets the deadline of one run.
        pub deadline: Duration,
        /// Sets the output caps.
        pub limits: OutputLimits,
    }

    /// Sets how many cards are read at once (at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Wraps each call in `wrapper`.
    pub fn wrapper(mut self, wrapper: Wrapper) -> Self {
        self.wrapper = Some(wrapper);
        self
    }

    /// Ends the runs when `cancel` is triggered.
    pub fn cancel(mut self, cancel: crate::Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// The run of the helper with `helper_args`, wrapped when a wrapper is set.
    pub(crate) fn spec(&self, helper_args: Vec<OsString>) -> RunSpec {
        let spec = match &self.wrapper {
            None => RunSpec::new(self.program.path(), self.deadline).args(helper_args),
            Some(wrapper) => RunSpec::new(&wrapper.program, self.deadline)
                .args(wrapper.args.iter().cloned())
                .args([self.program.path().as_os_str().to_owned()])
                .args(helper_args),
        };
        // A helper run dies with the process that started it: a write of a run killed
        // half-way never goes on under the next run's lock.
        let spec = spec.limits(self.limits).die_with_parent();
        match &self.cancel {
            Some(cancel) => spec.cancel(cancel.clone()),
            None => spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapper_goes_before_the_helper_and_keeps_its_own_arguments_apart() {
        let config =
            HelperConfig::new("/h").wrapper(Wrapper::new("/lock", vec!["-w".into(), "5".into()]));
        let spec = config.spec(vec!["--version".into()]);
        assert_eq!(spec.program, PathBuf::from("/lock"));
        assert_eq!(
            spec.args,
            ["-w", "5", "/h", "--version"].map(OsString::from)
        );
    }

    #[test]
    fn without_a_wrapper_the_helper_is_the_program() {
        let spec = HelperConfig::new("/h").spec(vec!["--version".into()]);
        assert_eq!(
            (spec.program, spec.args),
            (PathBuf::from("/h"), vec![OsString::from("--version")])
        );
    }
}
