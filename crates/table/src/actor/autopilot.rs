//! The shuffler of automated and single-player tables: a shoe's order from a seed.
//!
//! The table itself stays free of randomness: the actor draws a seed from the OS when a
//! shoe is opened on a table without a croupier, journals it with the `OpenShoe` record
//! ([`super::JournalEntry::shuffle_seed`]), and rebuilds the very same order from it on a
//! restart, so that an auditor can replay the shoe card by card. Every card still goes
//! through the table as an ordinary `DealCard { source: Shuffler }`.
//!
//! Where the next card comes from needs no extra state: every card taken from the order
//! is counted by the table's shoe (the exposed burn card, the ones burned face down, and
//! the cards dealt), so the position in the order is `total - cards_left`.

use banco_rules::Card;
use banco_rules::shoe::{Shoe, ShoeConfig, ShoeConfigError};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Who the actor's own commands are by.
pub(super) const AUTO: &str = "auto";

/// The order of the shoe in play on a table the actor deals itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShuffledOrder {
    pub(super) config: ShoeConfig,
    pub(super) seed: u64,
    order: Vec<Card>,
}

impl ShuffledOrder {
    /// `banco_rules::Shoe::shuffled` with ChaCha20 seeded from `seed`: the order an auditor
    /// rebuilds from the journaled seed.
    pub(super) fn new(config: ShoeConfig, seed: u64) -> Result<ShuffledOrder, ShoeConfigError> {
        let shuffled = Shoe::shuffled(config, &mut ChaCha20Rng::seed_from_u64(seed))?;
        Ok(ShuffledOrder {
            config,
            seed,
            order: shuffled.order().to_vec(),
        })
    }

    /// The next card out of `shoe` (which must be the shoe this order was made for):
    /// `None` once the order is exhausted.
    pub(super) fn next_card(&self, shoe: &Shoe) -> Option<Card> {
        let taken = shoe.total_cards().saturating_sub(shoe.cards_left());
        self.order.get(usize::from(taken)).copied()
    }
}

/// A fresh seed from the operating system.
pub(super) fn os_seed() -> Result<u64, String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a shuffle seed: {e}"))?;
    Ok(u64::from_le_bytes(bytes))
}
