//! Provably fair shoes: what an automated table commits to when it opens a shoe, and what
//! anyone can check once the shoe has ended.
//!
//! The construction (version 1):
//!
//! - The table draws a 32-byte **shuffle key** from the operating system for each shoe it
//!   deals itself. The shoe's order is `banco_rules::Shoe::shuffled` (a Fisher–Yates over
//!   `decks` × the 52 cards in [`banco_rules::Card::ALL`] order) driven by
//!   `ChaCha20Rng::from_seed(key)`.
//! - At the shoe's opening it publishes the **commitment**: SHA-256 over the bytes of
//!   `banco-shoe-v1\n<table id>\n<shoe number>\n` followed by the 32 key bytes, in
//!   lowercase hex. It is in the `ShoeOpened` event and in the signed record of the shoe's
//!   first round, before any card of the shoe is seen.
//! - When the shoe has ended it reveals the key, in the `ShoeEnded` event and in the
//!   signed record of the round that ended it. Anyone then checks that the key hashes to
//!   the commitment and that every card dealt and burned is the key's order, card for card.
//!
//! The key's 256 bits make the commitment hiding (it cannot be searched for) and the order
//! unpredictable from the cards already out; the table and shoe in the hash keep one key
//! from being passed off as another shoe's.

use banco_rules::Card;
use banco_rules::shoe::{Shoe, ShoeConfig, ShoeConfigError};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use sha2::{Digest, Sha256};

use crate::actor::outbox::{hex, unhex_n};

/// The construction's name, the first line of what is hashed.
pub const VERSION: &str = "banco-shoe-v1";

/// A shoe's 32-byte shuffle key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShuffleKey([u8; 32]);

impl std::fmt::Debug for ShuffleKey {
    // Kept out of logs and panics while the shoe is in play.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShuffleKey(..)")
    }
}

impl ShuffleKey {
    pub const fn new(bytes: [u8; 32]) -> ShuffleKey {
        ShuffleKey(bytes)
    }

    /// A fresh key from the operating system.
    pub fn from_os() -> Result<ShuffleKey, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a shuffle key: {e}"))?;
        Ok(ShuffleKey(bytes))
    }

    /// From its 64 lowercase hex digits (as revealed).
    pub fn from_hex(text: &str) -> Result<ShuffleKey, String> {
        unhex_n::<32>(text)
            .map(ShuffleKey)
            .map_err(|e| format!("shuffle key: {e}"))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The commitment to this key for shoe `shoe` of table `table`, in lowercase hex.
    pub fn commitment(&self, table: &str, shoe: u32) -> String {
        let mut digest = Sha256::new();
        digest.update(format!("{VERSION}\n{table}\n{shoe}\n").as_bytes());
        digest.update(self.0);
        hex(&digest.finalize())
    }

    /// The shoe's whole order, first card out first.
    pub fn order(&self, config: ShoeConfig) -> Result<Vec<Card>, ShoeConfigError> {
        let shuffled = Shoe::shuffled(config, &mut ChaCha20Rng::from_seed(self.0))?;
        Ok(shuffled.order().to_vec())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Fixed figures, so that a change to the construction (what is hashed, the shuffle,
    /// the RNG) fails here: anyone's published check must keep verifying old shoes.
    #[test]
    fn the_construction_is_fixed() {
        let key = ShuffleKey::new([7; 32]);
        // Python: hashlib.sha256(b"banco-shoe-v1\nT01\n3\n" + b"\x07" * 32).hexdigest()
        assert_eq!(
            key.commitment("T01", 3),
            "8f22ef27d459fb879418c1613d1015e3f0964c9569cf9e73df36c1d696758998"
        );
        assert_ne!(key.commitment("T01", 3), key.commitment("T01", 4));
        assert_ne!(key.commitment("T01", 3), key.commitment("T02", 3));
        let order = key.order(ShoeConfig::default()).unwrap();
        assert_eq!(order.len(), 8 * 52);
        let first: Vec<String> = order[..6].iter().map(ToString::to_string).collect();
        assert_eq!(first.join(" "), GOLDEN_FIRST_SIX);
        assert_eq!(ShuffleKey::from_hex(&key.to_hex()).unwrap(), key);
        assert!(ShuffleKey::from_hex("zz").is_err());
    }

    const GOLDEN_FIRST_SIX: &str = "KC 5H 9S 9S 7H 3S";
}
