//! `mxctl amd`: ROCm Device Config Manager profiles applied, asserted and restored by the
//! executor `partition` uses (`mig_layout::amd`), with its options, exit codes and `--json`.

use crate::cli::{AmdApply, AmdAssert, AmdRestore, AmdWrite, DcmArgs};
use crate::commands::partition::apply::{Leaving, Tools, What, restore_with, write};
use crate::commands::partition::{assert, read_text};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use mig_layout::amd::{DcmDocument, DcmProfile};

/// The file `args` names and the profile it selects, or a usage failure naming the line and
/// member (or the profiles the file has). The profile's values are judged, by DCM's rules,
/// when the apply or the assert assigns it to the host's GPUs.
fn profile(args: &DcmArgs) -> Result<(DcmDocument, DcmProfile), Failure> {
    let text = read_text(&args.file)?;
    let document = DcmDocument::from_text(&text)
        .map_err(|error| Failure::Usage(format!("{}: {error}", args.file.display())))?;
    let Some(profile) = document.profile(&args.profile).cloned() else {
        return Err(crate::commands::partition::not_in(
            &args.file,
            "profile",
            &args.profile,
            "profiles",
            document
                .profiles
                .iter()
                .map(|profile| profile.name.as_str()),
        ));
    };
    Ok((document, profile))
}

/// The tools of an AMD write: `modprobe`, the simulation, the file's client services.
fn tools(args: &AmdWrite, services: Vec<String>) -> Tools<'_> {
    Tools {
        modprobe: args.modprobe.as_deref(),
        amdgpu_sim: args.simulate.as_deref(),
        amd_services: services,
        ..Tools::default()
    }
}

/// `amd apply`.
pub fn apply(
    args: &AmdApply,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let (document, profile) = profile(&args.dcm)?;
    write(
        What::Amd(&profile, &args.dcm.profile),
        &args.write.write,
        tools(&args.write, document.client_services),
        config,
        host,
        output,
        false,
    )
}

/// `amd leave`: every AMD GPU that partitions brought to one undivided GPU (SPX with NPS1).
pub fn leave(
    args: &AmdWrite,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    write(
        What::Leave(Leaving::Amd),
        &args.write,
        tools(args, Vec::new()),
        config,
        host,
        output,
        false,
    )
}

/// `amd restore`: the host's one declaration, AMD partitions included.
pub fn restore(
    args: &AmdRestore,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    restore_with(
        &args.write.write,
        tools(&args.write, Vec::new()),
        args.at_boot,
        config,
        host,
        output,
    )
}

/// `amd assert`: exit 0 when every GPU the profile gives partitions holds them, 1 with the
/// differences.
pub fn assert(
    args: &AmdAssert,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let (_, profile) = profile(&args.dcm)?;
    let options = assert::options(config, &args.devices, &args.lock);
    // The config's helper: an AMD assert reads sysfs only, and never runs it.
    let helper = mig_layout::Helper::new(config.helper.clone());
    assert::emit(host, &helper, output, "profile", |run| {
        mig_layout::amd::assert_amd(run, &args.dcm.profile, &profile, &options)
    })
}
