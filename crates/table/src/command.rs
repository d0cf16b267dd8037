//! Commands: everything that can change a table, with the time it happened.
//!
//! The time is part of the command (`now_ms`, unix milliseconds read from the server clock
//! by the actor), never read inside the table, so that replaying journaled commands
//! rebuilds the same state. The journal holds them in their stored form
//! ([`banco_records::journal::Command`]), which they convert to and from.

use banco_rules::shoe::ShoeConfig;
use banco_rules::{BetKind, Card};
use banco_wallet::WalletError;

use crate::round_id::RoundId;

mod journaled;

pub use banco_records::round::CardSource;

/// What the wallet did with every debit of one bet request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebitOutcome {
    /// Every debit was taken; the player's available balance after them, and the account's
    /// version with it ([`banco_wallet::AccountView::version`]).
    Taken { balance: i64, version: Option<u64> },
    /// Not every debit was taken (a refusal, or no answer in time): the request is refused
    /// and every one of its debits cancelled.
    Refused { error: WalletError },
}

/// The wallet's answer to the debits of one pending bet request, in a
/// [`Command::WalletDebitedMany`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebitAnswer {
    pub player: String,
    pub key: String,
    pub outcome: DebitOutcome,
}

/// The wallet's acknowledgement of one owed movement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalletAck {
    /// [`crate::wallet_book::Owed::number`].
    pub number: u64,
    /// The player's available balance after it, when the wallet said.
    pub balance: Option<i64>,
    /// The account's version with that balance, when the wallet numbers them.
    pub version: Option<u64>,
}

/// One command to a table. See [`crate::Table::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A freshly shuffled shoe goes into play (the previous one must have ended).
    OpenShoe {
        config: ShoeConfig,
        by: String,
        now_ms: u64,
        /// Set by the actor of a table that shuffles itself: the commitment to the shoe's
        /// shuffle key (see [`crate::fairness`]); `None` from a croupier.
        commitment: Option<String>,
    },
    /// The burn: the first card is exposed and as many burned as it counts.
    Burn {
        exposed: Card,
        by: String,
        now_ms: u64,
    },
    /// The croupier takes the shoe out of play between rounds, saying why (recorded in the
    /// [`crate::Event::ShoeEnded`] event and the journal).
    EndShoe {
        reason: String,
        by: String,
        now_ms: u64,
    },
    /// Opens betting on the next round.
    OpenBetting { by: String, now_ms: u64 },
    /// Closes betting (live croupier, or an operator on any table).
    CloseBetting { by: String, now_ms: u64 },
    /// The clock moved: closes betting once `now_ms >= closes_at`. Does nothing otherwise.
    Tick { now_ms: u64 },
    /// Single-player tables: the player's own deal closes betting.
    Deal { player: String, now_ms: u64 },
    DealCard {
        card: Card,
        source: CardSource,
        now_ms: u64,
    },
    /// Takes back the last card (before the result is confirmed), with a reason.
    UndoLastCard {
        reason: String,
        by: String,
        now_ms: u64,
    },
    /// The croupier confirms the result: every bet is settled. `round_id` is the round the
    /// croupier saw: any other round in play refuses the command
    /// ([`crate::Refusal::WrongRound`]), decided by the table itself so that no round can
    /// change between a check and the command.
    ConfirmResult {
        round_id: RoundId,
        by: String,
        now_ms: u64,
    },
    /// Voids the round (malfunction): every stake is refunded. `round_id` as for
    /// `ConfirmResult`.
    VoidRound {
        round_id: RoundId,
        reason: String,
        by: String,
        now_ms: u64,
    },
    /// Adds stakes to positions of the open round, all or nothing.
    PlaceBets {
        player: String,
        round_id: RoundId,
        bets: Vec<(BetKind, i64)>,
        key: String,
        now_ms: u64,
    },
    /// Takes back all of the player's bets of the open round. With `round_id`, only if
    /// that is the round open for bets ([`crate::Refusal::WrongRound`] otherwise).
    ClearBets {
        player: String,
        round_id: Option<RoundId>,
        key: String,
        now_ms: u64,
    },
    /// Places the bets of the player's last settled round again, on the open round (with
    /// `round_id`: only if that is the round open for bets).
    Rebet {
        player: String,
        round_id: Option<RoundId>,
        key: String,
        now_ms: u64,
    },
    /// The wallet's answer to the debits of a bet request ([`crate::Event::BetsPending`]),
    /// sent by the actor and journaled like any command, so that a replay decides the
    /// request as it was decided.
    WalletDebited {
        player: String,
        key: String,
        outcome: DebitOutcome,
        now_ms: u64,
    },
    /// The wallet's answers to the debits of several bet requests, sent to it together
    /// (the requests that became durable in one group commit): one record for them all.
    /// Each is decided as a [`Command::WalletDebited`] is, in order; one whose request is
    /// no longer pending changes nothing.
    WalletDebitedMany {
        answers: Vec<DebitAnswer>,
        now_ms: u64,
    },
    /// The wallet acknowledged owed movements ([`crate::WalletBook::owed`]).
    WalletAcked { acks: Vec<WalletAck>, now_ms: u64 },
    /// A player's balance changed outside this table (the cashier, another table), told
    /// by the wallet: the player's subscriptions here show it.
    WalletChanged {
        player: String,
        balance: i64,
        delta: i64,
        /// `deposit`, `withdrawal`, or what the other table did.
        reason: String,
        /// The account's version with `balance`, when the wallet numbers them.
        version: Option<u64>,
        now_ms: u64,
    },
    /// A player sits down: `seat` is 1-based; 0 takes the lowest free seat.
    TakeSeat {
        player: String,
        seat: u8,
        now_ms: u64,
    },
    /// A player gives up their seat (not while they have stakes in the round under way).
    LeaveSeat { player: String, now_ms: u64 },
    /// A seated player skips the open round, within the pass window of betting opening.
    PassHand {
        player: String,
        round_id: RoundId,
        now_ms: u64,
    },
    /// A chat line, as typed (the event carries it trimmed and masked).
    Chat {
        player: String,
        text: String,
        now_ms: u64,
    },
    /// The croupier or an operator mutes a player's chat for `minutes` (0 lifts the mute).
    MutePlayer {
        player: String,
        minutes: u32,
        reason: String,
        by: String,
        now_ms: u64,
    },
}

/// The `now_ms` field of any command (a reference to it: shared or mutable, as the
/// command is borrowed), written once for both accessors below.
macro_rules! now_ms_of {
    ($command:expr) => {
        match $command {
            Command::OpenShoe { now_ms, .. }
            | Command::Burn { now_ms, .. }
            | Command::EndShoe { now_ms, .. }
            | Command::OpenBetting { now_ms, .. }
            | Command::CloseBetting { now_ms, .. }
            | Command::Tick { now_ms }
            | Command::Deal { now_ms, .. }
            | Command::DealCard { now_ms, .. }
            | Command::UndoLastCard { now_ms, .. }
            | Command::ConfirmResult { now_ms, .. }
            | Command::VoidRound { now_ms, .. }
            | Command::PlaceBets { now_ms, .. }
            | Command::ClearBets { now_ms, .. }
            | Command::Rebet { now_ms, .. }
            | Command::WalletDebited { now_ms, .. }
            | Command::WalletDebitedMany { now_ms, .. }
            | Command::WalletAcked { now_ms, .. }
            | Command::WalletChanged { now_ms, .. }
            | Command::TakeSeat { now_ms, .. }
            | Command::LeaveSeat { now_ms, .. }
            | Command::PassHand { now_ms, .. }
            | Command::Chat { now_ms, .. }
            | Command::MutePlayer { now_ms, .. } => now_ms,
        }
    };
}

impl Command {
    /// Sets the server time the command carries. The actor stamps every command with its
    /// clock just before applying it; callers build commands with `now_ms: 0`.
    pub fn stamp(&mut self, now: u64) {
        *now_ms_of!(self) = now;
    }

    /// The server time the command carries.
    pub const fn now_ms(&self) -> u64 {
        *now_ms_of!(self)
    }
}
