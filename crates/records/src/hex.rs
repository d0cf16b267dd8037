//! Hex, as stored formats write hashes and signatures: lowercase, two digits a byte.

use std::fmt::Write as _;

/// Lowercase hex of `bytes`.
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

/// `N` bytes from exactly `2 N` hex digits.
pub fn unhex_n<const N: usize>(text: &str) -> Result<[u8; N], String> {
    let bad = || format!("`{text}` is not {} hex digits", 2 * N);
    if text.len() != 2 * N {
        return Err(bad());
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = text
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(bad)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_hex() {
        assert_eq!(to_hex(&[0, 0xab, 0x0f]), "00ab0f");
        assert_eq!(from_hex("00ab0f").unwrap(), [0, 0xab, 0x0f]);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_eq!(unhex_n::<2>("abcd").unwrap(), [0xab, 0xcd]);
        assert!(unhex_n::<2>("abc").is_err());
        assert!(unhex_n::<2>("abcdef").is_err());
    }
}
