//! The bodies of `proto/seamless-wallet.openapi.yaml`: what banco sends for each operation,
//! what the operator answers, its statuses, and how each maps to the [`Wallet`] trait's
//! answers. Field names are the spec's; amounts are integer minor units.
//!
//! [`Wallet`]: crate::Wallet

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::api::{Cancel, Credit, CreditKind, Debit, Receipt, TxId, WalletError};

/// The largest body either side reads; anything longer is refused unread.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// How far a request's `timestamp_ms` may be from the receiver's clock, either way.
pub const TIMESTAMP_WINDOW_MS: u64 = 5 * 60 * 1000;

/// One of the four calls, each a `POST` to its path under the operator's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Balance,
    Debit,
    Credit,
    Cancel,
}

impl Operation {
    pub const ALL: [Operation; 4] = [
        Operation::Balance,
        Operation::Debit,
        Operation::Credit,
        Operation::Cancel,
    ];

    /// The last segment of its URL, and the body's `operation`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Balance => "balance",
            Operation::Debit => "debit",
            Operation::Credit => "credit",
            Operation::Cancel => "cancel",
        }
    }

    /// The statuses an operator may answer it with (besides `TEMPORARY_ERROR` and
    /// `INVALID_SIGNATURE`, which any may get). Any other is a fault of the answer.
    pub fn allows(self, status: Status) -> bool {
        use Status::*;
        let decisions: &[Status] = match self {
            Operation::Balance => &[Ok, InvalidSession, AccountBlocked, InvalidRequest],
            Operation::Debit => &[
                Ok,
                InsufficientFunds,
                LimitExceeded,
                InvalidSession,
                AccountBlocked,
                BetCancelled,
                DuplicateTransaction,
                InvalidRequest,
            ],
            // Money owed to the player is never refused for a session or a block.
            Operation::Credit => &[
                Ok,
                BetDoesNotExist,
                BetAlreadySettled,
                BetCancelled,
                DuplicateTransaction,
                InvalidRequest,
            ],
            Operation::Cancel => &[
                Ok,
                BetDoesNotExist,
                BetAlreadySettled,
                DuplicateTransaction,
                InvalidRequest,
            ],
        };
        matches!(status, TemporaryError | InvalidSignature) || decisions.contains(&status)
    }
}

/// What the operator says about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    Ok,
    InsufficientFunds,
    LimitExceeded,
    InvalidSession,
    AccountBlocked,
    TemporaryError,
    BetAlreadySettled,
    BetDoesNotExist,
    BetCancelled,
    DuplicateTransaction,
    InvalidRequest,
    InvalidSignature,
}

impl Status {
    /// As written in a body.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::InsufficientFunds => "INSUFFICIENT_FUNDS",
            Status::LimitExceeded => "LIMIT_EXCEEDED",
            Status::InvalidSession => "INVALID_SESSION",
            Status::AccountBlocked => "ACCOUNT_BLOCKED",
            Status::TemporaryError => "TEMPORARY_ERROR",
            Status::BetAlreadySettled => "BET_ALREADY_SETTLED",
            Status::BetDoesNotExist => "BET_DOES_NOT_EXIST",
            Status::BetCancelled => "BET_CANCELLED",
            Status::DuplicateTransaction => "DUPLICATE_TRANSACTION",
            Status::InvalidRequest => "INVALID_REQUEST",
            Status::InvalidSignature => "INVALID_SIGNATURE",
        }
    }

    /// The HTTP status an answer with this status is sent with.
    pub fn http_status(self) -> http::StatusCode {
        match self {
            Status::TemporaryError => http::StatusCode::SERVICE_UNAVAILABLE,
            Status::InvalidRequest => http::StatusCode::BAD_REQUEST,
            Status::InvalidSignature => http::StatusCode::UNAUTHORIZED,
            _ => http::StatusCode::OK,
        }
    }
}

/// What every request carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Which call this body is for: must be the path's, so a signed body cannot be replayed
    /// to another path.
    pub operation: Operation,
    /// Fresh for every HTTP request, retries included; echoed in the answer.
    pub request_id: String,
    /// When banco sent it, unix milliseconds.
    pub timestamp_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceRequest {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub player_id: String,
    pub currency: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebitRequest {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub transaction_id: TxId,
    pub retransmission: bool,
    pub player_id: String,
    pub currency: String,
    pub amount_minor: i64,
    pub position_total_minor: i64,
    pub table_id: String,
    pub round_id: String,
    pub bet: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditRequest {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub transaction_id: TxId,
    pub retransmission: bool,
    pub player_id: String,
    pub currency: String,
    pub amount_minor: i64,
    pub kind: CreditKind,
    pub table_id: String,
    pub round_id: String,
    pub bet: String,
    pub debit_transaction_ids: Vec<TxId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub transaction_id: TxId,
    pub retransmission: bool,
    pub debit_transaction_id: TxId,
    pub player_id: String,
    pub currency: String,
    pub amount_minor: i64,
    pub table_id: String,
    pub round_id: String,
}

impl DebitRequest {
    pub fn new(debit: &Debit, envelope: Envelope, retransmission: bool) -> DebitRequest {
        DebitRequest {
            envelope,
            transaction_id: debit.tx.clone(),
            retransmission,
            player_id: debit.player.clone(),
            currency: debit.currency.clone(),
            amount_minor: debit.amount,
            position_total_minor: debit.position_total,
            table_id: debit.table.clone(),
            round_id: debit.round.clone(),
            bet: debit.bet.clone(),
        }
    }
}

impl From<DebitRequest> for Debit {
    fn from(r: DebitRequest) -> Debit {
        Debit {
            tx: r.transaction_id,
            player: r.player_id,
            currency: r.currency,
            amount: r.amount_minor,
            table: r.table_id,
            round: r.round_id,
            bet: r.bet,
            position_total: r.position_total_minor,
        }
    }
}

impl CreditRequest {
    pub fn new(credit: &Credit, envelope: Envelope, retransmission: bool) -> CreditRequest {
        CreditRequest {
            envelope,
            transaction_id: credit.tx.clone(),
            retransmission,
            player_id: credit.player.clone(),
            currency: credit.currency.clone(),
            amount_minor: credit.amount,
            kind: credit.kind,
            table_id: credit.table.clone(),
            round_id: credit.round.clone(),
            bet: credit.bet.clone(),
            debit_transaction_ids: credit.debits.clone(),
        }
    }
}

impl From<CreditRequest> for Credit {
    fn from(r: CreditRequest) -> Credit {
        Credit {
            tx: r.transaction_id,
            player: r.player_id,
            currency: r.currency,
            amount: r.amount_minor,
            kind: r.kind,
            table: r.table_id,
            round: r.round_id,
            bet: r.bet,
            debits: r.debit_transaction_ids,
        }
    }
}

impl CancelRequest {
    pub fn new(cancel: &Cancel, envelope: Envelope, retransmission: bool) -> CancelRequest {
        CancelRequest {
            envelope,
            transaction_id: cancel.tx.clone(),
            retransmission,
            debit_transaction_id: cancel.debit.clone(),
            player_id: cancel.player.clone(),
            currency: cancel.currency.clone(),
            amount_minor: cancel.amount,
            table_id: cancel.table.clone(),
            round_id: cancel.round.clone(),
        }
    }
}

impl From<CancelRequest> for Cancel {
    fn from(r: CancelRequest) -> Cancel {
        Cancel {
            tx: r.transaction_id,
            debit: r.debit_transaction_id,
            player: r.player_id,
            currency: r.currency,
            amount: r.amount_minor,
            table: r.table_id,
            round: r.round_id,
        }
    }
}

/// The operator's answer to any request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The request's `request_id`: binds the (signed) answer to that one request.
    pub request_id: String,
    pub status: Status,
    /// The player's available balance: required with `OK` and `INSUFFICIENT_FUNDS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance_minor: Option<i64>,
    /// The balance's currency: required with `OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// With `OK` to a debit, credit or cancel: this transaction id had been answered
    /// before, this is that answer, and nothing moved now.
    #[serde(default)]
    pub replayed: bool,
    /// With `BET_*` statuses: the debit the status is about (a credit may settle several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debit_transaction_id: Option<TxId>,
    /// With `LIMIT_EXCEEDED`: the player's limit per bet, required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_minor: Option<i64>,
    /// For people: why, with any status but `OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Answer {
    /// An answer with nothing but its status.
    pub fn status(request_id: impl Into<String>, status: Status) -> Answer {
        Answer {
            request_id: request_id.into(),
            status,
            balance_minor: None,
            currency: None,
            replayed: false,
            debit_transaction_id: None,
            limit_minor: None,
            message: None,
        }
    }

    /// `OK`, with the receipt's balance.
    pub fn ok(request_id: impl Into<String>, receipt: &Receipt) -> Answer {
        Answer {
            balance_minor: Some(receipt.balance),
            currency: Some(receipt.currency.clone()),
            replayed: receipt.replayed,
            ..Answer::status(request_id, Status::Ok)
        }
    }

    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Answer {
        self.message = Some(message.into());
        self
    }

    /// The wallet's refusal as the protocol says it.
    pub fn refusal(request_id: impl Into<String>, error: &WalletError) -> Answer {
        let answer = Answer::status(request_id, Status::TemporaryError);
        let answer = match error {
            WalletError::InsufficientFunds { available, .. } => Answer {
                status: Status::InsufficientFunds,
                balance_minor: Some(*available),
                ..answer
            },
            WalletError::SelfLimit { limit, .. } => Answer {
                status: Status::LimitExceeded,
                limit_minor: Some(*limit),
                ..answer
            },
            WalletError::AccountBlocked => Answer {
                status: Status::AccountBlocked,
                ..answer
            },
            WalletError::InvalidSession(_) => Answer {
                status: Status::InvalidSession,
                ..answer
            },
            WalletError::Unavailable(_) => answer,
            WalletError::Conflict { .. } => Answer {
                status: Status::DuplicateTransaction,
                ..answer
            },
            WalletError::Cancelled { tx } => Answer {
                status: Status::BetCancelled,
                debit_transaction_id: Some(tx.clone()),
                ..answer
            },
            WalletError::AlreadySettled { tx } => Answer {
                status: Status::BetAlreadySettled,
                debit_transaction_id: Some(tx.clone()),
                ..answer
            },
            WalletError::DebitDoesNotExist { tx } => Answer {
                status: Status::BetDoesNotExist,
                debit_transaction_id: Some(tx.clone()),
                ..answer
            },
            WalletError::Invalid(_) => Answer {
                status: Status::InvalidRequest,
                ..answer
            },
        };
        answer.with_message(error.to_string())
    }

    /// Whether this answer can be taken as the operator's decision on `operation` for an
    /// account in `currency`: a status the operation allows, with the fields it requires.
    /// `Err` says what is wrong, and the answer is then no answer at all.
    pub fn check(&self, operation: Operation, currency: &str) -> Result<(), String> {
        if !operation.allows(self.status) {
            return Err(format!(
                "status {} is not an answer to {}",
                self.status.as_str(),
                operation.name()
            ));
        }
        // A cancel of a debit the operator never took is done as much as an OK one.
        let done = self.status == Status::Ok
            || (operation == Operation::Cancel && self.status == Status::BetDoesNotExist);
        if done {
            let status = self.status.as_str();
            if self.balance_minor.is_none() {
                return Err(format!("{status} without balance_minor"));
            }
            match self.currency.as_deref() {
                Some(c) if c == currency => {}
                Some(c) => {
                    return Err(format!(
                        "the answer's currency {c} is not the request's {currency}"
                    ));
                }
                None => return Err(format!("{status} without currency")),
            }
        }
        match self.status {
            Status::InsufficientFunds if self.balance_minor.is_none() => {
                return Err("INSUFFICIENT_FUNDS without balance_minor".to_owned());
            }
            Status::LimitExceeded if self.limit_minor.is_none() => {
                return Err("LIMIT_EXCEEDED without limit_minor".to_owned());
            }
            _ => {}
        }
        Ok(())
    }

    /// The operator's decision (a checked answer, not `TEMPORARY_ERROR` nor
    /// `INVALID_SIGNATURE`) on a movement, as the trait says it.
    pub fn decision(&self, movement: &Movement<'_>) -> Result<Receipt, WalletError> {
        let why = || self.message.clone().unwrap_or_default();
        let about = || {
            self.debit_transaction_id
                .clone()
                .unwrap_or_else(|| movement.debit.clone())
        };
        match self.status {
            Status::Ok => Ok(Receipt {
                tx: movement.tx.clone(),
                balance: self.balance_minor.unwrap_or_default(),
                currency: self.currency.clone().unwrap_or_default(),
                replayed: self.replayed,
                version: None,
            }),
            Status::InsufficientFunds => Err(WalletError::InsufficientFunds {
                needed: movement.amount,
                available: self.balance_minor.unwrap_or_default(),
            }),
            Status::LimitExceeded => Err(WalletError::SelfLimit {
                limit: self.limit_minor.unwrap_or_default(),
                asked: movement.position_total,
            }),
            Status::InvalidSession => Err(WalletError::InvalidSession(why())),
            Status::AccountBlocked => Err(WalletError::AccountBlocked),
            Status::BetAlreadySettled => Err(WalletError::AlreadySettled { tx: about() }),
            Status::BetDoesNotExist => Err(WalletError::DebitDoesNotExist { tx: about() }),
            Status::BetCancelled => Err(WalletError::Cancelled { tx: about() }),
            Status::DuplicateTransaction => Err(WalletError::Conflict {
                tx: movement.tx.clone(),
                why: why(),
            }),
            Status::InvalidRequest => Err(WalletError::Invalid(why())),
            Status::TemporaryError | Status::InvalidSignature => {
                Err(WalletError::Unavailable(why()))
            }
        }
    }
}

/// The movement an answer is about, to say its refusal as the trait does.
#[derive(Clone, Copy, Debug)]
pub struct Movement<'a> {
    pub tx: &'a TxId,
    pub amount: i64,
    /// A debit's `position_total` (what a limit per bet is checked against); else `amount`.
    pub position_total: i64,
    /// The debit it is about: the debit itself, a cancel's, a credit's first.
    pub debit: &'a TxId,
}

/// Now, unix milliseconds (0 before 1970: a broken clock the operator will refuse).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tx(id: &str) -> TxId {
        TxId::new(id).unwrap()
    }

    #[test]
    fn a_debit_reads_as_the_spec_writes_it() {
        let debit = Debit {
            tx: tx("debit:T01-S0001-H003:alice:1:banker"),
            player: "alice".to_owned(),
            currency: "EUR".to_owned(),
            amount: 2_500,
            table: "T01".to_owned(),
            round: "T01-S0001-H003".to_owned(),
            bet: "banker".to_owned(),
            position_total: 5_000,
        };
        let envelope = Envelope {
            operation: Operation::Debit,
            request_id: "r-1".to_owned(),
            timestamp_ms: 1_700_000_000_000,
        };
        let json = serde_json::to_value(DebitRequest::new(&debit, envelope, true)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "operation": "debit",
                "request_id": "r-1",
                "timestamp_ms": 1_700_000_000_000_u64,
                "transaction_id": "debit:T01-S0001-H003:alice:1:banker",
                "retransmission": true,
                "player_id": "alice",
                "currency": "EUR",
                "amount_minor": 2_500,
                "position_total_minor": 5_000,
                "table_id": "T01",
                "round_id": "T01-S0001-H003",
                "bet": "banker",
            })
        );
        let back: DebitRequest = serde_json::from_value(json).unwrap();
        assert_eq!(Debit::from(back), debit);
    }

    #[test]
    fn every_refusal_comes_back_as_the_same_error() {
        let debit = tx("debit:r:alice:1:banker");
        let errors = [
            WalletError::InsufficientFunds {
                needed: 500,
                available: 120,
            },
            WalletError::SelfLimit {
                limit: 1_000,
                asked: 500,
            },
            WalletError::AccountBlocked,
            WalletError::Cancelled { tx: debit.clone() },
            WalletError::AlreadySettled { tx: debit.clone() },
            WalletError::DebitDoesNotExist { tx: debit.clone() },
        ];
        for error in errors {
            let answer = Answer::refusal("r", &error);
            let json = serde_json::to_string(&answer).unwrap();
            let read: Answer = serde_json::from_str(&json).unwrap();
            let other = tx("debit:other");
            let movement = Movement {
                tx: &debit,
                amount: 500,
                position_total: 500,
                debit: &other,
            };
            assert_eq!(read.decision(&movement), Err(error.clone()), "{json}");
        }
        let conflict = Answer::refusal(
            "r",
            &WalletError::Conflict {
                tx: debit.clone(),
                why: "amount 100, was 200".to_owned(),
            },
        );
        assert_eq!(conflict.status, Status::DuplicateTransaction);
        let movement = Movement {
            tx: &debit,
            amount: 100,
            position_total: 100,
            debit: &debit,
        };
        assert!(matches!(
            conflict.decision(&movement),
            Err(WalletError::Conflict { why, .. }) if why.contains("amount 100, was 200")
        ));
    }

    #[test]
    fn answers_that_are_not_decisions_are_named() {
        let ok = Answer::status("r", Status::Ok);
        assert_eq!(
            ok.check(Operation::Debit, "EUR"),
            Err("OK without balance_minor".to_owned())
        );
        let receipt = Receipt {
            tx: tx("d"),
            balance: 10,
            currency: "USD".to_owned(),
            replayed: false,
            version: None,
        };
        let err = Answer::ok("r", &receipt)
            .check(Operation::Debit, "EUR")
            .unwrap_err();
        assert!(err.contains("USD is not the request's EUR"), "{err}");
        let err = Answer::status("r", Status::AccountBlocked)
            .check(Operation::Credit, "EUR")
            .unwrap_err();
        assert_eq!(err, "status ACCOUNT_BLOCKED is not an answer to credit");
        let unknown = serde_json::from_str::<Answer>(r#"{"request_id":"r","status":"MAYBE"}"#);
        assert!(unknown.is_err());
        for status in [Status::TemporaryError, Status::InvalidSignature] {
            for operation in Operation::ALL {
                assert!(operation.allows(status));
            }
        }
    }
}
