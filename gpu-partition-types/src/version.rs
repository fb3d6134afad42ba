//! The version reply: which commands and formats a helper serves.

use crate::read;
use crate::{FormatVersion, RefusedReply, SUPPORTED_MAJOR};

crate::record::record! {
    /// The reply to `HELPER --version`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct VersionReply: "a version reply object" {
        /// The helper's name (lenient).
        helper: lenient String = "helper",
        /// The helper's own version (lenient).
        version: lenient String = "version",
        /// The commands served, with their formats. Unknown commands are kept and ignored.
        commands: required Vec<Command> = "commands",
    }
}

crate::record::record! {
    /// One command a helper serves.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Command: "a command object" {
        /// The command's name, e.g. `read`.
        name: required String = "name",
        /// The formats it can write.
        formats: required Vec<FormatVersion> = "formats",
    }
}

/// The helper serves no format of a command (`read`, `apply`) that this reader can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the helper serves no `{command}` format with major {SUPPORTED_MAJOR} (it lists: {offered})"
)]
#[non_exhaustive]
pub struct Incompatible {
    /// The command.
    pub command: String,
    /// The `read` formats the helper listed, comma separated (empty when none).
    pub offered: String,
}

impl VersionReply {
    /// Reads a version reply: one JSON object. `commands` and each entry's `name` and `formats`
    /// are strict; `helper` and `version` lenient; unknown members are ignored.
    pub fn from_json(input: &[u8]) -> Result<Self, RefusedReply> {
        let mut documents = read::objects::<VersionReply>(input)?;
        if documents.len() > 1 {
            return Err(RefusedReply::new(
                crate::JsonPointer::root(),
                crate::Problem::Invalid,
                format!("expected one JSON object, found {}", documents.len()),
            ));
        }
        match documents.pop() {
            Some(reply) => Ok(reply.value?),
            None => Err(RefusedReply::at_root("empty: no JSON object")),
        }
    }

    /// The `read` format to ask for: the highest minor of major [`SUPPORTED_MAJOR`] listed.
    pub fn negotiate_read(&self) -> Result<FormatVersion, Incompatible> {
        self.negotiate("read")
    }

    /// The format of `command` (`read`, `apply`) to ask for: the highest minor of major
    /// [`SUPPORTED_MAJOR`] the helper lists for it.
    pub fn negotiate(&self, command: &str) -> Result<FormatVersion, Incompatible> {
        let offered: Vec<FormatVersion> = self
            .commands
            .iter()
            .filter(|listed| listed.name == command)
            .flat_map(|command| command.formats.iter().copied())
            .collect();
        offered
            .iter()
            .copied()
            .filter(|format| format.check_supported().is_ok())
            .max()
            .ok_or_else(|| Incompatible {
                command: command.to_owned(),
                offered: offered
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<VersionReply, RefusedReply> {
        VersionReply::from_json(text.as_bytes())
    }

    #[test]
    fn the_protocol_example_negotiates_the_highest_minor_of_major_one() {
        let reply = read(
            r#"{"helper": "gpu-partition-helper", "version": "1.2.0",
                "commands": [{"name": "read", "formats": ["1.0", "1.1"]}]}"#,
        );
        assert_eq!(
            reply.map(|r| r.negotiate_read()),
            Ok(Ok(FormatVersion::new(1, 1)))
        );
    }

    #[test]
    fn a_helper_listing_only_format_two_is_incompatible() {
        let reply = read(r#"{"commands": [{"name": "read", "formats": ["2.0"]}]}"#);
        let negotiated = reply.map(|r| r.negotiate_read().map_err(|e| e.offered));
        assert_eq!(negotiated, Ok(Err("2.0".to_owned())));
    }

    #[test]
    fn unknown_commands_and_members_are_ignored() {
        let reply = read(
            r#"{"commands": [{"name": "write", "formats": ["9.0"], "x": 1},
                             {"name": "read", "formats": ["1.3"]}], "later": {"a": [1]}}"#,
        );
        assert_eq!(
            reply.map(|r| r.negotiate_read()),
            Ok(Ok(FormatVersion::new(1, 3)))
        );
    }

    #[test]
    fn helper_and_version_are_lenient() {
        let reply = read(r#"{"helper": 7, "commands": []}"#);
        let lost: Vec<String> = reply
            .map(|r| {
                [r.helper.lost(), r.version.lost()]
                    .into_iter()
                    .flatten()
                    .map(|lost| lost.pointer.to_string())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(lost, ["/helper", "/version"]);
    }

    #[test]
    fn a_missing_commands_member_refuses_the_reply() {
        let refused = read(r#"{"helper": "h"}"#)
            .err()
            .map(|e| e.pointer.to_string());
        assert_eq!(refused.as_deref(), Some("/commands"));
    }

    #[test]
    fn a_command_without_formats_refuses_the_reply_at_that_entry() {
        let refused = read(r#"{"commands": [{"name": "read"}]}"#)
            .err()
            .map(|e| e.pointer.to_string());
        assert_eq!(refused.as_deref(), Some("/commands/0/formats"));
    }

    #[test]
    fn a_malformed_format_refuses_the_reply() {
        let refused = read(r#"{"commands": [{"name": "read", "formats": ["1"]}]}"#)
            .err()
            .map(|e| e.pointer.to_string());
        assert_eq!(refused.as_deref(), Some("/commands/0/formats/0"));
    }
}
