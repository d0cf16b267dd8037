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

use crate::event::Event;
use crate::fairness::ShuffleKey;

/// Who the actor's own commands are by.
pub(super) const AUTO: &str = "auto";

/// What a shoe's order was drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seed {
    /// A seed chosen by the caller ([`super::TableHandle::submit_seeded`]: tests, a known
    /// shoe replayed), or journaled before shoes were committed to: `seed_from_u64`, and
    /// nothing published.
    Chosen(u64),
    /// A key the actor drew: committed to at the opening, revealed at the end (see
    /// [`crate::fairness`]).
    Committed(ShuffleKey),
}

/// The order of the shoe in play on a table the actor deals itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShuffledOrder {
    pub(super) config: ShoeConfig,
    pub(super) seed: Seed,
    order: Vec<Card>,
}

impl ShuffledOrder {
    /// The order an auditor rebuilds from the journaled seed or the revealed key.
    pub(super) fn new(config: ShoeConfig, seed: Seed) -> Result<ShuffledOrder, ShoeConfigError> {
        let order = match seed {
            Seed::Chosen(seed) => Shoe::shuffled(config, &mut ChaCha20Rng::seed_from_u64(seed))?
                .order()
                .to_vec(),
            Seed::Committed(key) => key.order(config)?,
        };
        Ok(ShuffledOrder {
            config,
            seed,
            order,
        })
    }

    /// The next card out of `shoe` (which must be the shoe this order was made for):
    /// `None` once the order is exhausted.
    pub(super) fn next_card(&self, shoe: &Shoe) -> Option<Card> {
        let taken = shoe.total_cards().saturating_sub(shoe.cards_left());
        self.order.get(usize::from(taken)).copied()
    }

    /// The journal's fields for this seed: the chosen seed, or the key in hex.
    pub(super) fn journaled(&self) -> (Option<u64>, Option<String>) {
        match self.seed {
            Seed::Chosen(seed) => (Some(seed), None),
            Seed::Committed(key) => (None, Some(key.to_hex())),
        }
    }
}

/// Once the shoe in play has ended (a `ShoeEnded` among `events`), reveals its key: in
/// that event and in the record of the round that ended it, if one is among `events`.
/// Done the same way live and on replay, so the sealed record is the same.
pub(super) fn reveal(events: &mut [Event], order: Option<&ShuffledOrder>) {
    let Some(Seed::Committed(key)) = order.map(|o| o.seed) else {
        return;
    };
    let Some(ended) = events.iter().find_map(|e| match e {
        Event::ShoeEnded { shoe, .. } => Some(*shoe),
        _ => None,
    }) else {
        return;
    };
    for event in events.iter_mut() {
        match event {
            Event::ShoeEnded { shuffle_key, .. } => *shuffle_key = Some(key.to_hex()),
            Event::RoundFinished(round) if round.shoe == ended => {
                round.shuffle_key = Some(key.to_hex());
            }
            _ => {}
        }
    }
}
