//! How many of each of the 52 cards a shoe holds: the one fact both the misread check
//! and the exact odds need.

use crate::card::{Card, Rank};

/// The most decks a shoe may hold (docs/src/rules/cards-and-shoe.md: 1 to 8).
pub const MAX_DECKS: u8 = 8;

/// A count per card, in shoe-reader index order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Composition {
    counts: [u16; 52],
}

/// A deck count outside 1..=8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} decks: a shoe holds 1 to 8 decks")]
pub struct BadDeckCount(pub u8);

/// A card that is not left in the shoe: seeing it again would be impossible, so the scan
/// or the keystroke that produced it is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{card} cannot be dealt: all {decks_worth} of it are already out of this shoe (misread?)")]
pub struct NotInShoe {
    pub card: Card,
    /// How many of this card the shoe started with.
    pub decks_worth: u16,
}

impl Composition {
    /// A full shoe of `decks` 52-card decks.
    pub fn full(decks: u8) -> Result<Composition, BadDeckCount> {
        if decks == 0 || decks > MAX_DECKS {
            return Err(BadDeckCount(decks));
        }
        Ok(Composition {
            counts: [u16::from(decks); 52],
        })
    }

    /// A composition with explicit counts (index order, see [`Card::index`]).
    pub const fn from_counts(counts: [u16; 52]) -> Composition {
        Composition { counts }
    }

    pub const fn counts(&self) -> &[u16; 52] {
        &self.counts
    }

    pub fn count(&self, card: Card) -> u16 {
        self.counts[usize::from(card.index())]
    }

    /// Cards left in all.
    pub fn len(&self) -> u32 {
        self.counts.iter().map(|&c| u32::from(c)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// Takes one `card` out, or refuses and changes nothing when none is left.
    /// `decks` is only used to word the error.
    pub fn remove(&mut self, card: Card, decks: u8) -> Result<(), NotInShoe> {
        let slot = &mut self.counts[usize::from(card.index())];
        if *slot == 0 {
            return Err(NotInShoe {
                card,
                decks_worth: u16::from(decks),
            });
        }
        *slot -= 1;
        Ok(())
    }

    /// Puts one `card` back (an undo).
    pub fn put_back(&mut self, card: Card) {
        let slot = &mut self.counts[usize::from(card.index())];
        *slot = slot.saturating_add(1);
    }

    /// Cards left per rank, ace first (index = rank number − 1).
    pub fn rank_counts(&self) -> [u32; 13] {
        let mut out = [0u32; 13];
        for card in Card::ALL {
            out[usize::from(card.rank().index())] += u32::from(self.count(card));
        }
        out
    }

    /// Cards left per baccarat value 0..=9 (tens and court cards are 0).
    pub fn value_counts(&self) -> [u32; 10] {
        let mut out = [0u32; 10];
        for card in Card::ALL {
            out[usize::from(card.value())] += u32::from(self.count(card));
        }
        out
    }

    pub fn rank_count(&self, rank: Rank) -> u32 {
        self.rank_counts()[usize::from(rank.index())]
    }
}
