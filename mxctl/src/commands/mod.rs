//! One module per command.

pub mod reply_check;
