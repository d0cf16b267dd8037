//! Exact odds, outward only: the validator computes them, clients display them.

use banco_rules::{Probabilities, Rtp};

use crate::pb;

impl From<Probabilities> for pb::Probabilities {
    fn from(p: Probabilities) -> pb::Probabilities {
        pb::Probabilities {
            banker: p.wins.banker,
            player: p.wins.player,
            tie: p.wins.tie,
            player_pair: p.wins.player_pair,
            banker_pair: p.wins.banker_pair,
            either_pair: p.wins.either_pair,
            perfect_pair: p.wins.perfect_pair,
            big: p.wins.big,
            small: p.wins.small,
            banker_win_on_six: p.banker_win_on_six,
        }
    }
}

impl From<Rtp> for pb::Rtp {
    fn from(r: Rtp) -> pb::Rtp {
        pb::Rtp {
            banker: r.banker,
            player: r.player,
            tie: r.tie,
            player_pair: r.player_pair,
            banker_pair: r.banker_pair,
            either_pair: r.either_pair,
            perfect_pair: r.perfect_pair,
            big: r.big,
            small: r.small,
        }
    }
}
