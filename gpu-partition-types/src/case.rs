//! What the helper found on the card: `case`, and `unreadable` when it could not read it.

use crate::read::{Decode, Fault, Field, Path, known};

crate::token_enum! {
    /// `case`: what the helper found.
    pub enum Case: "case" {
        /// MIG capable, and at least one GPU instance exists.
        Partitions = "partitions",
        /// MIG capable, no GPU instance (MIG mode on or off).
        NoneCarved = "none_carved",
        /// The helper could not read the card; `unreadable` says why.
        Unreadable = "unreadable",
        /// The card cannot be partitioned.
        NotApplicable = "not_applicable",
    }
}

crate::record::record! {
    /// `unreadable`: why the helper could not read the card.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Unreadable: "an unreadable object", check = non_empty_kind {
        /// An open token (`busy`, `driver_error`, `permission_denied`, …); the read's reason
        /// becomes `helper:<kind>`.
        kind: required String = "kind",
        /// For people and logs (lenient).
        message: lenient String = "message",
    }
}

/// `kind` is an open token, but not an empty one.
fn non_empty_kind(unreadable: &Unreadable, at: &Path<'_>) -> Field<()> {
    if unreadable.kind.is_empty() {
        return Err(Fault::new(
            &at.member("kind"),
            crate::Problem::Invalid,
            "empty kind",
        ));
    }
    Ok(())
}

impl Decode for Case {
    const EXPECTED: &'static str = "a case string";

    fn from_str(text: &str, at: &Path<'_>) -> Field<Self> {
        known(text, at)
    }
}
