//! The shoe in a simulated reader: one seeded shuffle of the table's decks, and the next
//! card out (the burn skips the cards it counts face down, which are never scanned).

use anyhow::Context as _;
use banco_rules::Card;
use banco_rules::shoe::{Shoe, ShoeConfig};
use rand_chacha::ChaCha20Rng;

/// The shoe in the reader: its order, and the next card out.
#[derive(Debug)]
pub(crate) struct Cards {
    pub(crate) id: String,
    order: Vec<Card>,
    next: usize,
    /// The round being dealt and where in the shoe its first card was.
    round: Option<(String, usize)>,
}

impl Cards {
    pub(crate) fn shuffle(id: &str, decks: u8, rng: &mut ChaCha20Rng) -> anyhow::Result<Cards> {
        let config = ShoeConfig {
            decks,
            ..ShoeConfig::default()
        };
        let shoe = Shoe::shuffled(config, rng).context("--decks")?;
        Ok(Cards {
            id: id.to_owned(),
            order: shoe.order().to_vec(),
            next: 0,
            round: None,
        })
    }

    /// The exposed card; the ones it burns face down are skipped (never scanned).
    pub(crate) fn burn(&mut self) -> Option<(Card, u8)> {
        let exposed = *self.order.get(self.next)?;
        let face_down = banco_rules::shoe::burn_count(exposed);
        self.next += 1 + usize::from(face_down);
        Some((exposed, face_down))
    }

    pub(crate) fn next_card(&mut self) -> Option<Card> {
        let card = *self.order.get(self.next)?;
        self.next += 1;
        Some(card)
    }

    /// The card of `round` after its first `dealt`: a card the croupier took back and put
    /// back in the shoe is read again, as a real reader reads it the second time it comes
    /// out.
    pub(crate) fn card_of(&mut self, round: &str, dealt: usize) -> Option<Card> {
        let start = match &self.round {
            Some((id, start)) if id == round => *start,
            _ => {
                self.round = Some((round.to_owned(), self.next));
                self.next
            }
        };
        let at = start + dealt;
        let card = *self.order.get(at)?;
        self.next = self.next.max(at + 1);
        Some(card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng as _;

    #[test]
    fn the_burn_skips_what_it_counts() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut shoe = Cards::shuffle("T01-S0001", 8, &mut rng).unwrap_or_else(|e| panic!("{e}"));
        let order = shoe.order.clone();
        let (exposed, face_down) = shoe.burn().unwrap_or_else(|| panic!("empty"));
        assert_eq!(exposed, order[0]);
        assert!((1..=10).contains(&face_down));
        assert_eq!(shoe.next_card(), Some(order[1 + usize::from(face_down)]));
    }

    #[test]
    fn a_card_taken_back_is_read_again() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut shoe = Cards::shuffle("T01-S0001", 8, &mut rng).unwrap_or_else(|e| panic!("{e}"));
        let order = shoe.order.clone();
        let card = |shoe: &mut Cards, round, dealt| {
            shoe.card_of(round, dealt)
                .unwrap_or_else(|| panic!("empty"))
        };
        assert_eq!(card(&mut shoe, "H001", 0), order[0]);
        assert_eq!(card(&mut shoe, "H001", 1), order[1]);
        assert_eq!(card(&mut shoe, "H001", 2), order[2]);
        // The third card undone: it comes out again, and the shoe goes on after it.
        assert_eq!(card(&mut shoe, "H001", 2), order[2]);
        assert_eq!(card(&mut shoe, "H001", 3), order[3]);
        // The next round starts after the last card out.
        assert_eq!(card(&mut shoe, "H002", 0), order[4]);
    }
}
