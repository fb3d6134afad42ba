//! Properties: the placement search against brute force, the planner's diff over random
//! layouts, and the reader over random documents and mutations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{carry_out, reply};
use gpu_partition_types::Placement;
use layout_model::{ProfileKey, Want, differences};
use mig_layout::fit::{Candidate, Demand, Score, fit};
use mig_layout::plan;
use mig_layout::{DeviceRef, Devices, Document, Spec, to_json, to_yaml};
use proptest::prelude::*;

fn mask(placement: Placement) -> u32 {
    ((1u32 << placement.size) - 1) << placement.start
}

/// Every way to place the demands, the best score found by trying them all.
fn brute(demands: &[Demand]) -> Option<Score> {
    fn go(demands: &[Demand], d: usize, from: usize, left: u32, used: u32) -> Option<Score> {
        let Some(demand) = demands.get(d) else {
            return Some((0, 0));
        };
        if left == 0 {
            let next = demands.get(d + 1).map_or(0, |n| n.count);
            return go(demands, d + 1, 0, next, used);
        }
        let mut best: Option<Score> = None;
        for (c, candidate) in demand.candidates.iter().enumerate().skip(from) {
            let m = mask(candidate.placement);
            if m & used != 0 {
                continue;
            }
            if let Some((kept, full)) = go(demands, d, c + 1, left - 1, used | m) {
                let score = match candidate.existing {
                    Some((_, complete)) => (kept + 1, full + u32::from(complete)),
                    None => (kept, full),
                };
                best = best.max(Some(score));
            }
        }
        best
    }
    go(demands, 0, 0, demands.first().map_or(0, |d| d.count), 0)
}

fn demand() -> impl Strategy<Value = Demand> {
    (
        prop::sample::select(vec![1u32, 2, 4, 8]),
        0u32..4,
        prop::collection::vec(any::<(bool, bool)>(), 8),
    )
        .prop_map(|(size, count, marks)| {
            let candidates = (0..8)
                .step_by(size as usize)
                .filter(|start| start + size <= 8)
                .zip(marks)
                .map(|(start, (existing, complete))| Candidate {
                    placement: Placement::new(start, size),
                    existing: existing.then_some((start, complete)),
                })
                .collect();
            Demand { count, candidates }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_search_finds_a_fit_exactly_when_one_exists_and_keeps_as_many(demands in prop::collection::vec(demand(), 1..5)) {
        let found = fit(&demands);
        let best = brute(&demands);
        prop_assert_eq!(found.as_ref().map(|(_, score)| *score), best);
        if let Some((chosen, score)) = found {
            let mut used = 0u32;
            let mut kept = (0u32, 0u32);
            for (demand, picks) in demands.iter().zip(&chosen) {
                prop_assert_eq!(picks.len() as u32, demand.count);
                for pick in picks {
                    let candidate = &demand.candidates[*pick];
                    let m = mask(candidate.placement);
                    prop_assert_eq!(used & m, 0);
                    used |= m;
                    if let Some((_, complete)) = candidate.existing {
                        kept.0 += 1;
                        kept.1 += u32::from(complete);
                    }
                }
            }
            prop_assert_eq!(kept, score);
        }
    }
}

const A100: [&str; 7] = [
    "1g.5gb",
    "2g.10gb",
    "3g.20gb",
    "4g.20gb",
    "7g.40gb",
    "1g.5gb+me",
    "1g.10gb",
];
const H100: [&str; 7] = [
    "1g.10gb",
    "2g.20gb",
    "3g.40gb",
    "4g.40gb",
    "7g.80gb",
    "1g.10gb+me",
    "1g.20gb",
];

fn layout(names: &'static [&'static str]) -> impl Strategy<Value = Want> {
    prop::collection::vec((prop::sample::select(names.to_vec()), 0u32..4), 0..4).prop_map(|pairs| {
        let mut instances: Vec<(ProfileKey, u32)> = Vec::new();
        for (name, count) in pairs {
            let key = ProfileKey::Name(name.to_owned());
            if !instances.iter().any(|(known, _)| *known == key) {
                instances.push((key, count));
            }
        }
        Want::enabled(instances)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn a_gpu_already_as_wanted_gets_no_step(
        card in prop::sample::select(vec!["a100-mig-off", "a100-mig-on-carved", "a100-mig-on-none-carved"]),
        first in layout(&A100),
        second in layout(&A100),
    ) {
        let start = reply(card);
        // Carry out one layout, then another: whichever way the card got there, once it is as
        // a layout wants, that layout plans nothing.
        for want in [first, second] {
            let Ok(planned) = plan(&start, &want) else { continue };
            let applied = carry_out(&start, &planned);
            prop_assert!(differences(&applied, &want).is_empty(), "{:?}", differences(&applied, &want));
            let again = plan(&applied, &want).unwrap();
            prop_assert!(again.is_empty(), "{:?}", again);
            prop_assert!(plan(&applied, &Want::disabled()).unwrap().create.is_empty());
        }
    }

    #[test]
    fn on_an_h100_too_a_layout_carried_out_plans_nothing(want in layout(&H100)) {
        let start = reply("h100-mig-off");
        if let Ok(planned) = plan(&start, &want) {
            let applied = carry_out(&start, &planned);
            prop_assert!(plan(&applied, &want).unwrap().is_empty());
        }
    }

    #[test]
    fn a_plan_between_two_layouts_destroys_only_what_the_second_does_not_keep(
        first in layout(&A100),
        second in layout(&A100),
    ) {
        let start = reply("a100-mig-off");
        let Ok(one) = plan(&start, &first) else { return Ok(()) };
        let mid = carry_out(&start, &one);
        let Ok(two) = plan(&mid, &second) else { return Ok(()) };
        // Kept instances are untouched: none of them is destroyed, and they are in the target.
        for kept in &two.kept {
            for step in &two.destroy {
                let touches = matches!(step,
                    gpu_partition_types::Step::DestroyGpuInstance { gpu_instance_id }
                    | gpu_partition_types::Step::DestroyComputeInstance { gpu_instance_id, .. }
                    if gpu_instance_id == kept);
                prop_assert!(!touches, "{:?} destroys kept {}", step, kept);
            }
        }
        let end = carry_out(&mid, &two);
        prop_assert!(differences(&end, &second).is_empty());
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    let devices = prop_oneof![
        Just(Devices::All),
        prop::collection::vec(0u32..8, 0..4).prop_map(|v| {
            let mut listed: Vec<DeviceRef> = Vec::new();
            for i in v {
                if !listed.contains(&DeviceRef::Index(i)) {
                    listed.push(DeviceRef::Index(i));
                }
            }
            Devices::Listed(listed)
        }),
    ];
    let profiles = prop::collection::vec(("[1-7]g\\.[0-9]{1,2}gb(\\+me)?", 0u32..8), 0..4);
    (devices, any::<bool>(), profiles).prop_map(|(devices, enabled, profiles)| {
        let mut instances: Vec<(ProfileKey, u32)> = Vec::new();
        if enabled {
            for (name, count) in profiles {
                let key = ProfileKey::Name(name);
                if !instances.iter().any(|(k, _)| *k == key) {
                    instances.push((key, count));
                }
            }
        }
        Spec::new(devices, enabled, instances)
    })
}

fn same(a: &Document, b: &Document) -> bool {
    a.configs.len() == b.configs.len()
        && a.configs
            .iter()
            .zip(&b.configs)
            .all(|((la, sa), (lb, sb))| {
                la == lb
                    && sa.len() == sb.len()
                    && sa.iter().zip(sb).all(|(x, y)| {
                        x.devices == y.devices
                            && x.mig_enabled == y.mig_enabled
                            && x.mig_devices == y.mig_devices
                            && x.device_filter == y.device_filter
                    })
            })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn a_written_document_reads_back_equal(configs in prop::collection::vec(("[a-z][a-z0-9.+-]{0,12}", prop::collection::vec(spec(), 1..4)), 1..4)) {
        let mut labels: Vec<(String, Vec<Spec>)> = Vec::new();
        for (label, specs) in configs {
            if !labels.iter().any(|(known, _)| *known == label) {
                labels.push((label, specs));
            }
        }
        let doc = Document::new(labels);
        let text = to_yaml(&doc);
        let again = Document::from_text(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(same(&doc, &again), "{}", text);
    }

    #[test]
    fn a_mutated_document_never_panics_and_every_refusal_names_its_line(
        cut in 0usize..1100,
        byte in any::<u8>(),
        insert in any::<bool>(),
    ) {
        let text = std::fs::read(common::data("mig-parted/mig-parted-examples-config.yaml")).unwrap();
        let mut mutated = text.clone();
        let at = cut.min(mutated.len());
        if insert { mutated.insert(at, byte) } else if at < mutated.len() { mutated[at] = byte }
        let Ok(text) = String::from_utf8(mutated) else { return Ok(()) };
        if let Err(error) = Document::from_text(&text) {
            prop_assert!(error.line.is_some(), "{}", error);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The fuzz target `layout_reader`'s promise, on stable and in every test run: whatever
    /// names a document carries (any characters, up to past YAML's 1,024-character bound on an
    /// implicit key), one the reader takes is written as YAML and JSON that read back alike.
    #[test]
    fn any_names_the_reader_takes_are_written_so_that_they_read_back_alike(
        label in prop::collection::vec(any::<char>(), 1..1200).prop_map(String::from_iter),
        profile in prop::collection::vec(any::<char>(), 1..1200).prop_map(String::from_iter),
        raw in any::<bool>(),
    ) {
        // Written as the reader's input with explicit keys (`? key`, then `: value`), which
        // have no bound on their length, raw inside double quotes or escaped as JSON is.
        let name = |s: &str| if raw { format!("\"{s}\"") } else { serde_json::to_string(s).unwrap() };
        let text = format!(
            "version: v1\nmig-configs:\n  ? {}\n  :\n    - devices: all\n      mig-enabled: true\n      \
             mig-devices:\n        ? {}\n        : 1\n",
            name(&label),
            name(&format!("1g.{profile}"))
        );
        let Ok(doc) = Document::from_text(&text) else { return Ok(()) };
        let yaml = to_yaml(&doc);
        let again = Document::from_text(&yaml).map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
        prop_assert!(same(&doc, &again), "{}", yaml);
        let json = to_json(&doc).to_string();
        let again = Document::from_text(&json).map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
        prop_assert!(same(&doc, &again), "{}", json);
    }
}
