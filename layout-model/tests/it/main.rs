//! The layout model's tests: one binary, a module per subject.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod amd;
mod common;
mod compare;
mod declared;
mod partition;
mod props;
mod room;
mod vf_drift;
