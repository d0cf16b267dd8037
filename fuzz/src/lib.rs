//! The invariants behind the fuzz targets of banco's parsers above the rules, as plain
//! functions: libFuzzer drives them through `fuzz_targets/` (nightly, `cargo fuzz run
//! tokens`), and the end-to-end crate's `fuzz_seeds` test includes these files and feeds
//! them the committed seeds (`seeds/<target>/`) and variations of them on stable.
//!
//! Each module is self-contained (no `crate::` paths), so that it can be included by path.

pub mod bets;
pub mod config;
pub mod scanner;
pub mod service_config;
pub mod tokens;
