//! Reading a journal file back: verify the header, decode every record, and tell a torn
//! tail (cut off and reported) from corruption in the middle (an error).
//!
//! The rule: a bad record is a *torn tail* only if no valid record with a later sequence
//! number appears anywhere after it. A crash mid-write can only damage the end of the file,
//! so anything valid beyond the damage means acknowledged data sits behind it, and
//! truncating would silently lose it.

use std::path::Path;

use super::error::{JournalError, TornTail};
use super::format::{FRAME_HEADER_LEN, MAGIC, VERSION, decode_frame, header_bytes};

/// One record read back from the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its sequence number: 1 for the first record, then +1 each, no gaps.
    pub seq: u64,
    /// Byte offset of its frame in the file.
    pub offset: u64,
    /// The opaque payload, exactly as appended.
    pub payload: Vec<u8>,
}

/// The outcome of scanning a whole file.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) records: Vec<Record>,
    /// Length of the valid prefix: header plus every good record. 0 if the header is missing
    /// or torn (the file must be (re)initialised).
    pub(crate) valid_len: u64,
    pub(crate) torn_tail: Option<TornTail>,
}

/// Scans the complete contents of the journal file at `path`.
pub(crate) fn scan(path: &Path, bytes: &[u8]) -> Result<Scan, JournalError> {
    let header = header_bytes();
    if bytes.len() < header.len() {
        // Empty, or a crash while the header of a brand-new file was being written: nothing
        // was ever acknowledged, so the file is simply (re)initialised.
        if header.starts_with(bytes) {
            return Ok(Scan {
                records: Vec::new(),
                valid_len: 0,
                torn_tail: None,
            });
        }
        return Err(JournalError::BadMagic {
            path: path.to_path_buf(),
            found: bytes.to_vec(),
        });
    }
    if bytes[..MAGIC.len()] != MAGIC {
        return Err(JournalError::BadMagic {
            path: path.to_path_buf(),
            found: bytes[..header.len()].to_vec(),
        });
    }
    let mut version = [0u8; 4];
    version.copy_from_slice(&bytes[MAGIC.len()..header.len()]);
    let version = u32::from_le_bytes(version);
    if version != VERSION {
        return Err(JournalError::UnsupportedVersion {
            path: path.to_path_buf(),
            found: version,
            supported: VERSION,
        });
    }

    let mut records = Vec::new();
    let mut offset = header.len();
    let mut expected_seq = 1u64;
    let mut torn_tail = None;
    while offset < bytes.len() {
        match decode_frame(&bytes[offset..]) {
            Ok(frame) => {
                if frame.seq != expected_seq {
                    return Err(JournalError::SequenceBreak {
                        path: path.to_path_buf(),
                        offset: offset as u64,
                        expected: expected_seq,
                        found: frame.seq,
                    });
                }
                records.push(Record {
                    seq: frame.seq,
                    offset: offset as u64,
                    payload: frame.payload.to_vec(),
                });
                offset += frame.total_len;
                expected_seq += 1;
            }
            Err(defect) => {
                if let Some((next_offset, next_seq)) =
                    find_valid_frame(bytes, offset + 1, expected_seq)
                {
                    return Err(JournalError::Corrupt {
                        path: path.to_path_buf(),
                        offset: offset as u64,
                        seq: expected_seq,
                        defect,
                        next_valid_offset: next_offset as u64,
                        next_valid_seq: next_seq,
                    });
                }
                torn_tail = Some(TornTail {
                    offset: offset as u64,
                    dropped_bytes: (bytes.len() - offset) as u64,
                    seq: expected_seq,
                    defect,
                });
                break;
            }
        }
    }
    Ok(Scan {
        records,
        valid_len: offset as u64,
        torn_tail,
    })
}

/// Finds the first offset at or after `from` holding a valid frame whose seq is at least
/// `min_seq`. Only runs on the damaged part of a file; each candidate offset is rejected
/// cheaply unless its length field fits in the rest of the file.
fn find_valid_frame(bytes: &[u8], from: usize, min_seq: u64) -> Option<(usize, u64)> {
    let last_start = bytes.len().checked_sub(FRAME_HEADER_LEN)?;
    (from..=last_start).find_map(|at| match decode_frame(&bytes[at..]) {
        Ok(frame) if frame.seq >= min_seq => Some((at, frame.seq)),
        Ok(_) | Err(_) => None,
    })
}
