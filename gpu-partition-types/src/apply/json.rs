//! Reading a JSON value member by member, naming each fault by its JSON Pointer: the strict
//! reader of an `apply` request and of an `apply` answer's envelope.

use crate::JsonPointer;
use serde_json::{Map, Value};

/// A fault in a document that is read strictly: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} refused at {:?}: {message}", pointer.to_string())]
#[non_exhaustive]
pub struct Refused {
    /// What was read (`the apply request`, `the apply answer`).
    pub what: &'static str,
    /// The member at fault (RFC 6901); the root (`""`) for bytes that are not one JSON object.
    pub pointer: JsonPointer,
    /// What was wrong.
    pub message: String,
}

/// The largest document read: a request of steps is a few kilobytes; an answer holds a reply.
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// Parses `input` as one JSON object (depth bounded by the parser, 128).
pub(crate) fn object(what: &'static str, input: &[u8]) -> Result<Map<String, Value>, Refused> {
    let at_root = |message: String| Refused {
        what,
        pointer: JsonPointer::root(),
        message,
    };
    if input.len() > MAX_BYTES {
        return Err(at_root(format!(
            "{} bytes, more than the {MAX_BYTES} read",
            input.len()
        )));
    }
    let text =
        std::str::from_utf8(input).map_err(|error| at_root(format!("not UTF-8: {error}")))?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(at_root(format!(
            "expected one JSON object, found {}",
            kind(&other)
        ))),
        Err(error) => Err(at_root(format!("not one JSON object: {error}"))),
    }
}

/// What a JSON value is, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// One object being read: its members are taken one by one, each named by its pointer.
pub(crate) struct Object<'a> {
    pub(crate) what: &'static str,
    pub(crate) at: JsonPointer,
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Object<'a> {
    pub(crate) fn refuse(&self, pointer: JsonPointer, message: impl Into<String>) -> Refused {
        Refused {
            what: self.what,
            pointer,
            message: message.into(),
        }
    }

    fn required(&self, name: &str) -> Result<&'a Value, Refused> {
        self.map
            .get(name)
            .ok_or_else(|| self.refuse(self.at.clone().member(name), "missing member"))
    }

    pub(crate) fn string(&self, name: &str) -> Result<&'a str, Refused> {
        match self.required(name)? {
            Value::String(text) => Ok(text),
            other => Err(self.refuse(
                self.at.clone().member(name),
                format!("expected a string, found {}", kind(other)),
            )),
        }
    }

    pub(crate) fn bool(&self, name: &str) -> Result<bool, Refused> {
        match self.required(name)? {
            Value::Bool(value) => Ok(*value),
            other => Err(self.refuse(
                self.at.clone().member(name),
                format!("expected true or false, found {}", kind(other)),
            )),
        }
    }

    /// A `u32`: a JSON integer in range (no fraction, no exponent, not a string).
    pub(crate) fn u32(&self, name: &str) -> Result<u32, Refused> {
        let value = self.required(name)?;
        u32_at(value).ok_or_else(|| {
            self.refuse(
                self.at.clone().member(name),
                format!("expected an integer from 0 to {}, found {value}", u32::MAX),
            )
        })
    }

    pub(crate) fn object(&self, name: &str) -> Result<Object<'a>, Refused> {
        match self.required(name)? {
            Value::Object(map) => Ok(Object {
                what: self.what,
                at: self.at.clone().member(name),
                map,
            }),
            other => Err(self.refuse(
                self.at.clone().member(name),
                format!("expected an object, found {}", kind(other)),
            )),
        }
    }

    pub(crate) fn list(&self, name: &str) -> Result<&'a [Value], Refused> {
        match self.required(name)? {
            Value::Array(items) => Ok(items),
            other => Err(self.refuse(
                self.at.clone().member(name),
                format!("expected a list, found {}", kind(other)),
            )),
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Refuses a member that is not one of `known` (a request says only what it means).
    pub(crate) fn only(&self, known: &[&str]) -> Result<(), Refused> {
        match self.map.keys().find(|name| !known.contains(&name.as_str())) {
            None => Ok(()),
            Some(name) => Err(self.refuse(
                self.at.clone().member(name),
                format!("unknown member; the members here are {}", known.join(", ")),
            )),
        }
    }
}

/// An element of a list, as an object.
pub(crate) fn element<'a>(
    what: &'static str,
    at: JsonPointer,
    value: &'a Value,
) -> Result<Object<'a>, Refused> {
    match value {
        Value::Object(map) => Ok(Object { what, at, map }),
        other => Err(Refused {
            what,
            pointer: at,
            message: format!("expected an object, found {}", kind(other)),
        }),
    }
}

fn u32_at(value: &Value) -> Option<u32> {
    match value {
        // `as_u64` is `None` for a negative number and for one with a fraction or an exponent
        // (serde_json reads those as floats).
        Value::Number(number) if !number.is_f64() => {
            number.as_u64().and_then(|n| u32::try_from(n).ok())
        }
        _ => None,
    }
}
