//! Totals and streaks shown beside the roads.

use serde::Serialize;

use crate::outcome::{Side, Winner};

/// The run of wins the table is on. Ties neither extend nor break it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Streak {
    /// `"B"` or `"P"` on the wire.
    #[serde(serialize_with = "super::serialize_side_letter")]
    pub side: Side,
    pub length: u32,
}

/// Counts over every result recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Stats {
    pub banker: u32,
    pub player: u32,
    pub tie: u32,
    /// All results, ties included.
    pub hands: u32,
    /// `None` until the first Banker or Player win.
    pub streak: Option<Streak>,
    pub longest_banker: u32,
    pub longest_player: u32,
}

impl Stats {
    pub fn push(&mut self, winner: Winner) {
        self.hands = self.hands.saturating_add(1);
        let side = match winner {
            Winner::Tie => {
                self.tie = self.tie.saturating_add(1);
                return;
            }
            Winner::Banker => {
                self.banker = self.banker.saturating_add(1);
                Side::Banker
            }
            Winner::Player => {
                self.player = self.player.saturating_add(1);
                Side::Player
            }
        };
        let length = match self.streak {
            Some(streak) if streak.side == side => streak.length.saturating_add(1),
            _ => 1,
        };
        self.streak = Some(Streak { side, length });
        let longest = match side {
            Side::Banker => &mut self.longest_banker,
            Side::Player => &mut self.longest_player,
        };
        *longest = (*longest).max(length);
    }

    /// How many of `side`'s wins were recorded.
    pub fn wins(&self, side: Side) -> u32 {
        match side {
            Side::Banker => self.banker,
            Side::Player => self.player,
        }
    }
}
