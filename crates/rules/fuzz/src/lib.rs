//! The invariants behind the fuzz targets, as plain functions: libFuzzer drives them
//! through `fuzz_targets/` (nightly, `cargo fuzz run card`), and banco-rules' own tests
//! include these files and feed them a seeded corpus on stable, so that a normal
//! `cargo test` checks the same invariants.

pub mod card;
pub mod hand;
