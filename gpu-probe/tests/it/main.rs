//! The integration tests of `gpu-probe`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod common;
mod helper;
mod lock;
mod rendezvous;
mod runner;
