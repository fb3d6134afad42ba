//! `mxctl partition assert`: whether a layout is applied, every difference named (GPU
//! instances, compute instances and placements apart); reads only, under the host lock
//! (`mig_layout::assert_applied`).

use super::{layout, layout_failure};
use crate::cli::{LockWaitArgs, PartitionAssert};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use gpu_partition_types::Bdf;
use std::fmt::Write as _;

/// Exit 0 when every GPU the layout names is as it wants, 1 with the differences.
pub fn run(
    args: &PartitionAssert,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let specs = layout(&args.layout)?;
    // The instances a layout does not name are judged as an apply would treat them.
    let options = options(config, &args.devices, &args.lock).unnamed(config.unnamed);
    let helper = helper(&args.helper, config);
    emit(host, &helper, output, "layout", |run| {
        mig_layout::assert_applied(run, &args.layout.select, &specs, &options)
    })
}

/// The options an assert reads with: the config's pool, the GPUs `devices` (all when empty),
/// and the host lock waited on as `lock` says.
pub fn options(config: &Config, devices: &[Bdf], lock: &LockWaitArgs) -> mig_layout::ApplyOptions {
    mig_layout::ApplyOptions::new(config.pool)
        .devices(devices.to_vec())
        .lock_wait(lock.wait())
}

/// Runs `assert` on the host's state read-only, with `helper`, and emits its report, `what`
/// naming what it asserts (`layout`, `vGPU config`, `profile`): every assert's exit and output.
pub fn emit(
    host: &Host,
    helper: &mig_layout::Helper,
    output: Output,
    what: &str,
    assert: impl FnOnce(
        mig_layout::AssertRun<'_>,
    ) -> Result<mig_layout::AssertReport, mig_layout::ApplyError>,
) -> Result<Exit, Failure> {
    let mut store = host_sync::FileStore::read_only(host.state_dir());
    let report =
        assert(mig_layout::AssertRun::new(host, helper, &mut store)).map_err(layout_failure)?;
    let text = text(&report, what);
    output.emit(&report, &text)?;
    Ok(Exit::of_assert(report.outcome))
}

/// An assert's report for people: every difference, the warnings, and whether the `what`
/// (`layout`, `vGPU config`) is applied.
pub fn text(report: &mig_layout::AssertReport, what: &str) -> String {
    let mut text = String::new();
    for gpu in &report.gpus {
        for difference in &gpu.differences {
            let _ = writeln!(
                text,
                "GPU {}  {}  {}: {}",
                gpu.index,
                gpu.device,
                difference.kind(),
                difference.message()
            );
        }
    }
    for warning in &report.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    if let Some(detail) = &report.detail {
        let _ = writeln!(text, "{}: {detail}", report.outcome.as_str());
    }
    let _ = writeln!(
        text,
        "the {what} {:?} is {}",
        report.label,
        match report.outcome {
            mig_layout::AssertOutcome::Applied => "applied",
            mig_layout::AssertOutcome::NothingNamed =>
                "not known here: it names no GPU of this host",
            mig_layout::AssertOutcome::Differs => "not applied",
            mig_layout::AssertOutcome::Blocked(_) => "not known: the cards were not read",
        }
    );
    text
}
