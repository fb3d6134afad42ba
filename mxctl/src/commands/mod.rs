//! One module per command.

pub mod amd;
pub mod check_trust;
pub mod generate;
pub mod gpus;
pub mod labels;
pub mod metrics;
pub mod partition;
pub mod probe;
pub mod reply_check;
pub mod reset;
pub mod reset_backend;
pub mod reset_plan;
pub mod state;
pub mod sync;
pub mod systemd_generator;
pub mod text_file;
pub mod vgpu;
