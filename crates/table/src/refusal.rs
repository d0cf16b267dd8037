//! Why a command was refused. A refused command changes nothing; the message names the
//! reason so the croupier or the player can act on it.

use banco_rules::shoe::{ShoeConfigError, ShoeError};
use banco_rules::{Card, DealError, SettleError};

use crate::actor::RefusalKind;
use crate::book::PositionRefusals;
use crate::chat::ChatTextProblem;
use crate::currency::Utc;
use crate::ledger::LedgerError;
use crate::phase::Phase;
use crate::policy::Pacing;
use crate::round_id::RoundId;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("cannot {action}: the table is {phase}")]
    NotNow { action: &'static str, phase: Phase },
    #[error("cannot {action}: no shoe is in play; open a shoe first")]
    NoShoe { action: &'static str },
    #[error("cannot {action}: the burn of shoe {shoe} comes first")]
    BurnPending { action: &'static str, shoe: u32 },
    #[error("cannot {action}: shoe {shoe} has ended; open a new shoe")]
    ShoeEnded { action: &'static str, shoe: u32 },
    #[error("cannot open a shoe: shoe {shoe} is still in play; end it first")]
    ShoeInPlay { shoe: u32 },
    #[error("cannot {action} on a {pacing} table")]
    WrongPacing {
        action: &'static str,
        pacing: Pacing,
    },
    #[error("{card} refused: betting is still open: close betting first")]
    BettingStillOpen { card: Card },
    #[error("{card} refused: the draw is at {} (server clock {})", Utc(*draw_at), Utc(*now_ms))]
    BeforeDraw {
        card: Card,
        draw_at: u64,
        now_ms: u64,
    },
    #[error(transparent)]
    Deal(#[from] DealError),
    #[error(transparent)]
    Shoe(#[from] ShoeError),
    #[error(transparent)]
    ShoeConfig(#[from] ShoeConfigError),
    #[error("cannot take a card back: no card of this round has been dealt")]
    NothingToUndo,
    #[error("{field} is required and must not be empty")]
    Missing { field: &'static str },
    #[error("betting is not open (the table is {phase})")]
    BettingNotOpen { phase: Phase },
    #[error("betting closed at {} (server clock {})", Utc(*closes_at), Utc(*now_ms))]
    BettingClosedAt { closes_at: u64, now_ms: u64 },
    /// The request names a round that is not the one in play (a stale screen, or a round
    /// that changed while the request was on its way).
    #[error("cannot {action}: round {asked} is not the round in play ({})", in_play(current.as_ref()))]
    WrongRound {
        action: &'static str,
        asked: RoundId,
        current: Option<RoundId>,
    },
    #[error("no bets in the request")]
    NoBetsGiven,
    #[error("bets of {player} refused: {reasons}")]
    Bets {
        player: String,
        reasons: PositionRefusals,
    },
    #[error("no bet request of {player} under key `{key}` is waiting for the wallet")]
    NotPending { player: String, key: String },
    #[error("{player} has no bets in this round")]
    NoBets { player: String },
    #[error("{player} has no previous bets to repeat")]
    NoPreviousBets { player: String },
    #[error("key `{key}` of {player} was already used for a different request")]
    KeyReused { player: String, key: String },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("settlement refused: {0}")]
    Settle(#[from] SettleError),
    /// The rules authority (validator) refused the card; the table dealt nothing.
    #[error("{card} refused by the rules authority ({code}): {message}")]
    CardRefused {
        card: Card,
        code: RefusalKind,
        message: String,
    },
    #[error("command id `{command_id}` was already used for a different command")]
    CommandIdReused { command_id: String },

    // ----- seats (the broadcaster's REFUSAL_CODE_SEAT) --------------------------------
    #[error("cannot {action}: this table has no seats (everyone bets behind)")]
    NoSeats { action: &'static str },
    #[error("seat {seat} does not exist: this table has seats 1 to {seats}")]
    NoSuchSeat { seat: u8, seats: u8 },
    /// Who sits there is not told.
    #[error("seat {seat} is taken; choose another seat, or seat 0 for any free one")]
    SeatTaken { seat: u8 },
    #[error("the table is full: all {seats} seats are taken")]
    TableFull { seats: u8 },
    #[error("{player} is already seated, at seat {seat}")]
    AlreadySeated { player: String, seat: u8 },
    #[error("{player} is not seated at this table")]
    NotSeated { player: String },
    #[error(
        "{player} cannot leave seat {seat}: their bets on round {round_id} are in play; leave once it is settled"
    )]
    LeavingWithStakes {
        player: String,
        seat: u8,
        round_id: RoundId,
    },
    #[error("{player} needs a seat to bet at this table: take one of its {seats} seats first")]
    SeatNeeded { player: String, seats: u8 },
    #[error("{player} cannot pass: betting is not open (the table is {phase})")]
    PassNotNow { player: String, phase: Phase },
    #[error(
        "{player} cannot pass round {round_id}: passing is allowed within {} of betting opening; betting opened at {} (server clock {})",
        seconds(*window_ms),
        Utc(*opened_at),
        Utc(*now_ms)
    )]
    PassTooLate {
        player: String,
        round_id: RoundId,
        window_ms: u64,
        opened_at: u64,
        now_ms: u64,
    },
    #[error("{player} cannot pass round {round_id}: they have bets on it; clear them first")]
    PassAfterBet { player: String, round_id: RoundId },
    #[error("{player} already passed round {round_id}")]
    AlreadyPassed { player: String, round_id: RoundId },
    #[error("{player} passed round {round_id}: no bets on it")]
    BetAfterPass { player: String, round_id: RoundId },

    // ----- chat ---------------------------------------------------------------------
    /// Bad text (the broadcaster's INVALID / NOT_ALLOWED).
    #[error("chat line of {player} refused: {problem}")]
    ChatText {
        player: String,
        problem: ChatTextProblem,
    },
    /// Too many lines too fast (RATE_LIMITED).
    #[error(
        "chat line of {player} refused: at most {burst} lines within {}; write again from {} (server clock {})",
        seconds(*window_ms),
        Utc(*retry_at),
        Utc(*now_ms)
    )]
    ChatRateLimited {
        player: String,
        burst: u32,
        window_ms: u64,
        retry_at: u64,
        now_ms: u64,
    },
    /// The player is muted (MUTED).
    #[error("chat line of {player} refused: muted until {} ({reason})", Utc(*until))]
    Muted {
        player: String,
        until: u64,
        reason: String,
    },
    #[error("cannot lift the mute of {player}: they are not muted")]
    NotMuted { player: String },
    /// A mute of an id this table has never seen (a typo would silence nobody, or the
    /// wrong player later).
    #[error(
        "cannot mute {player}: no player {player} has chatted, bet, sat or held money at this table"
    )]
    UnknownPlayer { player: String },
}

/// `15 s`, `1.5 s`: a duration in milliseconds, for a person.
fn seconds(ms: u64) -> String {
    let (s, rest) = (ms / 1000, ms % 1000);
    if rest == 0 {
        format!("{s} s")
    } else {
        let frac = format!("{rest:03}");
        format!("{s}.{} s", frac.trim_end_matches('0'))
    }
}

fn in_play(current: Option<&RoundId>) -> String {
    match current {
        Some(current) => format!("that is {current}"),
        None => "no round has been opened".to_owned(),
    }
}
