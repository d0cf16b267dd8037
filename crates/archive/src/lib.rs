//! # banco-archive
//!
//! The tamper-evident record of every round, for auditors and regulators. A table seals
//! each finished round into its own hash chain (see `banco_records::chain::Chain`); the
//! archive checks each link as it arrives ([`ingest`]), stores it with the table's record
//! verbatim ([`store`]), answers queries derived from that record ([`query`], [`stats`],
//! [`export`]) and walks the chain again on demand ([`verify`]).

pub mod checkpoints;
pub mod clips;
pub mod error;
pub mod export;
pub mod hexbytes;
pub mod ingest;
pub mod metrics;
pub mod packed;
pub mod query;
pub mod record;
pub mod serve;
pub mod service;
pub mod stats;
pub mod store;
pub mod verify;

pub use error::ArchiveError;
pub use ingest::TrustedKeys;
pub use metrics::ArchiveMetrics;
pub use serve::{ServeError, ServeOptions, serve};
pub use service::ArchiveServer;
pub use store::Appended;
pub use store::Store;
