//! The MetaX GPU warm-reset procedure as a state machine: idle checks, interconnect groups, the
//! reset window, verification and cold-reboot escalation, with the `mx-smi` backend, a
//! simulator, a journal and the multi-host plan.
//!
//! This crate is laid out by the workspace foundation and filled by the warm-reset issues. It
//! exports nothing yet.
#![deny(missing_docs)]
