//! Where a table is in its round, and the records a round keeps of its cards.
//!
//! ```text
//! NoShoe ─OpenShoe→ Idle ─OpenBetting→ BettingOpen ─CloseBetting│Tick│Deal→ BettingClosed
//!   ─DealCard→ Dealing ─DealCard…→ Result ─ConfirmResult→ Settled ─OpenBetting→ BettingOpen …
//! BettingOpen │ BettingClosed │ Dealing │ Result ─VoidRound→ Voided ─OpenBetting→ …
//! ```
//! The shoe's own state (burn due, cut card out, last hand, ended) is the shoe's; a round
//! can open only on a shoe in play.

use std::fmt;

use serde::{Deserialize, Serialize};

pub use banco_records::round::{Correction, DealtCard, VoidRecord};

/// The phase of the table's round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// No shoe opened yet, or the croupier ended it. (A shoe that runs out after its last
    /// hand leaves the phase `Settled` or `Voided`, with no shoe in play.)
    NoShoe,
    /// A shoe is in play and no round has been opened on it yet.
    Idle,
    /// Bets are taken while the server clock is before `closes_at` (if any).
    BettingOpen {
        opened_at: u64,
        closes_at: Option<u64>,
    },
    /// No more bets; no card yet. On automated tables no card before `draw_at`.
    BettingClosed {
        closed_at: u64,
        draw_at: Option<u64>,
    },
    /// At least one card dealt, more are due.
    Dealing,
    /// The coup is complete; the croupier confirms it (or takes a card back, or voids).
    Result,
    /// Every bet settled.
    Settled,
    /// Voided; every stake refunded.
    Voided,
}

impl Phase {
    /// A round is under way: it must be settled or voided before the shoe can change.
    pub const fn round_in_progress(self) -> bool {
        matches!(
            self,
            Phase::BettingOpen { .. }
                | Phase::BettingClosed { .. }
                | Phase::Dealing
                | Phase::Result
        )
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::NoShoe => "without a shoe",
            Phase::Idle => "idle",
            Phase::BettingOpen { .. } => "open for bets",
            Phase::BettingClosed { .. } => "closed for bets, awaiting the first card",
            Phase::Dealing => "dealing",
            Phase::Result => "showing a result to confirm",
            Phase::Settled => "settled",
            Phase::Voided => "voided",
        })
    }
}
