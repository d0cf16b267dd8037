//! Reading a journal file back: verify the header, decode every record, and tell free
//! space (zeros written ahead of the records), a torn tail (cut off and reported) and
//! corruption in the middle (an error) apart.
//!
//! The rules, where the records stop:
//! - Nothing but zero bytes after the last record is free space: the writer zeroes space
//!   ahead so that its commits overwrite the file instead of growing it.
//! - Otherwise the bad record is a *torn tail* if no valid record with a later sequence
//!   number appears anywhere after it. A crash mid-write can only damage the end of the
//!   file, so anything valid beyond the damage means acknowledged data sits behind it, and
//!   truncating would silently lose it.
//! - Unless the damage holds a sector that was never written: a power cut during a write
//!   into zeroed space can keep a later page of that write and lose an earlier one, which
//!   reads back as zeros up to a sector boundary. Acknowledged records were fsynced whole,
//!   so the valid records behind such a gap belong to the same unfinished write, and the
//!   whole of it is a torn tail.

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

/// The unit a disk writes whole: a write cut by a power loss leaves each sector either
/// written or as it was. 512 bytes is the smallest any disk uses.
const SECTOR: usize = 512;

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
                let data_end = bytes
                    .iter()
                    .rposition(|&b| b != 0)
                    .map_or(0, |last| last + 1);
                if data_end <= offset {
                    // Zeros written ahead, not yet used: the records end here.
                    break;
                }
                if let Some((next_offset, next_seq)) =
                    find_valid_frame(bytes, offset + 1, data_end, expected_seq)
                    && !has_unwritten_sector(bytes, offset, next_offset)
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

/// Whether `bytes[from..to]` (a bad record up to the next valid one) holds zeros that a
/// write never reached: a whole zeroed sector, or zeros from `from` itself up to a sector
/// boundary (the write began at `from`, inside a sector whose earlier bytes were already
/// on disk). Zeros from `from` must be longer than a frame header: a zeroed header alone is
/// damage to a record, as a lost sector elsewhere would show a whole zeroed sector.
fn has_unwritten_sector(bytes: &[u8], from: usize, to: usize) -> bool {
    let first_boundary = from.next_multiple_of(SECTOR);
    let from_start = first_boundary <= to
        && first_boundary - from > FRAME_HEADER_LEN
        && bytes[from..first_boundary].iter().all(|&b| b == 0);
    from_start
        || (first_boundary..to)
            .step_by(SECTOR)
            .filter(|&at| at + SECTOR <= to)
            .any(|at| bytes[at..at + SECTOR].iter().all(|&b| b == 0))
}

/// Finds the first offset at or after `from` holding a valid frame whose seq is at least
/// `min_seq`. Only runs on the damaged part of a file, and only up to `data_end`, the end
/// of its last non-zero byte: a frame's sequence number is never zero, so it starts at
/// least 9 bytes before that (its payload may end in zeros). Each candidate offset is
/// rejected cheaply unless its length field fits in the rest of the file.
fn find_valid_frame(
    bytes: &[u8],
    from: usize,
    data_end: usize,
    min_seq: u64,
) -> Option<(usize, u64)> {
    let last_start = bytes
        .len()
        .checked_sub(FRAME_HEADER_LEN)?
        .min(data_end.checked_sub(9)?);
    (from..=last_start).find_map(|at| match decode_frame(&bytes[at..]) {
        Ok(frame) if frame.seq >= min_seq => Some((at, frame.seq)),
        Ok(_) | Err(_) => None,
    })
}
