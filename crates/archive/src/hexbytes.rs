//! Hex text (how the table writes hashes and signatures) to bytes (how the wire carries
//! them); the hex helpers themselves are `banco_records::hex`.

/// Hex text of bytes, or empty bytes from empty text (an unsigned record).
pub fn hex_to_bytes_lossy(text: &str) -> Vec<u8> {
    banco_records::hex::from_hex(text).unwrap_or_default()
}
