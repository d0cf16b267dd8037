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

use banco_records::hex::{to_hex as hex, unhex_n};

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

/// One round of a shoe as its record has it: the cards in dealing order (voided rounds
/// too: their cards left the shoe).
#[derive(Clone, Copy, Debug)]
pub struct RecordedRound<'a> {
    pub round_id: &'a str,
    pub cards: &'a [Card],
}

/// What a shoe's records claim, to be checked against a revealed key.
#[derive(Clone, Copy, Debug)]
pub struct RecordedShoe<'a> {
    pub table: &'a str,
    pub shoe: u32,
    pub config: ShoeConfig,
    /// The commitment published at the shoe's opening, lowercase hex.
    pub commitment: &'a str,
    /// The exposed burn card, on a shoe that burned.
    pub burn: Option<Card>,
    /// Every round of the shoe, in play order.
    pub rounds: &'a [RecordedRound<'a>],
}

/// A shoe whose every recorded card is the key's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fair {
    /// Cards checked: the exposed burn card and every card dealt.
    pub checked: usize,
    /// Burned face down, unseen: their places in the order are skipped.
    pub face_down: u8,
    /// Still in the shoe when it ended, unseen.
    pub left: usize,
}

/// Where a shoe's records and its revealed key disagree: the first difference.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unfair {
    #[error(
        "the revealed key is not the one committed to: SHA-256 of it for {table} shoe {shoe} \
         is {computed}, the shoe's opening published {committed}"
    )]
    Commitment {
        table: String,
        shoe: u32,
        committed: String,
        computed: String,
    },
    #[error("the shoe's configuration cannot be shuffled: {0}")]
    Config(ShoeConfigError),
    #[error("the burn: the key's order exposes {expected}, the record says {recorded}")]
    Burn { expected: Card, recorded: Card },
    #[error(
        "round {round_id}, card {number}: the key's order has {expected}, the record says {recorded}"
    )]
    Card {
        round_id: String,
        /// 1 for the round's first card.
        number: usize,
        expected: Card,
        recorded: Card,
    },
    #[error("round {round_id}: the records deal more cards than the shoe's {total}")]
    Exhausted { round_id: String, total: usize },
}

/// Checks `shoe` against `key`: the key hashes to the commitment, and the burn and every
/// card dealt are the key's order, card for card, the face-down burn skipped.
pub fn check(shoe: &RecordedShoe<'_>, key: &ShuffleKey) -> Result<Fair, Unfair> {
    let computed = key.commitment(shoe.table, shoe.shoe);
    if computed != shoe.commitment {
        return Err(Unfair::Commitment {
            table: shoe.table.to_owned(),
            shoe: shoe.shoe,
            committed: shoe.commitment.to_owned(),
            computed,
        });
    }
    let order = key.order(shoe.config).map_err(Unfair::Config)?;
    let mut next = 0;
    let mut checked = 0;
    let mut face_down = 0;
    if let Some(recorded) = shoe.burn {
        // A shoe holds at least 52 cards: the first is always there.
        let expected = order[0];
        if expected != recorded {
            return Err(Unfair::Burn { expected, recorded });
        }
        face_down = banco_rules::shoe::burn_count(expected);
        next = 1 + usize::from(face_down);
        checked += 1;
    }
    for round in shoe.rounds {
        for (i, &recorded) in round.cards.iter().enumerate() {
            let Some(&expected) = order.get(next) else {
                return Err(Unfair::Exhausted {
                    round_id: round.round_id.to_owned(),
                    total: order.len(),
                });
            };
            if expected != recorded {
                return Err(Unfair::Card {
                    round_id: round.round_id.to_owned(),
                    number: i + 1,
                    expected,
                    recorded,
                });
            }
            next += 1;
            checked += 1;
        }
    }
    Ok(Fair {
        checked,
        face_down,
        left: order.len().saturating_sub(next),
    })
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

    fn recorded<'a>(
        commitment: &'a str,
        burn: Option<Card>,
        rounds: &'a [RecordedRound<'a>],
    ) -> RecordedShoe<'a> {
        RecordedShoe {
            table: "T01",
            shoe: 2,
            config: ShoeConfig::default(),
            commitment,
            burn,
            rounds,
        }
    }

    /// The rounds `ids` as recorded with `cards`.
    fn as_recorded<'a>(ids: &[&'a str], cards: &'a [Vec<Card>]) -> Vec<RecordedRound<'a>> {
        ids.iter()
            .zip(cards)
            .map(|(id, cards)| RecordedRound {
                round_id: id,
                cards,
            })
            .collect()
    }

    /// The order's cards after the burn, split into rounds of 4, 5 and 6 cards.
    fn dealt(order: &[Card]) -> Vec<Vec<Card>> {
        let start = 1 + usize::from(banco_rules::shoe::burn_count(order[0]));
        let mut at = start;
        [4, 5, 6]
            .iter()
            .map(|n| {
                let cards = order[at..at + n].to_vec();
                at += n;
                cards
            })
            .collect()
    }

    #[test]
    fn a_shoe_dealt_from_its_key_is_fair_and_one_changed_card_is_named() {
        let key = ShuffleKey::new([42; 32]);
        let committed = key.commitment("T01", 2);
        let order = key.order(ShoeConfig::default()).unwrap();
        let mut cards = dealt(&order);
        let ids = ["T01-S0002-H001", "T01-S0002-H002", "T01-S0002-H003"];
        let rounds = as_recorded(&ids, &cards);
        let fair = check(&recorded(&committed, Some(order[0]), &rounds), &key).unwrap();
        let face_down = banco_rules::shoe::burn_count(order[0]);
        assert_eq!(fair.checked, 1 + 15);
        assert_eq!(fair.face_down, face_down);
        assert_eq!(fair.left, 416 - 1 - usize::from(face_down) - 15);

        // The second round's third card swapped for another.
        let was = cards[1][2];
        let other = *Card::ALL.iter().find(|c| **c != was).unwrap();
        cards[1][2] = other;
        let rounds = as_recorded(&ids, &cards);
        assert_eq!(
            check(&recorded(&committed, Some(order[0]), &rounds), &key),
            Err(Unfair::Card {
                round_id: "T01-S0002-H002".into(),
                number: 3,
                expected: was,
                recorded: other,
            })
        );
    }

    #[test]
    fn another_key_or_another_burn_is_refused() {
        let key = ShuffleKey::new([42; 32]);
        let committed = key.commitment("T01", 2);
        let order = key.order(ShoeConfig::default()).unwrap();
        let shoe = recorded(&committed, Some(order[0]), &[]);
        let other = ShuffleKey::new([43; 32]);
        assert!(matches!(
            check(&shoe, &other),
            Err(Unfair::Commitment { shoe: 2, .. })
        ));
        let wrong = *Card::ALL.iter().find(|c| **c != order[0]).unwrap();
        assert_eq!(
            check(&recorded(&committed, Some(wrong), &[]), &key),
            Err(Unfair::Burn {
                expected: order[0],
                recorded: wrong
            })
        );
    }

    const GOLDEN_FIRST_SIX: &str = "KC 5H 9S 9S 7H 3S";
}
