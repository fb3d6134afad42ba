//! The helper client that `probe` and `sync` use: the config's helper settings (whose defaults
//! are `gpu-host-probe`'s), with `--helper` and `--deadline` over them.

use crate::cli::HelperArgs;
use crate::config::Config;
use gpu_host_probe::helper::Helper;

/// The helper client the command line and the config describe.
pub fn helper(args: &HelperArgs, config: &Config) -> Helper {
    let mut settings = config.helper.clone();
    if let Some(path) = &args.helper {
        settings.program = settings.program.at(path);
    }
    if let Some(deadline) = args.deadline {
        settings = settings.deadline(deadline);
    }
    Helper::new(settings)
}
