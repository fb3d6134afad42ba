//! A YAML node with its place: the line it starts on and its JSON Pointer, and the typed reads
//! the reader needs, each failing with a [`LayoutError`] that names both.

use super::error::LayoutError;
use gpu_partition_types::JsonPointer;
use saphyr::{MarkedYaml, Scalar, YamlData};

/// A node of the document and where it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node<'n, 'i> {
    pub yaml: &'n MarkedYaml<'i>,
    pub at: &'n JsonPointer,
}

/// A mapping entry: its key as the document wrote it and as text, the key's line, where the
/// value is (the mapping's pointer and this member), the value.
pub(crate) struct Entry<'n, 'i> {
    pub key: Key,
    pub name: String,
    pub line: usize,
    pub at: JsonPointer,
    pub value: &'n MarkedYaml<'i>,
}

impl<'i> Entry<'_, 'i> {
    /// The value, where it is.
    pub fn node(&self) -> Node<'_, 'i> {
        Node::new(self.value, &self.at)
    }

    /// This entry is no member its mapping has: `has` says what the mapping has (`an entry
    /// has `devices` and …`).
    pub fn unexpected(&self, has: &str) -> LayoutError {
        self.refuse(format!("unexpected member {:?}: {has}", self.name))
    }

    /// A refusal of this entry, named at its key's line and its pointer.
    pub fn refuse(&self, message: impl Into<String>) -> LayoutError {
        LayoutError::new(Some(self.line), self.at.clone(), message)
    }
}

/// A mapping key as the document wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// A string key (quoted or plain).
    Text(String),
    /// An integer key (`19:`).
    Integer(i64),
}

impl Key {
    /// The key as text (an integer in decimal).
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Integer(number) => number.to_string(),
        }
    }
}

impl<'n, 'i> Node<'n, 'i> {
    pub fn new(yaml: &'n MarkedYaml<'i>, at: &'n JsonPointer) -> Self {
        Self { yaml, at }
    }

    /// The line the node starts on (1-based).
    pub fn line(&self) -> usize {
        self.yaml.span.start.line()
    }

    /// An error at this node.
    pub fn refuse(&self, message: impl Into<String>) -> LayoutError {
        LayoutError::new(Some(self.line()), self.at.clone(), message)
            .column(self.yaml.span.start.col() + 1)
    }

    /// What the node is, for messages: `a list`, `the string "yes"`, `the number 7`.
    pub fn describe(&self) -> String {
        describe(self.yaml)
    }

    /// The entries of a mapping, in the document's order.
    pub fn mapping(&self, what: &str) -> Result<Vec<Entry<'n, 'i>>, LayoutError> {
        let YamlData::Mapping(map) = &self.yaml.data else {
            return Err(self.refuse(format!("{what} must be a mapping, not {}", self.describe())));
        };
        map.iter()
            .map(|(key, value)| {
                let line = key.span.start.line();
                let key = match &key.data {
                    YamlData::Value(Scalar::String(text)) => Key::Text(text.to_string()),
                    YamlData::Value(Scalar::Integer(number)) => Key::Integer(*number),
                    _ => {
                        return Err(LayoutError::new(
                            Some(line),
                            self.at.clone(),
                            format!("a key of {what} must be a string, not {}", describe(key)),
                        ));
                    }
                };
                let name = key.text();
                let at = self.at.clone().member(&name);
                Ok(Entry {
                    key,
                    name,
                    line,
                    at,
                    value,
                })
            })
            .collect()
    }

    /// The elements of a list.
    pub fn sequence(&self, what: &str) -> Result<&'n [MarkedYaml<'i>], LayoutError> {
        match &self.yaml.data {
            YamlData::Sequence(items) => Ok(items),
            _ => Err(self.refuse(format!("{what} must be a list, not {}", self.describe()))),
        }
    }

    /// A boolean (`true` or `false`).
    pub fn boolean(&self, what: &str) -> Result<bool, LayoutError> {
        match &self.yaml.data {
            YamlData::Value(Scalar::Boolean(value)) => Ok(*value),
            _ => Err(self.refuse(format!(
                "{what} must be true or false, not {}",
                self.describe()
            ))),
        }
    }

    /// A string.
    pub fn string(&self, what: &str) -> Result<&'n str, LayoutError> {
        match &self.yaml.data {
            YamlData::Value(Scalar::String(text)) => Ok(text),
            _ => Err(self.refuse(format!("{what} must be a string, not {}", self.describe()))),
        }
    }

    /// Whether the node is `null` (an empty value, `~`, `null`).
    pub fn is_null(&self) -> bool {
        matches!(self.yaml.data, YamlData::Value(Scalar::Null))
    }

    /// A whole number from 0 to `u32::MAX`.
    pub fn count(&self, what: &str) -> Result<u32, LayoutError> {
        match &self.yaml.data {
            YamlData::Value(Scalar::Integer(number)) => u32::try_from(*number).map_err(|_| {
                self.refuse(format!(
                    "{what} must be a whole number from 0 to {}, not {number}",
                    u32::MAX
                ))
            }),
            _ => Err(self.refuse(format!(
                "{what} must be a whole number, not {}",
                self.describe()
            ))),
        }
    }
}

fn describe(yaml: &MarkedYaml<'_>) -> String {
    match &yaml.data {
        YamlData::Value(Scalar::Null) => "null (an empty value)".to_owned(),
        YamlData::Value(Scalar::Boolean(value)) => format!("{value}"),
        YamlData::Value(Scalar::Integer(number)) => format!("the number {number}"),
        YamlData::Value(Scalar::FloatingPoint(number)) => format!("the number {number}"),
        YamlData::Value(Scalar::String(text)) => format!("the string {text:?}"),
        YamlData::Sequence(_) => "a list".to_owned(),
        YamlData::Mapping(_) => "a mapping".to_owned(),
        YamlData::Tagged(tag, _) => format!("a value tagged {tag}"),
        YamlData::Representation(text, ..) => format!("{text:?}"),
        YamlData::Alias(_) | YamlData::BadValue => "a value that does not read".to_owned(),
    }
}
