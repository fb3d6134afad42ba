//! [`Board`]: the board in a slot, as the card's reply names it, and how another board differs
//! from the one declared there ([`BoardChange`]): another model first, then the serial, else the
//! UUID.

use gpu_partition_types::{Lenient, Reply};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The board in a slot, as the card's reply names it (`card`, reply format 1.2); each part
/// `None` where the reply did not give it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Board {
    /// The model (`NVIDIA A100-SXM4-40GB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The board's serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The GPU's UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

gpu_partition_types::token_enum! {
    /// What told two boards of one model apart.
    pub enum BoardId: "board identity" {
        /// The board's serial number (when both sides have one).
        Serial = "serial",
        /// The GPU's UUID (when a serial is not known on both sides).
        Uuid = "uuid",
    }
}

/// How the board in a slot differs from the one declared there (a closed set: a board is of
/// the same model or not). Stored and printed with `change` (`other_model`, `other_board`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum BoardChange {
    /// A card of another model: its layout may not even exist on it.
    OtherModel {
        /// The model declared.
        declared: String,
        /// The model found.
        found: String,
    },
    /// Another board of the same model.
    OtherBoard {
        /// The model, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// What told them apart.
        by: BoardId,
        /// The declared board's serial or UUID.
        declared: String,
        /// The found board's.
        found: String,
    },
}

impl fmt::Display for BoardChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherModel { declared, found } => {
                write!(
                    f,
                    "the layout was declared on an {declared}, and an {found} is here"
                )
            }
            Self::OtherBoard {
                model,
                by,
                declared,
                found,
            } => {
                let by = match by {
                    BoardId::Serial => "serial",
                    BoardId::Uuid => "UUID",
                };
                write!(
                    f,
                    "another board{} is here: {by} {found}, where the layout was declared on \
                     {by} {declared}",
                    model
                        .as_ref()
                        .map(|model| format!(" of the same model ({model})"))
                        .unwrap_or_default()
                )
            }
        }
    }
}

impl Board {
    /// A board known by these (a store builds it from its columns).
    pub fn new(model: Option<String>, serial: Option<String>, uuid: Option<String>) -> Self {
        Self {
            model,
            serial,
            uuid,
        }
    }

    /// The board a reply names (nothing where the reply gives no `card`).
    pub fn of(reply: &Reply) -> Board {
        let Lenient::Read(card) = &reply.card else {
            return Board::default();
        };
        Board {
            model: card.name.read().cloned(),
            serial: card
                .serial
                .read()
                .and_then(|serial| serial.as_option().cloned()),
            uuid: card.uuid.read().cloned(),
        }
    }

    /// How `found` differs from this (declared) board: another model; else another board of
    /// the same model by the serial when both sides have one, else by the UUID; `None` when it
    /// is the same board or nothing known tells them apart.
    pub fn change(&self, found: &Board) -> Option<BoardChange> {
        if let (Some(declared), Some(seen)) = (&self.model, &found.model) {
            if declared != seen {
                return Some(BoardChange::OtherModel {
                    declared: declared.clone(),
                    found: seen.clone(),
                });
            }
        }
        let (by, declared, seen) = match (&self.serial, &found.serial) {
            (Some(declared), Some(seen)) => (BoardId::Serial, declared, seen),
            _ => match (&self.uuid, &found.uuid) {
                (Some(declared), Some(seen)) => (BoardId::Uuid, declared, seen),
                _ => return None,
            },
        };
        (declared != seen).then(|| BoardChange::OtherBoard {
            model: self.model.clone().or_else(|| found.model.clone()),
            by,
            declared: declared.clone(),
            found: seen.clone(),
        })
    }
}
