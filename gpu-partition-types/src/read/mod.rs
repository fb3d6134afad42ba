//! The reader: one pass over the text into the reply's types, lenient where the protocol allows
//! it, strict elsewhere, with every fault named by JSON Pointer.

mod decode;
mod fault;
mod path;
mod stream;
mod values;

pub(crate) use decode::{At, Decode, members, required, value};
pub(crate) use fault::{Fault, Field, Found};
pub(crate) use path::Path;
pub(crate) use stream::objects;
pub(crate) use values::{known, lenient};
