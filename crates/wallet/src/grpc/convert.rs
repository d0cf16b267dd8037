//! Between WalletService's wire messages and the wallet's own types, as `banco-wire` does
//! it: `From` outward, `TryFrom` inward with a [`ConversionError`] naming the field path.
//! The server converts requests in and answers out; [`super::GrpcWallet`] the other way.

use banco_wire::convert::{ms_of_timestamp, timestamp_of_ms};
use banco_wire::{ConversionError, pb};

use crate::api::{
    AccountView, BalanceChange, Cancel, Cash, Credit, CreditKind, Debit, Receipt, SelfLimit, TxId,
    WalletError,
};
use crate::store::{Kind, Movement};

/// The transaction id in `field`.
pub(crate) fn tx_id(field: &str, text: &str) -> Result<TxId, ConversionError> {
    TxId::new(text).map_err(|e| ConversionError::invalid(field, format!("{text:?}"), e.to_string()))
}

/// A limit in `field`: 0 is none, a negative one is invalid.
fn limit(field: &str, minor: i64) -> Result<Option<i64>, ConversionError> {
    match minor {
        0 => Ok(None),
        m if m > 0 => Ok(Some(m)),
        m => Err(ConversionError::invalid(
            field,
            m.to_string(),
            "a limit is more than zero (0: none)",
        )),
    }
}

impl From<Kind> for pb::MovementKind {
    fn from(kind: Kind) -> pb::MovementKind {
        match kind {
            Kind::Debit => pb::MovementKind::Debit,
            Kind::Credit => pb::MovementKind::Credit,
            Kind::Cancel => pb::MovementKind::Cancel,
            Kind::Deposit => pb::MovementKind::Deposit,
            Kind::Withdrawal => pb::MovementKind::Withdrawal,
        }
    }
}

/// The movement kind in `field`.
pub(crate) fn kind(field: &str, raw: i32) -> Result<Kind, ConversionError> {
    match pb::MovementKind::try_from(raw) {
        Ok(pb::MovementKind::Debit) => Ok(Kind::Debit),
        Ok(pb::MovementKind::Credit) => Ok(Kind::Credit),
        Ok(pb::MovementKind::Cancel) => Ok(Kind::Cancel),
        Ok(pb::MovementKind::Deposit) => Ok(Kind::Deposit),
        Ok(pb::MovementKind::Withdrawal) => Ok(Kind::Withdrawal),
        Ok(pb::MovementKind::Unspecified) => Err(ConversionError::missing(field)),
        Err(_) => Err(ConversionError::invalid(
            field,
            raw.to_string(),
            "not a MovementKind",
        )),
    }
}

impl From<CreditKind> for pb::CreditKind {
    fn from(kind: CreditKind) -> pb::CreditKind {
        match kind {
            CreditKind::Settlement => pb::CreditKind::Settlement,
            CreditKind::Refund => pb::CreditKind::Refund,
        }
    }
}

fn credit_kind(field: &str, raw: i32) -> Result<CreditKind, ConversionError> {
    match pb::CreditKind::try_from(raw) {
        Ok(pb::CreditKind::Settlement) => Ok(CreditKind::Settlement),
        Ok(pb::CreditKind::Refund) => Ok(CreditKind::Refund),
        Ok(pb::CreditKind::Unspecified) => Err(ConversionError::missing(field)),
        Err(_) => Err(ConversionError::invalid(
            field,
            raw.to_string(),
            "not a CreditKind",
        )),
    }
}

impl From<&Debit> for pb::DebitRequest {
    fn from(d: &Debit) -> pb::DebitRequest {
        pb::DebitRequest {
            tx_id: d.tx.to_string(),
            player_id: d.player.clone(),
            currency: d.currency.clone(),
            amount_minor: d.amount,
            table_id: d.table.clone(),
            round_id: d.round.clone(),
            bet: d.bet.clone(),
            position_total_minor: d.position_total,
        }
    }
}

impl TryFrom<pb::DebitRequest> for Debit {
    type Error = ConversionError;
    fn try_from(d: pb::DebitRequest) -> Result<Debit, ConversionError> {
        Ok(Debit {
            tx: tx_id("tx_id", &d.tx_id)?,
            player: d.player_id,
            currency: d.currency,
            amount: d.amount_minor,
            table: d.table_id,
            round: d.round_id,
            bet: d.bet,
            position_total: d.position_total_minor,
        })
    }
}

impl From<&Credit> for pb::CreditRequest {
    fn from(c: &Credit) -> pb::CreditRequest {
        pb::CreditRequest {
            tx_id: c.tx.to_string(),
            player_id: c.player.clone(),
            currency: c.currency.clone(),
            amount_minor: c.amount,
            kind: pb::CreditKind::from(c.kind).into(),
            table_id: c.table.clone(),
            round_id: c.round.clone(),
            bet: c.bet.clone(),
            debit_tx_ids: c.debits.iter().map(ToString::to_string).collect(),
        }
    }
}

impl TryFrom<pb::CreditRequest> for Credit {
    type Error = ConversionError;
    fn try_from(c: pb::CreditRequest) -> Result<Credit, ConversionError> {
        let debits = c
            .debit_tx_ids
            .iter()
            .enumerate()
            .map(|(i, id)| tx_id(&format!("debit_tx_ids[{i}]"), id))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Credit {
            tx: tx_id("tx_id", &c.tx_id)?,
            kind: credit_kind("kind", c.kind)?,
            player: c.player_id,
            currency: c.currency,
            amount: c.amount_minor,
            table: c.table_id,
            round: c.round_id,
            bet: c.bet,
            debits,
        })
    }
}

impl From<&Cancel> for pb::CancelRequest {
    fn from(c: &Cancel) -> pb::CancelRequest {
        pb::CancelRequest {
            tx_id: c.tx.to_string(),
            debit_tx_id: c.debit.to_string(),
            player_id: c.player.clone(),
            currency: c.currency.clone(),
            amount_minor: c.amount,
            table_id: c.table.clone(),
            round_id: c.round.clone(),
        }
    }
}

impl TryFrom<pb::CancelRequest> for Cancel {
    type Error = ConversionError;
    fn try_from(c: pb::CancelRequest) -> Result<Cancel, ConversionError> {
        Ok(Cancel {
            tx: tx_id("tx_id", &c.tx_id)?,
            debit: tx_id("debit_tx_id", &c.debit_tx_id)?,
            player: c.player_id,
            currency: c.currency,
            amount: c.amount_minor,
            table: c.table_id,
            round: c.round_id,
        })
    }
}

impl From<&Cash> for pb::CashRequest {
    fn from(c: &Cash) -> pb::CashRequest {
        pb::CashRequest {
            key: c.key.to_string(),
            player_id: c.player.clone(),
            currency: c.currency.clone(),
            amount_minor: c.amount,
        }
    }
}

impl TryFrom<pb::CashRequest> for Cash {
    type Error = ConversionError;
    fn try_from(c: pb::CashRequest) -> Result<Cash, ConversionError> {
        Ok(Cash {
            key: tx_id("key", &c.key)?,
            player: c.player_id,
            currency: c.currency,
            amount: c.amount_minor,
        })
    }
}

impl From<Receipt> for pb::Receipt {
    fn from(r: Receipt) -> pb::Receipt {
        pb::Receipt {
            tx_id: r.tx.to_string(),
            balance_minor: r.balance,
            currency: r.currency,
            replayed: r.replayed,
            version: r.version,
        }
    }
}

impl TryFrom<pb::Receipt> for Receipt {
    type Error = ConversionError;
    fn try_from(r: pb::Receipt) -> Result<Receipt, ConversionError> {
        Ok(Receipt {
            tx: tx_id("tx_id", &r.tx_id)?,
            balance: r.balance_minor,
            currency: r.currency,
            replayed: r.replayed,
            version: r.version,
        })
    }
}

impl From<SelfLimit> for pb::SelfLimit {
    fn from(l: SelfLimit) -> pb::SelfLimit {
        let (pending_max, pending_at) = match l.pending {
            Some((max, at)) => (max.unwrap_or(0), Some(timestamp_of_ms(at))),
            None => (0, None),
        };
        pb::SelfLimit {
            max_bet_minor: l.max_bet.unwrap_or(0),
            pending_effective_at: pending_at,
            pending_max_bet_minor: pending_max,
        }
    }
}

impl TryFrom<pb::SelfLimit> for SelfLimit {
    type Error = ConversionError;
    fn try_from(l: pb::SelfLimit) -> Result<SelfLimit, ConversionError> {
        let pending = match &l.pending_effective_at {
            Some(at) => Some((
                limit("pending_max_bet_minor", l.pending_max_bet_minor)?,
                ms_of_timestamp("pending_effective_at", at)?,
            )),
            None => None,
        };
        Ok(SelfLimit {
            max_bet: limit("max_bet_minor", l.max_bet_minor)?,
            pending,
        })
    }
}

impl From<AccountView> for pb::Account {
    fn from(a: AccountView) -> pb::Account {
        pb::Account {
            player_id: a.player,
            currency: a.currency,
            balance_minor: a.balance,
            blocked: a.blocked,
            self_limit: Some(a.self_limit.into()),
            version: a.version,
        }
    }
}

impl TryFrom<pb::Account> for AccountView {
    type Error = ConversionError;
    fn try_from(a: pb::Account) -> Result<AccountView, ConversionError> {
        let self_limit = a
            .self_limit
            .ok_or_else(|| ConversionError::missing("self_limit"))?;
        Ok(AccountView {
            self_limit: SelfLimit::try_from(self_limit).map_err(|e| e.within("self_limit"))?,
            player: a.player_id,
            currency: a.currency,
            balance: a.balance_minor,
            blocked: a.blocked,
            version: a.version,
        })
    }
}

impl From<Movement> for pb::Movement {
    fn from(m: Movement) -> pb::Movement {
        pb::Movement {
            tx_id: m.tx.to_string(),
            kind: pb::MovementKind::from(m.kind).into(),
            player_id: m.player,
            currency: m.currency,
            amount_minor: m.amount,
            delta_minor: m.delta,
            balance_minor: m.balance,
            table_id: m.table,
            round_id: m.round,
            bet: m.bet,
            at: Some(timestamp_of_ms(m.at_ms)),
            seq: m.seq,
        }
    }
}

impl TryFrom<pb::Movement> for Movement {
    type Error = ConversionError;
    fn try_from(m: pb::Movement) -> Result<Movement, ConversionError> {
        let at =
            m.at.as_ref()
                .ok_or_else(|| ConversionError::missing("at"))?;
        Ok(Movement {
            seq: m.seq,
            tx: tx_id("tx_id", &m.tx_id)?,
            kind: kind("kind", m.kind)?,
            at_ms: ms_of_timestamp("at", at)?,
            player: m.player_id,
            currency: m.currency,
            amount: m.amount_minor,
            delta: m.delta_minor,
            balance: m.balance_minor,
            table: m.table_id,
            round: m.round_id,
            bet: m.bet,
        })
    }
}

impl From<BalanceChange> for pb::BalanceChange {
    fn from(c: BalanceChange) -> pb::BalanceChange {
        pb::BalanceChange {
            kind: Kind::parse(&c.reason)
                .map_or(pb::MovementKind::Unspecified, pb::MovementKind::from)
                .into(),
            player_id: c.player,
            currency: c.currency,
            balance_minor: c.balance,
            delta_minor: c.delta,
            tx_id: c.tx.to_string(),
            table_id: c.table,
        }
    }
}

impl TryFrom<pb::BalanceChange> for BalanceChange {
    type Error = ConversionError;
    fn try_from(c: pb::BalanceChange) -> Result<BalanceChange, ConversionError> {
        Ok(BalanceChange {
            tx: tx_id("tx_id", &c.tx_id)?,
            reason: kind("kind", c.kind)?.as_str().to_owned(),
            player: c.player_id,
            currency: c.currency,
            balance: c.balance_minor,
            delta: c.delta_minor,
            table: c.table_id,
        })
    }
}

/// The reply's refusal of a wallet's decision; `None` for the errors that travel as a
/// status instead (an invalid request, an outage).
pub(crate) fn refusal(error: &WalletError) -> Option<pb::WalletRefusal> {
    use pb::WalletRefusalCode as Code;
    let base = |code: Code| pb::WalletRefusal {
        code: code.into(),
        message: error.to_string(),
        ..Default::default()
    };
    let with_tx = |code: Code, tx: &TxId| pb::WalletRefusal {
        tx_id: tx.to_string(),
        ..base(code)
    };
    Some(match error {
        WalletError::InsufficientFunds { needed, available } => pb::WalletRefusal {
            needed_minor: *needed,
            available_minor: *available,
            ..base(Code::InsufficientFunds)
        },
        WalletError::SelfLimit { limit, asked } => pb::WalletRefusal {
            limit_minor: *limit,
            asked_minor: *asked,
            ..base(Code::SelfLimit)
        },
        WalletError::AccountBlocked => base(Code::AccountBlocked),
        WalletError::InvalidSession(why) => pb::WalletRefusal {
            detail: why.clone(),
            ..base(Code::InvalidSession)
        },
        WalletError::Conflict { tx, why } => pb::WalletRefusal {
            detail: why.clone(),
            ..with_tx(Code::Conflict, tx)
        },
        WalletError::Cancelled { tx } => with_tx(Code::Cancelled, tx),
        WalletError::AlreadySettled { tx } => with_tx(Code::AlreadySettled, tx),
        WalletError::DebitDoesNotExist { tx } => with_tx(Code::DebitDoesNotExist, tx),
        WalletError::Unavailable(_) | WalletError::Invalid(_) => return None,
    })
}

impl TryFrom<pb::WalletRefusal> for WalletError {
    type Error = ConversionError;
    fn try_from(r: pb::WalletRefusal) -> Result<WalletError, ConversionError> {
        use pb::WalletRefusalCode as Code;
        let tx = || tx_id("tx_id", &r.tx_id);
        Ok(match Code::try_from(r.code) {
            Ok(Code::InsufficientFunds) => WalletError::InsufficientFunds {
                needed: r.needed_minor,
                available: r.available_minor,
            },
            Ok(Code::SelfLimit) => WalletError::SelfLimit {
                limit: r.limit_minor,
                asked: r.asked_minor,
            },
            Ok(Code::AccountBlocked) => WalletError::AccountBlocked,
            Ok(Code::InvalidSession) => WalletError::InvalidSession(r.detail),
            Ok(Code::Conflict) => WalletError::Conflict {
                tx: tx()?,
                why: r.detail,
            },
            Ok(Code::Cancelled) => WalletError::Cancelled { tx: tx()? },
            Ok(Code::AlreadySettled) => WalletError::AlreadySettled { tx: tx()? },
            Ok(Code::DebitDoesNotExist) => WalletError::DebitDoesNotExist { tx: tx()? },
            Ok(Code::Unspecified) => return Err(ConversionError::missing("code")),
            Err(_) => {
                return Err(ConversionError::invalid(
                    "code",
                    r.code.to_string(),
                    "not a WalletRefusalCode",
                ));
            }
        })
    }
}

/// A movement's answer, as the reply carries it.
pub(crate) fn movement_reply(receipt: Receipt) -> pb::MovementReply {
    pb::MovementReply {
        receipt: Some(receipt.into()),
        refusal: None,
    }
}

/// The answer to one debit of a DebitMany: its receipt, its refusal, or why it was not
/// decided.
pub(crate) fn debit_answer(answer: Result<Receipt, WalletError>) -> pb::DebitAnswer {
    match answer {
        Ok(receipt) => pb::DebitAnswer {
            receipt: Some(receipt.into()),
            ..Default::default()
        },
        Err(error) => match refusal(&error) {
            Some(refusal) => pb::DebitAnswer {
                refusal: Some(refusal),
                ..Default::default()
            },
            None => pb::DebitAnswer {
                unavailable: match error {
                    WalletError::Unavailable(why) => why,
                    other => other.to_string(),
                },
                ..Default::default()
            },
        },
    }
}

/// What a DebitMany's answer to one debit says: a receipt or a refusal, or
/// [`WalletError::Unavailable`] for one not decided.
pub(crate) fn debit_answer_of(
    answer: pb::DebitAnswer,
) -> Result<Result<Receipt, WalletError>, ConversionError> {
    match (
        answer.receipt,
        answer.refusal,
        answer.unavailable.is_empty(),
    ) {
        (receipt, refusal, true) if receipt.is_some() != refusal.is_some() => {
            answer_of(pb::MovementReply { receipt, refusal })
        }
        (None, None, false) => Ok(Err(WalletError::Unavailable(answer.unavailable))),
        (None, None, true) => Err(ConversionError::missing("receipt")),
        _ => Err(ConversionError::invalid(
            "refusal",
            "set",
            "an answer carries one of a receipt, a refusal or `unavailable`",
        )),
    }
}

/// The receipt or the refusal a reply carries.
pub(crate) fn answer_of(
    reply: pb::MovementReply,
) -> Result<Result<Receipt, WalletError>, ConversionError> {
    match (reply.receipt, reply.refusal) {
        (Some(receipt), None) => Ok(Ok(
            Receipt::try_from(receipt).map_err(|e| e.within("receipt"))?
        )),
        (None, Some(refusal)) => Ok(Err(
            WalletError::try_from(refusal).map_err(|e| e.within("refusal"))?
        )),
        (None, None) => Err(ConversionError::missing("receipt")),
        (Some(_), Some(_)) => Err(ConversionError::invalid(
            "refusal",
            "set",
            "a reply carries a receipt or a refusal, not both",
        )),
    }
}

/// A page token: the cursor of the page after, as decimal text.
pub(crate) fn page_token(field: &str, token: &str) -> Result<Option<i64>, ConversionError> {
    if token.is_empty() {
        return Ok(None);
    }
    match token.parse::<i64>() {
        Ok(seq) if seq > 0 && seq.to_string() == token => Ok(Some(seq)),
        _ => Err(ConversionError::invalid(
            field,
            format!("{:?}", token.chars().take(32).collect::<String>()),
            "not a page token this wallet gave",
        )),
    }
}

/// A page size: 0 means 100, at most [`crate::store::MAX_PAGE`].
pub(crate) fn page_size(field: &str, size: u32) -> Result<u32, ConversionError> {
    match size {
        0 => Ok(100),
        s if s <= crate::store::MAX_PAGE => Ok(s),
        s => Err(ConversionError::invalid(
            field,
            s.to_string(),
            format!("1 to {} (0: 100)", crate::store::MAX_PAGE),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tx(id: &str) -> TxId {
        TxId::new(id).unwrap()
    }

    #[test]
    fn every_refusal_crosses_the_wire_and_comes_back_the_same() {
        let refusals = [
            WalletError::InsufficientFunds {
                needed: 500,
                available: 20,
            },
            WalletError::SelfLimit {
                limit: 1000,
                asked: 1500,
            },
            WalletError::AccountBlocked,
            WalletError::InvalidSession("expired".to_owned()),
            WalletError::Conflict {
                tx: tx("d1"),
                why: "amount_minor 500, first 400".to_owned(),
            },
            WalletError::Cancelled { tx: tx("d2") },
            WalletError::AlreadySettled { tx: tx("d3") },
            WalletError::DebitDoesNotExist { tx: tx("d4") },
        ];
        for error in refusals {
            let wire = refusal(&error).unwrap();
            assert_eq!(wire.message, error.to_string());
            assert_eq!(WalletError::try_from(wire).unwrap(), error);
        }
        assert!(refusal(&WalletError::Unavailable("db".to_owned())).is_none());
        assert!(refusal(&WalletError::Invalid("amount_minor".to_owned())).is_none());
    }

    #[test]
    fn requests_cross_the_wire_and_bad_fields_are_named() {
        let credit = Credit {
            tx: tx("c1"),
            player: "alice".to_owned(),
            currency: "EUR".to_owned(),
            amount: 1950,
            kind: CreditKind::Settlement,
            table: "T01".to_owned(),
            round: "T01-S0001-H001".to_owned(),
            bet: "banker".to_owned(),
            debits: vec![tx("d1"), tx("d2")],
        };
        let mut wire = pb::CreditRequest::from(&credit);
        assert_eq!(Credit::try_from(wire.clone()).unwrap(), credit);
        wire.debit_tx_ids[1] = "d 2".to_owned();
        assert_eq!(
            Credit::try_from(wire.clone()).unwrap_err().field(),
            "debit_tx_ids[1]"
        );
        wire.debit_tx_ids.clear();
        wire.kind = 0;
        assert_eq!(
            Credit::try_from(wire).unwrap_err(),
            ConversionError::missing("kind")
        );
    }

    #[test]
    fn a_self_limit_with_its_pending_raise_crosses_the_wire() {
        let limit = SelfLimit {
            max_bet: Some(1000),
            pending: Some((None, 1_767_225_600_000)),
        };
        let wire = pb::SelfLimit::from(limit.clone());
        assert_eq!(wire.pending_max_bet_minor, 0);
        assert_eq!(SelfLimit::try_from(wire).unwrap(), limit);
        let bad = pb::SelfLimit {
            max_bet_minor: -5,
            ..Default::default()
        };
        assert_eq!(
            SelfLimit::try_from(bad).unwrap_err().field(),
            "max_bet_minor"
        );
    }

    #[test]
    fn page_tokens_are_the_wallets_own() {
        assert_eq!(page_token("page_token", "").unwrap(), None);
        assert_eq!(page_token("page_token", "42").unwrap(), Some(42));
        for bad in ["-1", "0", "042", "x", "+5"] {
            assert!(page_token("page_token", bad).is_err(), "{bad}");
        }
        assert_eq!(page_size("page_size", 0).unwrap(), 100);
        assert!(page_size("page_size", 1001).is_err());
    }
}
