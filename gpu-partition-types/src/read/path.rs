//! Where the reader is, kept on the stack and turned into a [`JsonPointer`] only on a fault.

use crate::{JsonPointer, JsonType, UnknownMember, pointer::PointerToken};
use std::cell::RefCell;

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    /// The whole document, with where the members it does not know are listed (none: they
    /// are skipped without a trace, as when strict members are checked after the pass).
    Root(Option<&'a RefCell<Vec<UnknownMember>>>),
    Member(&'a str),
    Index(usize),
}

/// The reader's position: a chain of steps borrowed from the callers' stack frames.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    step: Step<'a>,
}

impl<'a> Path<'a> {
    /// The whole document.
    pub(crate) const ROOT: Path<'static> = Path {
        parent: None,
        step: Step::Root(None),
    };

    /// The whole document, listing the members the reader does not know into `unknown`.
    pub(crate) fn listing(unknown: &'a RefCell<Vec<UnknownMember>>) -> Path<'a> {
        Path {
            parent: None,
            step: Step::Root(Some(unknown)),
        }
    }

    /// Notes that the object here holds a member `name` the reader does not know.
    pub(crate) fn unknown(&self, name: &str, kind: JsonType) {
        let mut here = self;
        while let Some(parent) = here.parent {
            here = parent;
        }
        if let Step::Root(Some(unknown)) = here.step {
            unknown.borrow_mut().push(UnknownMember {
                pointer: self.member(name).pointer(),
                kind,
            });
        }
    }

    /// The member `name` of the object here.
    pub(crate) fn member(&'a self, name: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            step: Step::Member(name),
        }
    }

    /// The element `index` of the list here.
    pub(crate) fn index(&'a self, index: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            step: Step::Index(index),
        }
    }

    /// This position as a JSON Pointer.
    pub(crate) fn pointer(&self) -> JsonPointer {
        let mut tokens = Vec::new();
        let mut here = Some(self);
        while let Some(path) = here {
            match path.step {
                Step::Root(_) => {}
                Step::Member(name) => tokens.push(PointerToken::Member(name.to_owned())),
                Step::Index(index) => tokens.push(PointerToken::Index(index)),
            }
            here = path.parent;
        }
        tokens.reverse();
        JsonPointer::from_tokens(tokens)
    }
}
