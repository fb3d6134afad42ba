//! The answer of `apply`: one result per step, in order, and the card as a fresh read finds it
//! after them.

use super::json::{Object, Refused, element, object};
use super::step::Op;
use crate::write::Wire;
use crate::{Bdf, Enumerated, FormatVersion, JsonPointer, Reply};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

crate::token_enum! {
    /// Why a step was refused: NVML's answer, sorted.
    pub enum RefusalKind: "refusal kind" {
        /// Something uses what the step would change: a process or a handle on the card, a
        /// compute instance in the GPU instance, a vGPU on it (`NVML_ERROR_IN_USE`, or the
        /// activation status of a mode change).
        InUse = "in_use",
        /// No room: the placement is taken, or the profile has no instance left
        /// (`NVML_ERROR_INSUFFICIENT_RESOURCES`).
        InsufficientResources = "insufficient_resources",
        /// The card, its mode or its environment cannot do it: a create with MIG off, a card
        /// without MIG, a vGPU guest (`NVML_ERROR_NOT_SUPPORTED`).
        NotSupported = "not_supported",
        /// The helper may not change the card (`NVML_ERROR_NO_PERMISSION`).
        NoPermission = "no_permission",
        /// No such card, instance or profile (`NVML_ERROR_NOT_FOUND`).
        NotFound = "not_found",
        /// NVML refused the arguments: a profile the card does not have, a placement that is none
        /// of the profile's (`NVML_ERROR_INVALID_ARGUMENT`).
        InvalidArgument = "invalid_argument",
        /// The change needs a reset the helper cannot make here, a pass-through guest's reboot
        /// (`NVML_ERROR_RESET_REQUIRED` as the activation status).
        ResetRequired = "reset_required",
        /// Any other driver or NVML error.
        DriverError = "driver_error",
    }
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// It succeeded.
    Done {
        /// The GPU instance a `create_gpu_instance` made.
        gpu_instance_id: Option<u32>,
        /// The compute instance a `create_compute_instance` made.
        compute_instance_id: Option<u32>,
        /// A `set_mig_mode` whose change the card reports pending (until a GPU reset).
        pending: bool,
    },
    /// It failed; the steps after it were not run.
    Refused {
        /// Why (a kind this reader does not know is kept).
        kind: Enumerated<RefusalKind>,
        /// What NVML said, for people.
        message: String,
    },
    /// An earlier step failed, so it was not run.
    Skipped,
}

impl StepOutcome {
    /// A step that succeeded, with nothing to add.
    pub fn done() -> Self {
        Self::Done {
            gpu_instance_id: None,
            compute_instance_id: None,
            pending: false,
        }
    }

    /// The `result` token: `done`, `refused`, `skipped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Done { .. } => "done",
            Self::Refused { .. } => "refused",
            Self::Skipped => "skipped",
        }
    }
}

/// The result of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepResult {
    /// The step's `op`.
    pub op: Op,
    /// How it ended.
    pub outcome: StepOutcome,
}

impl StepResult {
    /// The result `outcome` of a step `op`.
    pub fn new(op: Op, outcome: StepOutcome) -> Self {
        Self { op, outcome }
    }
}

/// The result for people: `create_gpu_instance done: GPU instance 3`, `set_mig_mode done:
/// pending until a reset`, `destroy_gpu_instance refused (in_use): …`, `… skipped`.
impl std::fmt::Display for StepResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.op, self.outcome.as_str())?;
        match &self.outcome {
            StepOutcome::Done {
                gpu_instance_id: Some(id),
                ..
            } => write!(f, ": GPU instance {id}"),
            StepOutcome::Done {
                compute_instance_id: Some(id),
                ..
            } => write!(f, ": compute instance {id}"),
            StepOutcome::Done { pending: true, .. } => f.write_str(": pending until a reset"),
            StepOutcome::Done { .. } | StepOutcome::Skipped => Ok(()),
            StepOutcome::Refused { kind, message } => write!(f, " ({kind}): {message}"),
        }
    }
}

/// What `apply` answers: the results in the order of the steps, and the card read after them
/// (what `read` prints next).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyAnswer {
    /// The answer's format.
    pub format: FormatVersion,
    /// The card.
    pub device: Bdf,
    /// One result per step, in order.
    pub results: Vec<StepResult>,
    /// The card after the steps.
    pub reply: Reply,
}

const WHAT: &str = "the apply answer";

impl ApplyAnswer {
    /// The answer of these results and this reply (whose format and device it takes).
    pub fn new(results: Vec<StepResult>, reply: Reply) -> Self {
        Self {
            format: reply.format,
            device: reply.device,
            results,
            reply,
        }
    }

    /// Reads an answer for the card `asked`: `format` (major 1), `device` (the card asked for)
    /// and `results` strictly (a `kind` this reader does not know is kept, unknown members are
    /// ignored); `reply` as a reply of `read` is read, its faults named under `/reply`.
    pub fn from_json(input: &[u8], asked: &Bdf) -> Result<ApplyAnswer, Refused> {
        let map = object(WHAT, input)?;
        let answer = Object {
            what: WHAT,
            at: JsonPointer::root(),
            map: &map,
        };
        let format_text = answer.string("format")?;
        let format = format_text
            .parse::<FormatVersion>()
            .and_then(|format| format.check_supported().map(|()| format))
            .map_err(|error| {
                answer.refuse(JsonPointer::root().member("format"), error.to_string())
            })?;
        let device = Bdf::parse_canonical(answer.string("device")?)
            .ok()
            .filter(|device| device == asked)
            .ok_or_else(|| {
                answer.refuse(
                    JsonPointer::root().member("device"),
                    format!("expected the card asked for, {asked}"),
                )
            })?;
        let results = answer
            .list("results")?
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let at = JsonPointer::root().member("results").index(index);
                result(&element(WHAT, at, value)?)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let reply_object = answer.object("reply")?;
        let reply_text = serde_json::Value::Object(reply_object.map.clone()).to_string();
        let reply = Reply::from_json(reply_text.as_bytes(), Some(asked)).map_err(|refused| {
            let mut pointer = JsonPointer::root().member("reply");
            for token in refused.pointer.tokens() {
                pointer = match token {
                    crate::PointerToken::Member(name) => pointer.member(name),
                    crate::PointerToken::Index(index) => pointer.index(*index),
                };
            }
            answer.refuse(pointer, refused.message)
        })?;
        Ok(ApplyAnswer {
            format,
            device,
            results,
            reply,
        })
    }

    /// The answer as one line of JSON (the reply as `read` writes it whole), which reads back
    /// equal.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn optional_u32(object: &Object<'_>, name: &str) -> Result<Option<u32>, Refused> {
    if object.has(name) {
        object.u32(name).map(Some)
    } else {
        Ok(None)
    }
}

fn result(object: &Object<'_>) -> Result<StepResult, Refused> {
    let op = object
        .string("op")?
        .parse::<Op>()
        .map_err(|unknown| object.refuse(object.at.clone().member("op"), unknown.to_string()))?;
    let outcome = match object.string("result")? {
        "done" => StepOutcome::Done {
            gpu_instance_id: optional_u32(object, "gpu_instance_id")?,
            compute_instance_id: optional_u32(object, "compute_instance_id")?,
            pending: object.has("pending") && object.bool("pending")?,
        },
        "refused" => StepOutcome::Refused {
            kind: Enumerated::from_wire(object.string("kind")?),
            message: object.string("message")?.to_owned(),
        },
        "skipped" => StepOutcome::Skipped,
        other => {
            return Err(object.refuse(
                object.at.clone().member("result"),
                format!("{other:?} is not done, refused or skipped"),
            ));
        }
    };
    Ok(StepResult { op, outcome })
}

impl Serialize for StepResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("op", &self.op)?;
        map.serialize_entry("result", self.outcome.as_str())?;
        match &self.outcome {
            StepOutcome::Done {
                gpu_instance_id,
                compute_instance_id,
                pending,
            } => {
                if let Some(id) = gpu_instance_id {
                    map.serialize_entry("gpu_instance_id", id)?;
                }
                if let Some(id) = compute_instance_id {
                    map.serialize_entry("compute_instance_id", id)?;
                }
                if *pending {
                    map.serialize_entry("pending", &true)?;
                }
            }
            StepOutcome::Refused { kind, message } => {
                map.serialize_entry("kind", kind)?;
                map.serialize_entry("message", message)?;
            }
            StepOutcome::Skipped => {}
        }
        map.end()
    }
}

impl Serialize for ApplyAnswer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Results<'a>(&'a [StepResult]);
        impl Serialize for Results<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut list = serializer.serialize_seq(Some(self.0.len()))?;
                for result in self.0 {
                    list.serialize_element(result)?;
                }
                list.end()
            }
        }
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("format", &self.format)?;
        map.serialize_entry("device", &self.device)?;
        map.serialize_entry("results", &Results(&self.results))?;
        map.serialize_entry(
            "reply",
            &Wire {
                reply: &self.reply,
                page: None,
            },
        )?;
        map.end()
    }
}
