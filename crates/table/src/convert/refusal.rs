//! Refusals: the table's, one position's of a bet request, the rules authority's, and the
//! wallet's of a bet request.

use banco_rules::shoe::ShoeError;
use banco_rules::{BetKind, DealError, Money};
use banco_wallet::WalletError;
use banco_wire::pb;
use pb::RefusalCode as C;

use crate::actor::RefusalKind;
use crate::book::PositionRefusal;
use crate::event::BetRefusal;
use crate::ledger::LedgerError;
use crate::refusal::Refusal;

/// A table refusal on the wire: the best-fitting code, the table's sentence, and the
/// request field at fault when one is known.
impl From<&Refusal> for pb::Refusal {
    fn from(refusal: &Refusal) -> pb::Refusal {
        let (code, field) = match refusal {
            Refusal::NotNow { .. }
            | Refusal::ShoeInPlay { .. }
            | Refusal::BettingStillOpen { .. }
            | Refusal::BeforeDraw { .. } => (C::WrongPhase, ""),
            Refusal::NoShoe { .. } | Refusal::ShoeEnded { .. } => (C::NoShoe, ""),
            Refusal::BurnPending { .. } => (C::BurnPending, ""),
            Refusal::WrongPacing { .. } => (C::NotAllowed, ""),
            Refusal::Deal(DealError::HandComplete { .. }) => (C::HandComplete, "card"),
            Refusal::Shoe(err) => shoe_code(err),
            Refusal::ShoeConfig(_) => (C::NotAllowed, "config"),
            Refusal::NothingToUndo => (C::NothingToUndo, ""),
            Refusal::Missing { field } => (C::NotAllowed, *field),
            Refusal::BettingNotOpen { .. } | Refusal::BettingClosedAt { .. } => {
                (C::BettingClosed, "")
            }
            Refusal::WrongRound { .. } => (C::WrongRound, "round_id"),
            Refusal::NoBetsGiven => (C::NotAllowed, "bets"),
            Refusal::Bets { reasons, .. } => {
                (reasons.0.first().map_or(C::NotAllowed, C::from), "bets")
            }
            Refusal::NoBets { .. } | Refusal::NoPreviousBets { .. } => (C::NotAllowed, ""),
            Refusal::KeyReused { .. } => (C::IdempotencyConflict, "idempotency_key"),
            Refusal::NotPending { .. } => (C::NotAllowed, "idempotency_key"),
            Refusal::Ledger(LedgerError::Insufficient { .. }) => (C::InsufficientFunds, ""),
            Refusal::Ledger(LedgerError::KeyReused { .. }) => (C::IdempotencyConflict, ""),
            Refusal::Ledger(_) | Refusal::Settle(_) => (C::NotAllowed, ""),
            Refusal::CardRefused { code, .. } => (C::from(*code), "card"),
            Refusal::CommandIdReused { .. } => (C::IdempotencyConflict, "command_id"),
            Refusal::NoSeats { .. }
            | Refusal::NoSuchSeat { .. }
            | Refusal::SeatTaken { .. }
            | Refusal::TableFull { .. }
            | Refusal::AlreadySeated { .. }
            | Refusal::NotSeated { .. }
            | Refusal::LeavingWithStakes { .. }
            | Refusal::SeatNeeded { .. } => (C::Seat, ""),
            Refusal::PassNotNow { .. } => (C::WrongPhase, ""),
            Refusal::PassTooLate { .. } => (C::BettingClosed, ""),
            Refusal::PassAfterBet { .. }
            | Refusal::AlreadyPassed { .. }
            | Refusal::BetAfterPass { .. } => (C::NotAllowed, ""),
            Refusal::ChatText { .. } => (C::NotAllowed, "text"),
            Refusal::ChatRateLimited { .. } => (C::RateLimited, ""),
            Refusal::Muted { .. } => (C::Muted, ""),
            Refusal::NotMuted { .. } | Refusal::UnknownPlayer { .. } => {
                (C::NotAllowed, "player_id")
            }
        };
        pb::Refusal {
            code: code.into(),
            message: refusal.to_string(),
            field: field.to_owned(),
        }
    }
}

/// The code of one refused position of a bet request.
impl From<&PositionRefusal> for pb::RefusalCode {
    fn from(refusal: &PositionRefusal) -> pb::RefusalCode {
        match refusal {
            PositionRefusal::UnderMinimum { .. } => C::BelowMinimum,
            PositionRefusal::OverMaximum { .. } | PositionRefusal::ProgressionCap { .. } => {
                C::AboveMaximum
            }
            PositionRefusal::OverSelfLimit { .. } => C::SelfLimit,
            PositionRefusal::NonPositive { .. } | PositionRefusal::TieWithoutMainBet => {
                C::NotAllowed
            }
        }
    }
}

impl From<RefusalKind> for pb::RefusalCode {
    fn from(kind: RefusalKind) -> pb::RefusalCode {
        match kind {
            RefusalKind::Misread => C::Misread,
            RefusalKind::HandComplete => C::HandComplete,
            RefusalKind::BurnPending => C::BurnPending,
            RefusalKind::NoShoe => C::NoShoe,
            RefusalKind::WrongPhase => C::WrongPhase,
            RefusalKind::Other => C::NotAllowed,
        }
    }
}

fn shoe_code(err: &ShoeError) -> (pb::RefusalCode, &'static str) {
    match err {
        ShoeError::Misread(_) | ShoeError::Empty { .. } => (C::Misread, "card"),
        ShoeError::Ended { .. } => (C::NoShoe, ""),
        ShoeError::BurnPending { .. } => (C::BurnPending, "card"),
        ShoeError::BurnNotInUse { .. } => (C::NotAllowed, "exposed_card"),
        ShoeError::AlreadyBurned { .. } | ShoeError::NoHandInProgress { .. } => (C::WrongPhase, ""),
        ShoeError::NothingToUndo { .. } | ShoeError::NotLastCard { .. } => {
            (C::NothingToUndo, "card")
        }
    }
}

/// The position a refused position names (a Tie without a main bet names Tie).
pub fn position_kind(refusal: &PositionRefusal) -> BetKind {
    match refusal {
        PositionRefusal::NonPositive { kind, .. }
        | PositionRefusal::UnderMinimum { kind, .. }
        | PositionRefusal::OverMaximum { kind, .. }
        | PositionRefusal::OverSelfLimit { kind, .. }
        | PositionRefusal::ProgressionCap { kind, .. } => *kind,
        PositionRefusal::TieWithoutMainBet => BetKind::Tie,
    }
}

/// Why the wallet did not take a bet request, for the player: the code, and a sentence in
/// money (of the table's `currency`) as people read it.
pub fn wallet_refusal(error: &WalletError, currency: &str) -> pb::Refusal {
    let money = |minor: i64| Money::new(minor, currency).to_string();
    let (code, message) = match error {
        WalletError::InsufficientFunds { needed, available } => (
            C::InsufficientFunds,
            format!(
                "insufficient funds: the bets need {}, the balance is {}",
                money(*needed),
                money(*available)
            ),
        ),
        WalletError::SelfLimit { limit, asked } => (
            C::SelfLimit,
            format!(
                "{} is over your own limit of {} per bet",
                money(*asked),
                money(*limit)
            ),
        ),
        WalletError::AccountBlocked => (
            C::AccountBlocked,
            "your account is blocked: the casino's cashier can tell you why".to_owned(),
        ),
        WalletError::Unavailable(why) => (
            C::Unavailable,
            format!("the wallet did not answer ({why}); nothing was taken: bet again"),
        ),
        other => (
            C::NotAllowed,
            format!("the wallet refused the bets: {other}"),
        ),
    };
    pb::Refusal {
        code: code.into(),
        message,
        field: "bets".to_owned(),
    }
}

/// A bet request the table took to the wallet and then refused.
pub fn bet_refusal(why: &BetRefusal, currency: &str) -> pb::Refusal {
    match why {
        BetRefusal::Wallet { error } => wallet_refusal(error, currency),
        BetRefusal::BettingClosed { .. } => pb::Refusal {
            code: C::BettingClosed.into(),
            message: why.to_string(),
            field: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::Phase;
    use crate::round_id::RoundId;

    #[test]
    fn a_refusal_names_its_code_and_field() {
        let refusal = Refusal::WrongRound {
            action: "confirm the result",
            asked: RoundId::from("T01-S0001-H0002"),
            current: None,
        };
        let wire = pb::Refusal::from(&refusal);
        assert_eq!(wire.code, i32::from(C::WrongRound));
        assert_eq!(wire.field, "round_id");
        assert_eq!(wire.message, refusal.to_string());
        let not_now = pb::Refusal::from(&Refusal::NotNow {
            action: "burn",
            phase: Phase::Dealing,
        });
        assert_eq!(not_now.code, i32::from(C::WrongPhase));
        assert_eq!(not_now.field, "");
    }

    #[test]
    fn a_tie_without_a_main_bet_names_the_tie() {
        let refusal = PositionRefusal::TieWithoutMainBet;
        assert_eq!(position_kind(&refusal), BetKind::Tie);
        assert_eq!(pb::RefusalCode::from(&refusal), C::NotAllowed);
    }

    #[test]
    fn the_wallet_refusal_tells_money_in_the_tables_currency() {
        let error = WalletError::InsufficientFunds {
            needed: 2_500,
            available: 1_000,
        };
        let wire = wallet_refusal(&error, "EUR");
        assert_eq!(wire.code, i32::from(C::InsufficientFunds));
        assert_eq!(wire.field, "bets");
        assert!(wire.message.contains(&Money::new(2_500, "EUR").to_string()));
        let closed = bet_refusal(
            &BetRefusal::BettingClosed {
                round_id: RoundId::from("T01-S0001-H0002"),
            },
            "EUR",
        );
        assert_eq!(closed.code, i32::from(C::BettingClosed));
    }
}
