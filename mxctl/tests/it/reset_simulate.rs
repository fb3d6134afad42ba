//! `mxctl reset --simulate SCENARIO`: `help` lists the method's scenarios (no `--device`
//! needed, exit 0); a name the method does not know is a usage error that lists them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::machine::Machine;
use std::path::Path;
use warm_reset::Method;

/// Each scenario of `method` as its line of the listing: `  NAME: what it shows`.
fn listed(method: Method) -> Vec<String> {
    warm_reset::sim::scenarios(method)
        .iter()
        .map(|(name, shows)| format!("  {name}: {shows}"))
        .collect()
}

#[test]
fn simulate_help_lists_the_scenarios_of_the_method_and_exits_0_without_a_device() {
    let machine = Machine::new();
    let output = machine
        .mxctl_configured(Path::new("/dev/null"))
        .args(["reset", "--simulate", "help"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"the scenarios of --method metax:"),
        "{text}"
    );
    assert_eq!(lines[1..], listed(Method::Metax), "{text}");
    assert!(
        !machine.path("state/simulated").exists(),
        "a listing ran a simulated reset"
    );
}

#[test]
fn an_unknown_scenario_is_a_usage_error_that_lists_the_scenarios_of_the_method() {
    let machine = Machine::new();
    let output = machine
        .mxctl_configured(Path::new("/dev/null"))
        .args(["reset", "--method", "pci", "--simulate", "nope", "--device"])
        .arg("0000:3b:00.0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown pci scenario \"nope\""), "{stderr}");
    for line in listed(Method::Pci) {
        assert!(stderr.contains(&line), "{line:?} not in {stderr}");
    }
}
