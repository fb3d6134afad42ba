//! Where the reader is, kept on the stack and turned into a [`JsonPointer`] only on a fault.

use crate::{JsonPointer, pointer::PointerToken};

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Root,
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
        step: Step::Root,
    };

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
                Step::Root => {}
                Step::Member(name) => tokens.push(PointerToken::Member(name.to_owned())),
                Step::Index(index) => tokens.push(PointerToken::Index(index)),
            }
            here = path.parent;
        }
        tokens.reverse();
        JsonPointer::from_tokens(tokens)
    }
}
