//! The integration tests of `warm-reset`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod amd_smi_samples;
mod line_edits;
mod machine;
mod machine_window;
mod metax_rules;
mod mx_smi_props;
mod mx_smi_samples;
mod nvidia_smi_samples;
mod plan;
mod plan_step;
mod random_events;
mod simulated;
mod simulated_amd;
mod simulated_methods;
