//! The declaration: the board's precedence, its drift, the merge of two, and whether the cards
//! hold it now — across boots, with unread GPUs, after a write of ours, after a lapse.

use crate::common::{BOARD, Board as TestBoard, TestCard, balanced, balanced_placed, device};
use gpu_host_probe::{Boot, CardWrite, CardWrites, Ledger, Now, WriteMark, Writer};
use gpu_partition_types::{Bdf, Token};
use layout_model::{
    Board, BoardChange, BoardId, Declaration, DifferenceKind, Fact, Holding, HoldingState, Lapse,
    LapseReason, LayoutCheck, NvidiaDeclared, Unchecked,
};
use std::collections::BTreeMap;

fn board(model: Option<&str>, serial: Option<&str>, uuid: Option<&str>) -> Board {
    Board::new(
        model.map(str::to_owned),
        serial.map(str::to_owned),
        uuid.map(str::to_owned),
    )
}

#[test]
fn another_model_is_named_before_the_serial_or_the_uuid() {
    let declared = board(Some("NVIDIA A100-SXM4-40GB"), Some("1"), Some("GPU-a"));
    let found = board(Some("NVIDIA H100 80GB HBM3"), Some("2"), Some("GPU-b"));
    assert_eq!(
        declared.change(&found),
        Some(BoardChange::OtherModel {
            declared: "NVIDIA A100-SXM4-40GB".into(),
            found: "NVIDIA H100 80GB HBM3".into()
        })
    );
}

#[test]
fn the_serial_tells_two_boards_of_a_model_apart_when_both_have_one_else_the_uuid() {
    let model = Some("NVIDIA A100-SXM4-40GB");
    let by_serial =
        board(model, Some("1"), Some("GPU-a")).change(&board(model, Some("2"), Some("GPU-a")));
    assert!(
        matches!(
            by_serial,
            Some(BoardChange::OtherBoard {
                by: BoardId::Serial,
                ..
            })
        ),
        "{by_serial:?}"
    );
    // The same serial and another UUID: the serial decides, and it is the same board.
    assert_eq!(
        board(model, Some("1"), Some("GPU-a")).change(&board(model, Some("1"), Some("GPU-b"))),
        None
    );
    let by_uuid = board(model, None, Some("GPU-a")).change(&board(model, Some("2"), Some("GPU-b")));
    assert!(
        matches!(
            by_uuid,
            Some(BoardChange::OtherBoard {
                by: BoardId::Uuid,
                ..
            })
        ),
        "{by_uuid:?}"
    );
    assert_eq!(
        board(model, None, None).change(&board(model, Some("2"), None)),
        None
    );
}

fn declared_gpu() -> NvidiaDeclared {
    NvidiaDeclared::new(
        &balanced_placed(),
        board(Some(BOARD.name), BOARD.serial, Some(BOARD.uuid)),
    )
}

#[test]
fn a_declared_gpu_keeps_every_placed_instance_and_its_card_has_no_drift() {
    let gpu = declared_gpu();
    assert_eq!(gpu.instances.as_ref().map(Vec::len), Some(4));
    assert_eq!(
        gpu.drift(&TestCard::on(balanced()).reply(), None)
            .differences,
        []
    );
}

#[test]
fn another_board_in_the_slot_is_drift_named_first() {
    let mut card = TestCard::on(balanced());
    card.board = TestBoard {
        serial: Some("1564720004632"),
        ..BOARD
    };
    let found = declared_gpu().drift(&card.reply(), None).differences;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind(), DifferenceKind::Board);
}

#[test]
fn a_later_declaration_replaces_the_gpus_it_names_keeps_the_others_and_counts_a_generation() {
    let first = Declaration::new(
        "all-balanced",
        10,
        None,
        BTreeMap::from([
            (Bdf::on_bus(1), declared_gpu().into()),
            (Bdf::on_bus(2), declared_gpu().into()),
        ]),
    );
    assert_eq!(first.generation, 1);
    let second = Declaration::new(
        "leave-gpu-2",
        20,
        Some(&first),
        BTreeMap::from([(
            Bdf::on_bus(2),
            NvidiaDeclared::disabled(Board::default()).into(),
        )]),
    );
    assert_eq!(second.generation, 2);
    // Declaring again what is declared (a restore) keeps the generation.
    let again = Declaration::new("leave-gpu-2", 30, Some(&second), BTreeMap::new());
    assert_eq!(again.generation, 2);
    assert_eq!(second.label, "leave-gpu-2");
    assert!(second.gpus[&Bdf::on_bus(1)].is_divided());
    assert!(!second.gpus[&Bdf::on_bus(2)].is_divided());
    assert_eq!(second.check, None);
}

const BOOT: &str = "5a3c9f0e-8a1b-4c2d-9e7f-0123456789ab";

fn boot() -> Boot {
    Boot::new(Some(BOOT.into()), Some(1_767_225_600))
}

fn ledger(seq: u64, written: &[(Bdf, u64)]) -> Ledger {
    Ledger::Read(CardWrites::new(
        "a",
        seq,
        written
            .iter()
            .map(|(device, seq)| {
                let by = Writer::WarmReset {
                    method: "nvidia".into(),
                };
                (*device, CardWrite::new(*seq, by, 1_767_229_300_000))
            })
            .collect(),
        None,
    ))
}

fn checked(differences: Vec<layout_model::Difference>, unread: Vec<Bdf>) -> Declaration {
    let mut declared = Declaration::new(
        "all-balanced",
        10,
        None,
        BTreeMap::from([(device(), declared_gpu().into())]),
    );
    declared.checked(LayoutCheck::new(
        1_767_229_200,
        boot(),
        Some(WriteMark::new(Some("a".into()), 3)),
        differences,
        unread,
    ));
    declared
}

fn now(writes: Ledger) -> Now {
    Now::new(boot(), writes)
}

#[test]
fn a_check_of_this_boot_with_nothing_written_since_holds() {
    assert_eq!(
        checked(vec![], vec![]).holding(&now(ledger(3, &[]))),
        Holding::Holds
    );
}

#[test]
fn a_check_that_found_differences_is_drifted_with_them() {
    let gone = layout_model::Difference::new(device(), Fact::GpuGone);
    let holding = checked(vec![gone.clone()], vec![]).holding(&now(ledger(3, &[])));
    assert_eq!(holding, Holding::Drifted(vec![gone]));
    assert_eq!(holding.state(), HoldingState::Drifted);
}

#[test]
fn a_check_of_an_earlier_boot_says_nothing_and_one_that_cannot_be_told_apart_neither() {
    let declared = checked(vec![], vec![]);
    let later = Now::new(Boot::new(Some("another".into()), None), ledger(3, &[]));
    assert_eq!(
        declared.holding(&later),
        Holding::Unknown(Unchecked::EarlierBoot)
    );
    let untold = Now::new(Boot::default(), ledger(3, &[]));
    assert_eq!(
        declared.holding(&untold),
        Holding::Unknown(Unchecked::BootUntold)
    );
}

#[test]
fn a_declared_gpu_not_read_is_unknown_naming_it_not_holding() {
    assert_eq!(
        checked(vec![], vec![device()]).holding(&now(ledger(3, &[]))),
        Holding::Unknown(Unchecked::Unread(vec![device()]))
    );
}

#[test]
fn a_write_of_ours_to_a_declared_gpu_after_the_check_ends_it_naming_what_wrote() {
    let holding = checked(vec![], vec![]).holding(&now(ledger(4, &[(device(), 4)])));
    let Holding::Unknown(Unchecked::WrittenSince(writes)) = &holding else {
        panic!("{holding:?}");
    };
    assert_eq!(writes[0].device, Some(device()));
    assert!(
        holding.to_string().contains("a warm reset (nvidia)"),
        "{holding}"
    );
    // A write before the check, or to another GPU, does not.
    assert_eq!(
        checked(vec![], vec![]).holding(&now(ledger(4, &[(device(), 3), (Bdf::on_bus(9), 4)]))),
        Holding::Holds
    );
}

#[test]
fn a_drift_found_before_a_write_is_not_known_after_it() {
    let gone = layout_model::Difference::new(device(), Fact::GpuGone);
    assert_eq!(
        checked(vec![gone], vec![])
            .holding(&now(ledger(4, &[(device(), 4)])))
            .state(),
        HoldingState::Unknown
    );
}

#[test]
fn a_record_of_writes_that_does_not_read_or_was_made_anew_cannot_tell() {
    let declared = checked(vec![], vec![]);
    for writes in [
        Ledger::Unreadable {
            path: "/run/gpu-host-probe/sys.writes".into(),
            why: "torn".into(),
        },
        Ledger::Empty,
        Ledger::Read(CardWrites::new("b", 1, BTreeMap::new(), None)),
    ] {
        assert!(
            matches!(
                declared.holding(&now(writes.clone())),
                Holding::Unknown(Unchecked::WritesUntold(_))
            ),
            "{writes:?}"
        );
    }
}

#[test]
fn a_sync_with_the_pool_off_after_the_check_makes_it_unknown_until_one_reads_again() {
    let mut declared = checked(vec![], vec![]);
    declared.lapse(Lapse::new(1_767_229_400, LapseReason::PoolDisabled));
    let holding = declared.holding(&now(ledger(3, &[])));
    assert!(
        matches!(holding, Holding::Unknown(Unchecked::Lapsed(_))),
        "{holding:?}"
    );
    assert_eq!(
        holding.unchecked().map(|why| why.kind().as_str()),
        Some("lapsed")
    );
    declared.checked(LayoutCheck::new(
        1_767_229_500,
        boot(),
        Some(WriteMark::new(Some("a".into()), 3)),
        vec![],
        vec![],
    ));
    assert_eq!(declared.holding(&now(ledger(3, &[]))), Holding::Holds);
}

#[test]
fn a_declaration_never_checked_is_unknown() {
    let declared = Declaration::new(
        "all-balanced",
        10,
        None,
        BTreeMap::from([(device(), declared_gpu().into())]),
    );
    assert_eq!(
        declared.holding(&now(Ledger::Empty)),
        Holding::Unknown(Unchecked::NotChecked)
    );
}
