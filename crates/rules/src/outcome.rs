//! Who won a coup.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One of the two hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Player,
    Banker,
}

/// The outcome of a coup: the higher total wins, equal totals tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Winner {
    Player,
    Banker,
    Tie,
}

impl Winner {
    pub fn from_totals(player_total: u8, banker_total: u8) -> Winner {
        match player_total.cmp(&banker_total) {
            std::cmp::Ordering::Greater => Winner::Player,
            std::cmp::Ordering::Less => Winner::Banker,
            std::cmp::Ordering::Equal => Winner::Tie,
        }
    }

    /// `B`, `P` or `T`, as on a scoreboard.
    pub const fn letter(self) -> char {
        match self {
            Winner::Player => 'P',
            Winner::Banker => 'B',
            Winner::Tie => 'T',
        }
    }

    /// Reads `B`, `P` or `T` (any case).
    pub fn from_letter(c: char) -> Option<Winner> {
        match c.to_ascii_uppercase() {
            'P' => Some(Winner::Player),
            'B' => Some(Winner::Banker),
            'T' => Some(Winner::Tie),
            _ => None,
        }
    }

    pub const fn side(self) -> Option<Side> {
        match self {
            Winner::Player => Some(Side::Player),
            Winner::Banker => Some(Side::Banker),
            Winner::Tie => None,
        }
    }
}

impl fmt::Display for Winner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Winner::Player => "player",
            Winner::Banker => "banker",
            Winner::Tie => "tie",
        })
    }
}

/// The two totals of a coup, always Player first (the dealing order), so that every screen,
/// overlay and report reads them the same way: `Player 7 – Banker 9`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Score {
    pub player: u8,
    pub banker: u8,
}

impl Score {
    pub fn winner(self) -> Winner {
        Winner::from_totals(self.player, self.banker)
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Player {} – Banker {}", self.player, self.banker)
    }
}
