//! The on-disk layout: one file header, then back-to-back framed records.
//!
//! ```text
//! file   := header record*
//! header := "BANCOJNL" (8 bytes) | version: u32 LE (= 1)                 -- 12 bytes
//! record := length: u32 LE | crc: u32 LE | seq: u64 LE | payload (length bytes)
//! crc    := crc32c(length LE ++ seq LE ++ payload)
//! ```
//!
//! The CRC covers the length and the sequence number as well as the payload, so a flipped
//! bit in any part of a record is detected, not only in its payload.

use super::error::FrameDefect;

/// The first eight bytes of every journal file.
pub const MAGIC: [u8; 8] = *b"BANCOJNL";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Size of the file header: magic then version.
pub const HEADER_LEN: u64 = 12;
/// Size of a record's frame header: length, crc, seq.
pub const FRAME_HEADER_LEN: usize = 16;
/// Largest payload accepted. Bounds the allocation a corrupt length field could ask for;
/// a table command is a few hundred bytes, so 16 MiB is far beyond any real record.
pub const MAX_PAYLOAD_LEN: usize = 16 * 1024 * 1024;

/// The 12 header bytes of a new journal file.
pub(crate) fn header_bytes() -> [u8; HEADER_LEN as usize] {
    let mut header = [0u8; HEADER_LEN as usize];
    header[..8].copy_from_slice(&MAGIC);
    header[8..].copy_from_slice(&VERSION.to_le_bytes());
    header
}

fn frame_crc(len: u32, seq: u64, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&len.to_le_bytes());
    let crc = crc32c::crc32c_append(crc, &seq.to_le_bytes());
    crc32c::crc32c_append(crc, payload)
}

/// Appends the framed record to `out`. The caller has checked the payload size.
pub(crate) fn encode_frame(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    // Callers reject payloads above MAX_PAYLOAD_LEN, which fits a u32.
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&frame_crc(len, seq, payload).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
}

/// A record that decoded cleanly, borrowing its payload from the scanned bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub(crate) seq: u64,
    pub(crate) payload: &'a [u8],
    /// Frame header plus payload.
    pub(crate) total_len: usize,
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(buf)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Decodes the record at the start of `bytes` (which runs to the end of the file).
pub(crate) fn decode_frame(bytes: &[u8]) -> Result<Frame<'_>, FrameDefect> {
    if bytes.len() < FRAME_HEADER_LEN {
        return Err(FrameDefect::Truncated {
            needed: FRAME_HEADER_LEN as u64,
            available: bytes.len() as u64,
        });
    }
    let len = read_u32(bytes, 0);
    let stored_crc = read_u32(bytes, 4);
    let seq = read_u64(bytes, 8);
    let payload_len = len as usize;
    if payload_len > MAX_PAYLOAD_LEN {
        return Err(FrameDefect::Oversized {
            len: u64::from(len),
        });
    }
    let total_len = FRAME_HEADER_LEN + payload_len;
    if bytes.len() < total_len {
        return Err(FrameDefect::Truncated {
            needed: total_len as u64,
            available: bytes.len() as u64,
        });
    }
    let payload = &bytes[FRAME_HEADER_LEN..total_len];
    let computed_crc = frame_crc(len, seq, payload);
    if computed_crc != stored_crc {
        return Err(FrameDefect::CrcMismatch {
            stored: stored_crc,
            computed: computed_crc,
        });
    }
    Ok(Frame {
        seq,
        payload,
        total_len,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn frame_round_trips() {
        let mut buf = Vec::new();
        encode_frame(&mut buf, 7, b"hello");
        assert_eq!(buf.len(), FRAME_HEADER_LEN + 5);
        let frame = decode_frame(&buf).unwrap();
        assert_eq!(frame.seq, 7);
        assert_eq!(frame.payload, b"hello");
        assert_eq!(frame.total_len, buf.len());
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let mut buf = Vec::new();
        encode_frame(&mut buf, 3, b"bet:banker:500");
        for byte in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[byte] ^= 1 << bit;
                let decoded = decode_frame(&bad);
                assert!(
                    decoded.is_err(),
                    "flip at byte {byte} bit {bit}: {decoded:?}"
                );
            }
        }
    }

    #[test]
    fn empty_payload_is_a_valid_record() {
        let mut buf = Vec::new();
        encode_frame(&mut buf, 1, b"");
        assert_eq!(decode_frame(&buf).unwrap().payload, b"");
    }
}
