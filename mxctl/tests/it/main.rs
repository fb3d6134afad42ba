//! The integration tests of `mxctl`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod amd_partition;
mod ansible;
mod closed_stdout;
mod common;
mod contract;
mod crash;
mod declared_truth;
mod embedding;

mod exposition;
mod generate;
mod gpus_vgpu;
mod help;
mod helper_fixture_mode;
mod labels;
mod lock_dir;
mod machine_programs;
mod metrics;
mod multi_host;
mod partition;
mod partition_crash;
mod partition_declared;
mod partition_list;
mod partition_one;
mod partition_ownership;
mod partition_running;
mod partition_vgpu;
mod probe;
mod protocol_doc;
mod reply_check;
mod reset;
mod reset_amd;
mod reset_nvidia;
mod reset_pci;
mod reset_simulate;
mod served_drivers;
mod sync;
mod sync_rules;
mod trust;
mod vgpu;
