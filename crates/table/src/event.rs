//! Events: what an accepted command did, for subscribers, the console and the archive.
//!
//! Events are facts in the order they happened. The actor numbers them (`seq`) and decides
//! who sees them: [`Event::private_to`] names the player an event belongs to (bets,
//! balances, own settlement); the others are public.

use std::collections::BTreeMap;

use banco_rules::shoe::{Burn, ShoeConfig};
use banco_rules::{BetKind, Card, CoupResult, Due, Settlement, Side, Winner};
use serde::{Deserialize, Serialize};

use crate::book::{PositionTotal, Raise, Stakes};
use crate::command::CardSource;
use crate::phase::{DealtCard, VoidRecord};
use crate::round_id::RoundId;
use crate::wallet_book::{Owed, PendingRequest};

pub use banco_records::round::{
    BurnRecord, FinishedRound, Placement, RevealedShuffle, ShoeOpening,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    ShoeOpened {
        shoe: u32,
        config: ShoeConfig,
        by: String,
        at: u64,
        /// On a shoe the table shuffled itself: the commitment to its shuffle key (see
        /// [`crate::fairness`]), revealed in the `ShoeEnded` event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commitment: Option<String>,
    },
    Burned {
        shoe: u32,
        burn: Burn,
        by: String,
        at: u64,
    },
    BettingOpened {
        round_id: RoundId,
        opened_at: u64,
        closes_at: Option<u64>,
        /// This round is the last of the shoe (the cut card came out in the previous one).
        last_hand: bool,
    },
    BettingClosed {
        round_id: RoundId,
        closed_at: u64,
        /// Automated tables: the first card comes at this time.
        draw_at: Option<u64>,
    },
    CardDealt {
        round_id: RoundId,
        card: Card,
        to: Side,
        /// What the next card is for; `Complete` when the coup is over.
        due_next: Due,
        source: CardSource,
        at: u64,
    },
    /// The cut card came out with the last card: this hand is finished, one more is played.
    CutCardOut {
        round_id: RoundId,
    },
    CardUndone {
        round_id: RoundId,
        card: Card,
        reason: String,
        by: String,
        at: u64,
        due_next: Due,
    },
    Result {
        round_id: RoundId,
        result: CoupResult,
    },
    Settled {
        round_id: RoundId,
        /// Every settlement of every player, in position order.
        players: BTreeMap<String, Vec<Settlement>>,
        /// The house's gain (positive) or loss on the round.
        house_net: i64,
        at: u64,
    },
    RoundVoided {
        round_id: RoundId,
        void: VoidRecord,
        /// Total refunded to each player.
        refunds: BTreeMap<String, i64>,
    },
    BetsAccepted {
        player: String,
        round_id: RoundId,
        key: String,
        /// What was added to each position, after raises.
        bets: Vec<(BetKind, i64)>,
        raised: Vec<Raise>,
        /// The player's stakes in the round after this request.
        stakes: Stakes,
    },
    /// A bet request passed the table's checks; its debits are out at the wallet, and it
    /// is accepted ([`Event::BetsAccepted`]) or refused ([`Event::BetsRefused`]) once the
    /// wallet has answered. Private to the player; the actor sends the debits once this is
    /// journaled.
    BetsPending {
        request: PendingRequest,
    },
    /// A bet request that passed the table's checks was not taken after all: the wallet
    /// refused a debit or did not answer, or betting closed first. Every debit of it is
    /// cancelled ([`Event::WalletOwed`]).
    BetsRefused {
        player: String,
        round_id: RoundId,
        key: String,
        /// The bets the request asked for, after raises.
        bets: Vec<(BetKind, i64)>,
        why: BetRefusal,
    },
    /// Movements the table now owes the wallet (credits of a settlement, refunds, cancels),
    /// sent by the actor in this order until acknowledged.
    WalletOwed {
        owed: Vec<Owed>,
    },
    /// The wallet acknowledged these owed movements ([`crate::wallet_book::Owed::number`]).
    WalletAcked {
        numbers: Vec<u64>,
    },
    BetsCleared {
        player: String,
        round_id: RoundId,
        key: String,
        refunded: Stakes,
    },
    /// Everyone's bets on each position after a change (public).
    BetTotals {
        round_id: RoundId,
        totals: BTreeMap<BetKind, PositionTotal>,
    },
    /// The next round will be the shoe's last.
    LastHand {
        shoe: u32,
    },
    ShoeEnded {
        shoe: u32,
        /// The croupier who ended it early; `None` when it ran out after its last hand.
        by: Option<String>,
        /// Why the croupier ended it early; `None` when it ran out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        at: u64,
        /// The shoe's shuffle key, revealed now that no card of it is to come (on a shoe
        /// opened with a commitment).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shuffle_key: Option<String>,
    },
    /// A player's available balance changed: once per player per command.
    BalanceChanged {
        player: String,
        /// Available to bet, after the change.
        balance: i64,
        /// The change of `balance` (negative for a bet or a withdrawal).
        delta: i64,
        /// The player's stakes on the round under way, after the change.
        in_play: i64,
        /// What the table owes the player and the wallet has not taken yet (a payout while
        /// the wallet is down): not in `balance` until it is.
        pending: i64,
        reason: BalanceReason,
    },
    /// A player sat down (public: everyone sees who sits where).
    SeatTaken {
        player: String,
        seat: u8,
    },
    SeatLeft {
        player: String,
        seat: u8,
    },
    /// A seated player skips this round.
    HandPassed {
        player: String,
        round_id: RoundId,
        seat: u8,
    },
    /// A chat line, with blocked words masked (the journal keeps the command as typed).
    Chat {
        player: String,
        text: String,
        at: u64,
    },
    /// A player was muted until `until`, or unmuted (`None`). Private to that player (the
    /// croupier's console sees every event).
    PlayerMuted {
        player: String,
        until: Option<u64>,
        reason: String,
        by: String,
    },
    /// A retried request (same idempotency key): this is its original result; nothing
    /// changed. The actor answers the caller with it and publishes nothing.
    Replayed {
        player: String,
        key: String,
        original: Vec<Event>,
    },
    /// The record of a settled or voided round, for the archive outbox.
    RoundFinished(Box<FinishedRound>),
}

impl Event {
    /// The player an event is private to; `None` for public events.
    pub fn private_to(&self) -> Option<&str> {
        match self {
            Event::BetsAccepted { player, .. }
            | Event::BetsCleared { player, .. }
            | Event::BalanceChanged { player, .. }
            | Event::BetsPending {
                request: PendingRequest { player, .. },
            }
            | Event::BetsRefused { player, .. }
            | Event::PlayerMuted { player, .. }
            | Event::Replayed { player, .. } => Some(player),
            _ => None,
        }
    }
}

/// Why a player's balance changed ([`Event::BalanceChanged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BalanceReason {
    /// Stakes placed (PlaceBets, Rebet).
    Bet,
    /// Stakes taken back (ClearBets).
    Clear,
    /// A bet's settlement was credited (stake back and winnings; nothing for a lost bet).
    Settlement,
    /// A stake of a voided round was refunded.
    VoidRefund,
    /// A debit of a refused bet request was cancelled.
    Cancelled,
    /// The cashier or another table (told by the wallet).
    Elsewhere,
}

/// Why a bet request that passed the table's own checks was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum BetRefusal {
    #[error("the wallet did not take the bets: {error}")]
    Wallet { error: banco_wallet::WalletError },
    #[error("betting on {round_id} closed before the wallet answered; nothing was taken")]
    BettingClosed { round_id: RoundId },
}

/// What a console or a new subscriber is shown of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSnapshot {
    pub table: String,
    pub phase: crate::phase::Phase,
    pub shoe: Option<u32>,
    pub shoe_state: Option<banco_rules::ShoeState>,
    pub cards_left: Option<u16>,
    pub round_id: Option<RoundId>,
    /// When betting opened on the round under way (`None` between rounds).
    #[serde(default)]
    pub opened_at: Option<u64>,
    /// While betting is open on a timed table: when it closes (for a countdown).
    #[serde(default)]
    pub closes_at: Option<u64>,
    pub cards: Vec<DealtCard>,
    /// What the next card is for, while cards may be dealt.
    pub due: Option<Due>,
    pub player_total: u8,
    pub banker_total: u8,
    pub bet_totals: BTreeMap<BetKind, PositionTotal>,
    /// Distinct players with a stake in the round.
    pub bettors: u32,
    /// Every result of the shoe (settled rounds; voided ones have none), oldest first: the
    /// whole shoe's roads are drawn from them. Empty once a new shoe opens.
    pub results: Vec<Winner>,
    /// The burn of the shoe in play, once burned: the exposed card and how many more went
    /// face down.
    #[serde(default)]
    pub burn: Option<Burn>,
    /// What the round moved, once it is settled or voided.
    #[serde(default)]
    pub totals: Option<RoundTotals>,
}

impl TableSnapshot {
    /// The shoe's last [`banco_rules::roads::LAST_RESULTS_SHOWN`] results, oldest first:
    /// the history strip players see.
    pub fn last_results(&self) -> &[Winner] {
        let shown = banco_rules::roads::LAST_RESULTS_SHOWN;
        &self.results[self.results.len().saturating_sub(shown)..]
    }
}

/// The money of one finished round, in minor units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundTotals {
    /// Every stake of the round.
    pub staked: i64,
    /// Paid back to the players: stakes and winnings of the bets that won, the stakes of
    /// those that pushed; every stake when the round was voided.
    pub returned: i64,
}

impl RoundTotals {
    /// What the house kept: negative when it paid out more than was staked.
    pub const fn house_result(&self) -> i64 {
        self.staked - self.returned
    }
}
