//! Runs programs with real deadlines, holds the host GPU lock, and reads each GPU through the
//! GPU partition helper.
//!
//! This crate is laid out by the workspace foundation and filled by the gpu-probe issue: the
//! process runner (own process group, SIGTERM then SIGKILL, bounded output), the host lock (an
//! exclusive `flock` in the state directory) and the helper client. It exports nothing yet.
#![deny(missing_docs)]
