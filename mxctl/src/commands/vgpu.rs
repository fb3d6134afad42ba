//! `mxctl vgpu`: NVIDIA vgpu-device-manager configs applied, left, restored, asserted and
//! exported by the same executor as `partition` (`mig_layout::vgpu`), with its options, exit
//! codes and `--json`.

use crate::cli::{VgpuApply, VgpuAssert, VgpuConfigArgs, VgpuExport, VgpuRestore, VgpuWrite};
use crate::commands::partition::apply::{Leaving, Tools, What, restore_with, write};
use crate::commands::partition::{assert, layout_failure, read_text};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use mig_layout::vgpu::{VgpuDocument, VgpuSpec};

/// The config `args` select: its specs, or a usage failure naming the line and member.
fn config_specs(args: &VgpuConfigArgs) -> Result<Vec<VgpuSpec>, Failure> {
    let text = read_text(&args.file)?;
    let document = VgpuDocument::from_text(&text)
        .map_err(|error| Failure::Usage(format!("{}: {error}", args.file.display())))?;
    match document.config(&args.select) {
        Some(specs) => Ok(specs.to_vec()),
        None => Err(crate::commands::partition::not_in(
            &args.file,
            "vGPU config",
            &args.select,
            "configs",
            document.configs.iter().map(|(name, _)| name.as_str()),
        )),
    }
}

/// The tools of a vGPU write: `sriov-manage`, where the command names one.
fn tools(args: &VgpuWrite) -> Tools<'_> {
    Tools {
        sriov_manage: args.sriov_manage.as_deref(),
        ..Tools::default()
    }
}

/// `vgpu apply`.
pub fn apply(
    args: &VgpuApply,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let specs: Vec<VgpuSpec> = config_specs(&args.config)?
        .into_iter()
        .map(|spec| spec.with_heterogeneous(args.heterogeneous))
        .collect();
    write(
        What::Vgpu(&specs, &args.config.select),
        &args.write.write,
        tools(&args.write),
        config,
        host,
        output,
        false,
    )
}

/// `vgpu leave`.
pub fn leave(
    args: &VgpuWrite,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    write(
        What::Leave(Leaving::Vgpu),
        &args.write,
        tools(args),
        config,
        host,
        output,
        false,
    )
}

/// `vgpu restore`: the host's one declaration, VFs and types included.
pub fn restore(
    args: &VgpuRestore,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    restore_with(
        &args.write.write,
        tools(&args.write),
        args.at_boot,
        config,
        host,
        output,
    )
}

/// `vgpu assert`: exit 0 when every GPU the config names holds it, 1 with the differences.
pub fn assert(
    args: &VgpuAssert,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let specs = config_specs(&args.config)?;
    let options = assert::options(config, &args.devices, &args.lock).unnamed(config.unnamed);
    let helper = helper(&args.helper, config);
    assert::emit(host, &helper, output, "vGPU config", |run| {
        mig_layout::vgpu::assert_vgpu(run, &args.config.select, &specs, &options)
    })
}

/// `vgpu export`: the host's vGPUs as a vgpu-device-manager config (YAML) that `vgpu apply`
/// takes back as zero writes, read from the cards and their VFs under the host lock; with
/// `--declared`, what the host is declared to hold, read from the state. What the format cannot
/// say goes to the log as warnings (and with `--json` beside the document).
pub fn export(
    args: &VgpuExport,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let exported = if args.declared {
        mig_layout::vgpu::export_vgpu_declared(&crate::commands::partition::export::declared(host)?)
    } else {
        mig_layout::vgpu::export_vgpu_host(
            host,
            &helper(&args.helper, config),
            args.name.as_deref().unwrap_or("current"),
            args.lock.wait(),
        )
        .map_err(layout_failure)?
    };
    for warning in &exported.warnings {
        tracing::warn!("{warning}");
    }
    output.emit(&exported, &exported.document.to_yaml())?;
    Ok(Exit::Done)
}
