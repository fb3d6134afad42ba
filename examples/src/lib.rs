//! Example programs live beside this file as `[[example]]` targets; see `Cargo.toml`.
