//! [`ParseError`]: output of `mx-smi` that does not read (the type every parser of another
//! program's output shares: [`crate::parse_error`]).

pub(crate) use crate::parse_error::ParseError;
