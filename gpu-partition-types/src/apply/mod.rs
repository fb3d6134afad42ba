//! The helper's `apply` command (format 1.1): a request of steps, each a change NVML makes to
//! one card, run in order and answered by one result per step and the card as a fresh read
//! finds it after them. The request is read strictly: a step the reader does not know, or a
//! member a step does not have, is refused before anything is written, named by its JSON
//! Pointer.
//!
//! ```
//! use gpu_partition_types::{ApplyRequest, Placement, Step};
//!
//! let request = ApplyRequest::from_json(br#"{"steps": [
//!     {"op": "set_mig_mode", "enabled": true},
//!     {"op": "create_gpu_instance", "profile_id": 19, "placement": {"start": 0, "size": 1}},
//!     {"op": "create_compute_instance", "gpu_instance_id": 7, "profile_id": 0}]}"#)?;
//! assert_eq!(request.steps[1], Step::CreateGpuInstance {
//!     profile_id: 19,
//!     placement: Placement::new(0, 1),
//! });
//! assert_eq!(ApplyRequest::from_json(request.to_json().as_bytes())?, request);
//!
//! let refused = ApplyRequest::from_json(br#"{"steps": [{"op": "reshape"}]}"#).unwrap_err();
//! assert_eq!(refused.pointer.to_string(), "/steps/0/op");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod answer;
mod json;
mod step;

pub use answer::{ApplyAnswer, RefusalKind, StepOutcome, StepResult};
pub use json::Refused;
pub use step::{ApplyRequest, Op, Step};
