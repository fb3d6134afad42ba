//! Criterion benchmarks live beside this file as `[[bench]]` targets; see `Cargo.toml`.
