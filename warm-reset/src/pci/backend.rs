//! [`PciBackend`]: the machine's questions answered for any PCI function through sysfs, the
//! way a toolstack resets a passed-through device between two guests, with the checks none of
//! them makes all of: a reset method exists, no host driver is bound, no process holds the
//! VFIO group, and for a bus reset every other function on the bus passes the same checks.

use super::function::{FunctionState, GONE_VENDOR};
use super::host::{PciHost, SysfsHost};
use super::target::{Member, PciTarget};
use crate::backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
use crate::host_backend::HostBackend;
use crate::kmsg::device_errors;
use crate::method::Method;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::{ResetId, ResetTarget};
use crate::target::{Target, TargetFacts};
use crate::warning::ResetWarning;
use gpu_host_probe::describe_holders;
use gpu_partition_types::Bdf;
use std::time::Duration;

/// The reset methods that reset every function on the bus, not the function alone.
const BUS_METHODS: [&str; 2] = ["bus", "cxl_bus"];

/// A host's PCI functions behind the machine's questions.
pub type PciBackend<H> = HostBackend<PciTarget, H>;

/// The real host: sysfs, `/proc`, the kernel log.
pub type SysfsBackend = PciBackend<SysfsHost>;

impl<H: PciHost> PciBackend<H> {
    fn present(&mut self, bdf: Bdf) -> Result<FunctionState, Refusal> {
        self.host_mut().function(bdf)?.ok_or_else(|| {
            Refusal::new(
                BlockedReason::UnknownDevice,
                format!("no PCI function {bdf} in sysfs"),
            )
        })
    }

    /// Why `function` may not be reset now, if anything: a host driver, or a holder of its
    /// VFIO group. `named` tells the device asked for from another function of its bus.
    fn in_use(&mut self, function: &FunctionState, named: Bdf) -> Result<Option<Refusal>, Refusal> {
        let sibling = |what: String| {
            Refusal::new(
                BlockedReason::GroupInUse,
                format!(
                    "a bus reset of {named} would also reset {}, {what}",
                    function.bdf
                ),
            )
        };
        if let Some(driver) = function.host_driver() {
            let what = format!("bound to the host driver {driver}");
            return Ok(Some(if function.bdf == named {
                Refusal::new(
                    BlockedReason::DriverInUse,
                    format!("{named} is {what}; a reset would pull it from under the driver"),
                )
            } else {
                sibling(what)
            }));
        }
        let Some(file) = function.vfio_file() else {
            return Ok(None);
        };
        let holders = self.host_mut().holders(&[file])?;
        if holders.is_empty() {
            return Ok(None);
        }
        let what = format!("held by {}", describe_holders(&holders));
        Ok(Some(if function.bdf == named {
            Refusal::new(BlockedReason::GpuBusy, format!("{named} is {what}"))
        } else {
            sibling(what)
        }))
    }
}

impl<H: PciHost> Backend for PciBackend<H> {
    backend_asks_host!();

    fn prepare(&mut self) -> Result<Vec<ResetWarning>, Refusal> {
        // No vendor tool and no module; only the shell that will write `reset` must be safe.
        self.host_mut().check_writer()?;
        Ok(Vec::new())
    }

    fn resolve(&mut self, target: &ResetTarget) -> Result<(Target, Vec<ResetWarning>), Refusal> {
        let ResetTarget::Named(ids) = target else {
            return Err(Refusal::new(
                BlockedReason::UnknownDevice,
                "the pci method resets one function: name its PCI address (dddd:bb:dd.f), not all",
            ));
        };
        let &[ResetId::Bus(device)] = ids.as_slice() else {
            return Err(Refusal::new(
                BlockedReason::UnknownDevice,
                format!(
                    "{:?} is not one PCI address (dddd:bb:dd.f); the pci method resets one function",
                    target.to_string()
                ),
            ));
        };
        let function = self.present(device)?;
        let method = match function.reset_methods.as_deref() {
            Some([first, ..]) => first.clone(),
            Some([]) | None => {
                return Err(Refusal::new(
                    BlockedReason::ResetUnsupported,
                    format!(
                        "{device} offers no reset method (its reset_method is empty or absent)"
                    ),
                ));
            }
        };
        let mut members = vec![Member::new(device, function.identity)];
        if BUS_METHODS.contains(&method.as_str()) {
            for other in self.host_mut().bus_functions(device)? {
                if other != device {
                    let sibling = self.present(other)?;
                    members.push(Member::new(other, sibling.identity));
                }
            }
        }
        let pci = PciTarget {
            device,
            method,
            members,
        };
        Ok((
            Target::new(&device.to_string(), TargetFacts::Pci(pci)),
            Vec::new(),
        ))
    }

    fn check_use(&mut self, target: &Target) -> Result<Vec<ResetWarning>, Refusal> {
        let pci = target.facts_of::<PciTarget>()?.clone();
        for member in &pci.members {
            let function = self.present(member.bdf)?;
            if let Some(refusal) = self.in_use(&function, pci.device)? {
                return Err(refusal);
            }
        }
        Ok(Vec::new())
    }

    fn reset(&mut self, target: &Target, within: Duration) -> ResetEnd {
        match target.facts_of::<PciTarget>() {
            Ok(pci) => self.host_mut().write_reset(pci.device, within),
            Err(error) => ResetEnd::Failed(error),
        }
    }

    fn check_back(&mut self, target: &Target) -> Back {
        let pci = match target.facts_to_verify::<PciTarget>() {
            Ok(pci) => pci,
            Err(wrong) => return wrong,
        };
        let mut not_back = Vec::new();
        for member in &pci.members {
            match self.host_mut().function(member.bdf) {
                Err(error) => not_back.push(format!("{}: {}", member.bdf, error.said())),
                Ok(None) => not_back.push(format!("{} is gone", member.bdf)),
                Ok(Some(now)) if now.identity.vendor == GONE_VENDOR => not_back.push(format!(
                    "{} reads vendor 0xffff (it fell off the bus)",
                    member.bdf
                )),
                Ok(Some(now)) if now.identity != member.identity => not_back.push(format!(
                    "{} reads {} where it read {}",
                    member.bdf, now.identity, member.identity
                )),
                Ok(Some(_)) => {}
            }
        }
        if not_back.is_empty() {
            Back::Yes {
                warnings: Vec::new(),
            }
        } else {
            Back::NotYet(NotBack::new(
                ColdRebootReason::GpuMissing,
                not_back.join("; "),
            ))
        }
    }

    fn kernel_errors(&mut self, target: &Target) -> Result<Vec<String>, BackendError> {
        target.kernel_errors_of::<PciTarget>(self.host_mut().kernel_log(), device_errors)
    }

    fn survey(&mut self) -> Result<Survey, BackendError> {
        Err(BackendError::NoSurvey(Method::Pci))
    }
}
