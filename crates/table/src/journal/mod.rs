//! The table's crash-safe journal: an append-only file of opaque, checksummed, numbered
//! records. The table actor journals every accepted command here before it answers, so a
//! table killed at any instant (kill -9) comes back with the same state by replaying it.
//!
//! The journal knows nothing of game types: a record is a byte payload (the actor encodes
//! its commands), a sequence number (1, 2, 3, ... without gaps) and a checksum.
//!
//! One file per table, no segments: the file grows until the table checkpoints (not yet
//! written; a later checkpoint will start a fresh file from a snapshot).
//!
//! Guarantees:
//! - [`Journal::append`] / [`Journal::append_batch`] return only after `fsync`
//!   (`File::sync_data`): a returned sequence number survives a crash or power loss.
//! - [`Journal::open`] replays every record; a torn tail (the crash cut the last, never
//!   acknowledged write) is truncated and reported; damage with valid records after it is
//!   refused with [`JournalError::Corrupt`] naming offset and seq.
//! - A failed write or fsync truncates back to the last acknowledged record and makes the
//!   journal refuse further appends until reopened (see [`Journal`]).
//! - A batch is not atomic: each record is independently checksummed, and a crash during a
//!   batch's write may keep a prefix of it (none of which had been acknowledged).
//! - The file may end in zeros written ahead of the records ([`Journal::zero_ahead`]), so
//!   that commits overwrite it instead of growing it; opening and reading take them as
//!   free space.
//! - [`GroupCommitter`] runs the journal on its own thread for async callers and shares one
//!   fsync among all records queued meanwhile.
//!
//! The byte layout is in [`format`].

mod error;
pub mod format;
mod group_commit;
mod replay;
mod writer;

pub use error::{FrameDefect, JournalError, TornTail};
pub use format::MAX_PAYLOAD_LEN;
pub use group_commit::{
    CommitHandle, CommitStats, GroupCommitConfig, GroupCommitter, PendingCommit, StatsReader,
};
pub use replay::Record;
pub use writer::{Journal, READ_ATTEMPTS};
