//! [`SimPci`]: a simulated host's PCI functions — IDs, drivers, reset methods, IOMMU groups,
//! holders of a VFIO group, a reset that takes time, and faults — behind the same
//! [`PciBackend`] as the real sysfs.

use super::kernel::SimKernelLog;
use super::{Scenario, bdf, holding, reset_ends, set_up};
use crate::PciBackend;
use crate::backend::{BackendError, ResetEnd};
use crate::pci::{FunctionState, GONE_VENDOR, PciHost};
use gpu_host_probe::Clock;
use gpu_host_probe::Holder;
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What goes wrong on the simulated PCI host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PciFault {
    /// The write to `reset` never returns.
    Hang,
    /// The reset function reads vendor `0xffff` afterwards (fell off the bus).
    FallsOff,
    /// The reset function is gone afterwards.
    Gone,
    /// The kernel gives up on the function (`not ready …; giving up`, at warning level).
    GivesUp,
}

/// A simulated PCI host behind the PCI backend; its fields are [`PciSim`]'s.
pub type SimPci = PciBackend<PciSim>;

/// The simulated PCI host itself.
#[derive(Debug)]
pub struct PciSim {
    clock: Arc<dyn Clock>,
    /// The functions, by address.
    pub functions: BTreeMap<Bdf, FunctionState>,
    /// Processes holding a VFIO group file.
    pub holders: Vec<Holder>,
    /// Whether the run is root.
    pub root: bool,
    /// The kernel log.
    pub kernel_log: SimKernelLog,
    /// How long a reset takes.
    pub reset_duration: Duration,
    /// What goes wrong, if anything.
    pub fault: Option<PciFault>,
    /// Every function whose `reset` was written, in order.
    pub resets: Vec<Bdf>,
    /// How long after the write to `reset` ends the function reads its IDs again (until then
    /// it reads vendor 0xffff, as a function not yet back does); 0: at once.
    pub recovery: Duration,
    /// When the reset function reads its IDs again.
    back_at: Option<(Duration, Bdf)>,
}

/// A function of the simulated host.
pub fn sim_function(
    bdf: Bdf,
    class: u32,
    driver: Option<&str>,
    methods: &[&str],
    group: u32,
) -> FunctionState {
    let mut function = FunctionState {
        bdf,
        identity: PciIdentity::new(0x10de, 0x2330, class),
        driver: driver.map(str::to_owned),
        reset_methods: Some(methods.iter().map(|m| (*m).to_owned()).collect()),
        iommu_group: Some(group),
    };
    if class >> 16 == 0x04 {
        function.identity.device = 0x22a3;
    }
    function
}

impl SimPci {
    /// A host with a GPU at `0000:3b:00.0` bound to `vfio-pci` (FLR, then bus) and its audio
    /// function at `0000:3b:00.1`, in IOMMU group 12.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let gpu = bdf(GPU);
        let audio = bdf(AUDIO);
        let functions = BTreeMap::from([
            (
                gpu,
                sim_function(gpu, 0x030200, Some("vfio-pci"), &["flr", "bus"], 12),
            ),
            (
                audio,
                sim_function(audio, 0x040300, Some("vfio-pci"), &["flr"], 12),
            ),
        ]);
        PciBackend::of(PciSim {
            clock,
            functions,
            holders: Vec::new(),
            root: true,
            kernel_log: SimKernelLog::default(),
            reset_duration: Duration::from_millis(500),
            fault: None,
            resets: Vec::new(),
            recovery: Duration::ZERO,
            back_at: None,
        })
    }
}

impl PciHost for PciSim {
    sim_host_basics!();

    fn check_writer(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn function(&mut self, bdf: Bdf) -> Result<Option<FunctionState>, BackendError> {
        let recovering = self
            .back_at
            .is_some_and(|(at, reset)| reset == bdf && self.clock.now() < at);
        Ok(self.functions.get(&bdf).cloned().map(|mut function| {
            if recovering {
                function.identity.vendor = GONE_VENDOR;
            }
            function
        }))
    }

    fn bus_functions(&mut self, bdf: Bdf) -> Result<Vec<Bdf>, BackendError> {
        Ok(self
            .functions
            .keys()
            .filter(|other| other.domain == bdf.domain && other.bus == bdf.bus)
            .copied()
            .collect())
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(holding(&self.holders, files))
    }

    fn write_reset(&mut self, bdf: Bdf, within: Duration) -> ResetEnd {
        self.resets.push(bdf);
        let hangs = self.fault == Some(PciFault::Hang);
        if !reset_ends(&*self.clock, hangs, self.reset_duration, within) {
            return ResetEnd::Hung;
        }
        self.back_at = Some((self.clock.now() + self.recovery, bdf));
        match self.fault {
            Some(PciFault::FallsOff) => {
                if let Some(function) = self.functions.get_mut(&bdf) {
                    function.identity.vendor = GONE_VENDOR;
                }
            }
            Some(PciFault::Gone) => {
                self.functions.remove(&bdf);
            }
            Some(PciFault::GivesUp) => self.kernel_log.push(
                4,
                format!("vfio-pci {bdf}: not ready 65535ms after FLR; giving up"),
            ),
            Some(PciFault::Hang) | None => {
                self.kernel_log
                    .push(6, format!("vfio-pci {bdf}: ready 1023ms after FLR"));
            }
        }
        ResetEnd::Finished
    }
}

/// The GPU of the default host.
const GPU: &str = "0000:3b:00.0";

/// Its audio function.
const AUDIO: &str = "0000:3b:00.1";

/// The PCI scenarios `mxctl reset --method pci --simulate` knows: what each shows and changes
/// on the default host ([`SimPci::scenario`]).
pub const PCI_SCENARIOS: [Scenario<PciSim>; 9] = [
    Scenario::new(
        "ok",
        "a GPU at 0000:3b:00.0 bound to vfio-pci is reset by FLR and reads its IDs again",
        |_| {},
    ),
    Scenario::new(
        "busy",
        "a VMM holds the GPU's VFIO group /dev/vfio/12",
        |host| host.holders = vec![Holder::new(4242, "qemu-system-x86", "/dev/vfio/12")],
    ),
    Scenario::new(
        "host-driver",
        "the GPU is bound to the host driver nvidia",
        |host| set(host, GPU, |f| f.driver = Some("nvidia".to_owned())),
    ),
    Scenario::new(
        "no-reset-method",
        "the GPU's reset_method is empty",
        |host| set(host, GPU, |f| f.reset_methods = Some(Vec::new())),
    ),
    Scenario::new(
        "bus-sibling-in-use",
        "the GPU resets by bus, and its audio function is bound to snd_hda_intel",
        |host| {
            set(host, GPU, |f| {
                f.reset_methods = Some(vec!["bus".to_owned()])
            });
            set(host, AUDIO, |f| f.driver = Some("snd_hda_intel".to_owned()));
        },
    ),
    fault_scenario!("hang", "the write to reset never returns", PciFault::Hang),
    fault_scenario!(
        "falls-off",
        "the GPU reads vendor 0xffff after the reset",
        PciFault::FallsOff
    ),
    fault_scenario!("gone", "the GPU is gone after the reset", PciFault::Gone),
    fault_scenario!(
        "gives-up",
        "the kernel gives up on the GPU after the reset",
        PciFault::GivesUp
    ),
];

impl SimPci {
    /// The host of a named scenario (see [`PCI_SCENARIOS`]): the GPU and audio function of
    /// [`SimPci::new`], changed as the scenario says; `None` for an unknown name.
    pub fn scenario(name: &str, clock: Arc<dyn Clock>) -> Option<SimPci> {
        set_up(&PCI_SCENARIOS, name, || SimPci::new(clock))
    }
}

fn set(host: &mut PciSim, address: &str, change: impl FnOnce(&mut FunctionState)) {
    if let Some(function) = host.functions.get_mut(&bdf(address)) {
        change(function);
    }
}
