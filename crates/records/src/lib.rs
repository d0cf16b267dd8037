//! The stored formats banco writes once and must read for ever: what a table signs and
//! the archive keeps, and the ids they carry. The table and the archive both depend on
//! this crate, and neither on the other, so that a change in either cannot change what
//! is stored without a change here.
//!
//! - the **round record** ([`round::FinishedRound`], format [`ROUND_RECORD_VERSION`]): its
//!   canonical JSON is what every round's hash and signature are over;
//! - the **chain** ([`chain`]): a sealed round's place in its table's hash chain
//!   ([`chain::SealedRound`], also the line format of a broadcaster's `outbox.jsonl`), the
//!   seal of a round's clip, and checkpoints of the chain's head;
//! - the **journal** ([`journal`], format [`journal::JOURNAL_FORMAT`]): each record of a
//!   table's journal, the commands a restart replays;
//! - the **ids** ([`ShoeId`], [`RoundId`], [`TxId`]).
//!
//! Every type here is a format: renaming, reordering or re-typing a field changes the
//! bytes a signature was over, or that a restart must replay. The golden files in
//! `tests/golden/` were written by version 1 and must parse, re-encode and verify byte for
//! byte in every later version; a new format gets a new version beside the old one, never
//! a change to it.

pub mod chain;
pub mod hex;
mod ids;
pub mod journal;
pub mod round;

pub use ids::{RoundId, ShoeId, ShoeIdError, TX_ID_MAX_LEN, TxId, TxIdError};

/// The version of the round record format this crate writes (and the only one so far).
pub const ROUND_RECORD_VERSION: u32 = 1;
