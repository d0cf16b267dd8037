//! The shuffler of automated and single-player tables: a shoe's order from a seed.
//!
//! The table itself stays free of randomness: the actor draws a seed from the OS when a
//! shoe is opened on a table without a croupier, journals it with the `OpenShoe` record
//! ([`banco_records::journal::Entry::shuffle_seed`]), and rebuilds the very same order from it on a
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

use crate::event::{Event, RevealedShuffle};
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

/// Reveals the key of a committed shoe once it has ended (a `ShoeEnded` among `events`):
/// in that event, and in the signed record of the round that ended it. A shoe ended
/// between rounds (a croupier's EndShoe) has no such round: its key is `owed` to the next
/// round the table seals, whatever its shoe, so that every revealed key reaches the
/// archive. Done the same way live and on replay, so the sealed records are the same.
pub(super) fn reveal(
    events: &mut [Event],
    order: Option<&ShuffledOrder>,
    owed: &mut Option<RevealedShuffle>,
) {
    let ended = events.iter().find_map(|e| match e {
        Event::ShoeEnded { shoe, .. } => Some(*shoe),
        _ => None,
    });
    if let (Some(ended), Some(Seed::Committed(key))) = (ended, order.map(|o| o.seed)) {
        for event in events.iter_mut() {
            if let Event::ShoeEnded { shuffle_key, .. } = event {
                *shuffle_key = Some(key.to_hex());
            }
        }
        let sealed_here = events
            .iter()
            .any(|e| matches!(e, Event::RoundFinished(round) if round.shoe == ended));
        if !sealed_here {
            *owed = Some(RevealedShuffle {
                shoe: ended,
                key: key.to_hex(),
            });
        }
        for event in events.iter_mut() {
            if let Event::RoundFinished(round) = event
                && round.shoe == ended
            {
                round.revealed = Some(RevealedShuffle {
                    shoe: ended,
                    key: key.to_hex(),
                });
            }
        }
    }
    if owed.is_some()
        && let Some(Event::RoundFinished(round)) = events
            .iter_mut()
            .find(|e| matches!(e, Event::RoundFinished(round) if round.revealed.is_none()))
    {
        round.revealed = owed.take();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;
    use crate::RoundId;
    use crate::event::FinishedRound;

    fn finished(shoe: u32, hand: u32) -> Event {
        Event::RoundFinished(Box::new(FinishedRound {
            round_id: RoundId::new("T01", shoe, hand),
            table: "T01".to_owned(),
            shoe,
            hand,
            betting_opened_at: 1,
            betting_closed_at: None,
            cards: Vec::new(),
            corrections: Vec::new(),
            void: None,
            result: None,
            bets: BTreeMap::new(),
            settlements: BTreeMap::new(),
            entries: Vec::new(),
            finished_at: 2,
            opened_by: None,
            confirmed_by: None,
            cut_card: false,
            shoe_opening: None,
            revealed: None,
            placements: BTreeMap::new(),
        }))
    }

    fn ended(shoe: u32) -> Event {
        Event::ShoeEnded {
            shoe,
            by: Some("pit boss".to_owned()),
            reason: Some("cards marked".to_owned()),
            at: 3,
            shuffle_key: None,
        }
    }

    fn revealed(event: &Event) -> Option<&RevealedShuffle> {
        match event {
            Event::RoundFinished(round) => round.revealed.as_ref(),
            _ => None,
        }
    }

    /// Only reachable when a shoe is ended while no round is open, which an automated
    /// table leaves no time for today; the key must still reach a signed record.
    #[test]
    fn a_shoe_ended_between_rounds_is_revealed_by_the_next_round_sealed() {
        let key = ShuffleKey::new([9; 32]);
        let order = ShuffledOrder::new(ShoeConfig::default(), Seed::Committed(key)).unwrap();
        let mut owed = None;

        let mut end = vec![ended(1)];
        reveal(&mut end, Some(&order), &mut owed);
        let Event::ShoeEnded { shuffle_key, .. } = &end[0] else {
            unreachable!()
        };
        assert_eq!(shuffle_key.as_deref(), Some(key.to_hex().as_str()));
        assert_eq!(owed.as_ref().map(|r| r.shoe), Some(1));

        // Records without a round keep it owed; the next round sealed carries it.
        let mut nothing = Vec::new();
        reveal(&mut nothing, Some(&order), &mut owed);
        assert!(owed.is_some());
        let mut next = vec![finished(2, 1)];
        reveal(&mut next, None, &mut owed);
        let carried = revealed(&next[0]).unwrap();
        assert_eq!(
            (carried.shoe, carried.key.as_str()),
            (1, key.to_hex().as_str())
        );
        assert!(owed.is_none());

        // A shoe ended by its last round is revealed there, and nothing is owed.
        let mut last = vec![finished(1, 9), ended(1)];
        reveal(&mut last, Some(&order), &mut owed);
        assert_eq!(revealed(&last[0]).map(|r| r.shoe), Some(1));
        assert!(owed.is_none());

        // A shoe the caller seeded (not committed to) reveals nothing.
        let chosen = ShuffledOrder::new(ShoeConfig::default(), Seed::Chosen(7)).unwrap();
        let mut last = vec![finished(1, 9), ended(1)];
        reveal(&mut last, Some(&chosen), &mut owed);
        assert!(revealed(&last[0]).is_none() && owed.is_none());
    }
}
