//! Hex text (how the table writes hashes and signatures) to bytes (how the wire carries
//! them) and back.

use std::fmt::Write as _;

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The bytes of `text`; `None` unless it is an even number of hex digits.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

/// Hex text of bytes, or empty bytes from empty text (an unsigned record).
pub fn hex_to_bytes_lossy(text: &str) -> Vec<u8> {
    from_hex(text).unwrap_or_default()
}
