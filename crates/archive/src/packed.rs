//! Stored bytes compressed with LZ4 (the block format, uncompressed size first). The
//! table's record is JSON of about 6 KB that LZ4 shrinks about fourfold at a few
//! microseconds a round: a quarter of the disk, and of the bytes each commit writes.

use crate::error::ArchiveError;

/// Larger than any round the table writes: a stored size beyond it is corruption, refused
/// before anything is allocated.
const MAX_UNPACKED: usize = 64 << 20;

pub fn pack(bytes: &[u8]) -> Vec<u8> {
    lz4_flex::compress_prepend_size(bytes)
}

/// The bytes `packed` holds; `what` names them in the error.
pub fn unpack(packed: &[u8], what: &str) -> Result<Vec<u8>, ArchiveError> {
    let corrupt = |why: String| ArchiveError::Corrupt(format!("{what}: {why}"));
    let size = packed
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| corrupt("shorter than its size".to_owned()))?;
    if size > MAX_UNPACKED {
        return Err(corrupt(format!("claims {size} bytes unpacked")));
    }
    lz4_flex::decompress_size_prepended(packed).map_err(|e| corrupt(e.to_string()))
}

/// [`unpack`] of UTF-8 text.
pub fn unpack_text(packed: &[u8], what: &str) -> Result<String, ArchiveError> {
    String::from_utf8(unpack(packed, what)?)
        .map_err(|_| ArchiveError::Corrupt(format!("{what}: not UTF-8")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let text = br#"{"round_id":"T01-S0001-H001","cards":["9S","10H"]}"#.repeat(20);
        let packed = pack(&text);
        assert!(packed.len() < text.len() / 4, "{} bytes", packed.len());
        assert_eq!(unpack(&packed, "r").unwrap(), text);
        assert!(unpack(&packed[..2], "r").is_err());
        let mut huge = packed.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = unpack(&huge, "round T01").unwrap_err().to_string();
        assert!(err.contains("round T01") && err.contains("claims"), "{err}");
        let mut cut = packed.clone();
        cut.truncate(packed.len() - 3);
        assert!(unpack(&cut, "r").is_err());
    }
}
