//! One module per command.

pub mod probe;
pub mod reply_check;
