//! What can go wrong with a journal, each error naming the file and, where it applies, the
//! byte offset and sequence number, so an operator can find the spot with a hex dump.

use std::io;
use std::path::PathBuf;

/// Why the bytes at some offset are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameDefect {
    /// The file ends before the record does.
    #[error("record needs {needed} bytes but only {available} remain in the file")]
    Truncated {
        /// Bytes the frame header (or header plus payload) needs.
        needed: u64,
        /// Bytes left in the file from the record's offset.
        available: u64,
    },
    /// The length field is beyond [`super::MAX_PAYLOAD_LEN`]: a corrupt length.
    #[error("length field {len} exceeds the maximum payload length")]
    Oversized {
        /// The length field as stored.
        len: u64,
    },
    /// The checksum does not match the record's bytes.
    #[error("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// CRC stored in the frame.
        stored: u32,
        /// CRC computed over the frame's length, seq and payload.
        computed: u32,
    },
}

/// A partial or damaged final record that [`super::Journal::open`] cut off.
///
/// Only the last record can be torn by a crash mid-write, and it was never acknowledged
/// (acknowledgement comes after the fsync), so dropping it loses nothing promised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Offset where the file was truncated (start of the torn record).
    pub offset: u64,
    /// Bytes removed from the end of the file.
    pub dropped_bytes: u64,
    /// The sequence number the torn record would have had.
    pub seq: u64,
    /// What was wrong with it.
    pub defect: FrameDefect,
}

/// Errors from opening, replaying or appending to a journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// An operating-system call failed.
    #[error("journal {}: {op} failed: {source}", path.display())]
    Io {
        /// The journal file.
        path: PathBuf,
        /// What was being done ("open", "write", "fsync", ...).
        op: &'static str,
        /// The underlying error (e.g. ENOSPC).
        #[source]
        source: io::Error,
    },
    /// The file does not start with the journal magic.
    #[error("journal {}: not a banco journal: header bytes {found:02x?}", path.display())]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The first bytes found (up to the header length).
        found: Vec<u8>,
    },
    /// The file is a journal of a format this build cannot read.
    #[error("journal {}: unsupported format version {found} (this build reads {supported})", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version in the header.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// A bad record is followed by valid ones: truncating would drop acknowledged records,
    /// so the journal refuses to open. Needs an operator (restore a copy, or truncate by hand
    /// at `offset` after deciding the records after it may be lost).
    #[error(
        "journal {}: corrupt record at offset {offset} (seq {seq}): {defect}; a valid record \
         (seq {next_valid_seq}) follows at offset {next_valid_offset}, so this is not a torn \
         tail and acknowledged records would be lost by truncating",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Offset of the bad record.
        offset: u64,
        /// Sequence number the bad record should have had.
        seq: u64,
        /// What is wrong with it.
        defect: FrameDefect,
        /// Offset of the first valid record found after it.
        next_valid_offset: u64,
        /// Its sequence number.
        next_valid_seq: u64,
    },
    /// A record with a valid checksum carries the wrong sequence number: a gap, a duplicate
    /// or a reordering, none of which this journal ever writes.
    #[error("journal {}: record at offset {offset} has seq {found}, expected {expected}", path.display())]
    SequenceBreak {
        /// The file.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
        /// The sequence number that should come next.
        expected: u64,
        /// The sequence number found.
        found: u64,
    },
    /// A payload larger than [`super::MAX_PAYLOAD_LEN`] was offered; nothing was written.
    #[error("journal {}: payload {index} of the batch is {len} bytes, above the {max}-byte limit", path.display())]
    PayloadTooLarge {
        /// The file.
        path: PathBuf,
        /// Position of the payload in the batch (0 for a single append).
        index: usize,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An earlier write or fsync failed, so the journal refuses appends until it is reopened
    /// (reopening re-reads and verifies the file from disk).
    #[error("journal {}: refusing appends after an earlier failure: {reason}", path.display())]
    Failed {
        /// The file.
        path: PathBuf,
        /// The earlier failure, as text.
        reason: String,
    },
    /// The group committer's thread is gone (shut down, or panicked).
    #[error("journal {}: the group committer has stopped", path.display())]
    CommitterStopped {
        /// The file.
        path: PathBuf,
    },
}

impl JournalError {
    /// What went wrong, without the file's name (for a croupier's screen; the log names
    /// the file): `write failed: No space left on device (os error 28)`.
    pub fn reason(&self) -> String {
        match self {
            JournalError::Io { op, source, .. } => format!("{op} failed: {source}"),
            JournalError::Failed { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }
}
