//! What `reset` and `reset step` share: the real backend of the method and the window from the
//! command line and the config, and the exit code of an outcome.

use crate::cli::{BackendArgs, MethodArg};
use crate::config::Config;
use gpu_host_probe::Host;
use std::time::Duration;
use warm_reset::amd::AmdSmiHost;
use warm_reset::metax::MxSmiHost;
use warm_reset::nvidia::NvidiaSmiHost;
use warm_reset::pci::SysfsHost;
use warm_reset::{AmdSmiBackend, Backend, MxSmiBackend, NvidiaSmiBackend, SysfsBackend};

/// The reset window: `--window`, else the config's.
pub fn window(args: &BackendArgs, config: &Config) -> Duration {
    args.window.unwrap_or(config.reset_window)
}

/// The real backend of `--method`, from the command line and the config.
pub fn real_backend(args: &BackendArgs, config: &Config, host: &Host) -> Box<dyn Backend> {
    let kmsg = args.kmsg.clone().unwrap_or_else(|| config.kmsg.clone());
    match args.method {
        MethodArg::Metax => Box::new(MxSmiBackend::of(MxSmiHost::new(
            args.mx_smi.clone().or_else(|| config.mx_smi.clone()),
            host.proc_root(),
            kmsg,
        ))),
        MethodArg::Nvidia => Box::new(NvidiaSmiBackend::of(NvidiaSmiHost::new(
            args.nvidia_smi
                .clone()
                .or_else(|| config.nvidia_smi.clone()),
            host.proc_root(),
            kmsg,
        ))),
        MethodArg::Pci => Box::new(SysfsBackend::of(SysfsHost::new(
            host.sysfs_root(),
            host.proc_root(),
            kmsg,
        ))),
        MethodArg::Amd => Box::new(AmdSmiBackend::of(AmdSmiHost::new(
            args.amd_smi.clone().or_else(|| config.amd_smi.clone()),
            host.sysfs_root(),
            host.proc_root(),
            kmsg,
        ))),
    }
}
