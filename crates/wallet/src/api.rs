//! What a table asks of a wallet, and what it is answered. Amounts are `i64` minor units of
//! the account's currency (ISO 4217 code, e.g. `EUR`); nothing here ever carries a float.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A boxed `Send` future, so that [`Wallet`] is object safe (`Arc<dyn Wallet>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub use banco_records::{TX_ID_MAX_LEN, TxId, TxIdError};

/// A stake taken from a player's account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Debit {
    pub tx: TxId,
    pub player: String,
    pub currency: String,
    /// More than zero.
    pub amount: i64,
    pub table: String,
    pub round: String,
    /// The position staked on (`banker`, `player_pair`, …).
    pub bet: String,
    /// The player's whole stake on this position in this round once this debit is taken:
    /// what the player's self-limit (a maximum per bet, seed 000) is checked against, since
    /// a bet may be built up over several requests.
    pub position_total: i64,
}

impl Debit {
    /// The cancel of this debit, as the movement `tx`: the same player, amount, table and
    /// round, so the wallet can check it against the debit (or remember it, if the debit
    /// has not arrived).
    pub fn cancel_as(&self, tx: TxId) -> Cancel {
        Cancel {
            tx,
            debit: self.tx.clone(),
            player: self.player.clone(),
            currency: self.currency.clone(),
            amount: self.amount,
            table: self.table.clone(),
            round: self.round.clone(),
        }
    }
}

/// Why money goes back to a player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreditKind {
    /// The settlement of a bet: its stake back and its winnings (0 for a losing bet, which
    /// still closes the bet, as operators' wallets expect every bet to be settled).
    Settlement,
    /// A stake given back: bets cleared while betting was open, a voided round.
    Refund,
}

/// Money returned to a player's account, for one or more debits it settles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credit {
    pub tx: TxId,
    pub player: String,
    pub currency: String,
    /// Zero or more.
    pub amount: i64,
    pub kind: CreditKind,
    pub table: String,
    pub round: String,
    pub bet: String,
    /// The debits this credit settles: once credited, they can no longer be cancelled.
    pub debits: Vec<TxId>,
}

/// Takes back a debit whose bet the table did not accept (betting closed before the
/// wallet answered, another bet of the same request was refused, the table restarted).
/// The debit's amount goes back to the player; a cancel that arrives first is remembered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancel {
    pub tx: TxId,
    /// The debit to take back.
    pub debit: TxId,
    pub player: String,
    pub currency: String,
    /// The debit's amount, so an operator's wallet can check it.
    pub amount: i64,
    pub table: String,
    pub round: String,
}

/// The wallet's answer to a movement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub tx: TxId,
    /// The player's available balance once the movement is made.
    pub balance: i64,
    pub currency: String,
    /// This id had been answered before: this is that answer, nothing moved now.
    pub replayed: bool,
    /// The account's version once the movement is made ([`AccountView::version`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A player's own maximum stake per bet, in force on every table, and a raise or removal
/// waiting for its cooling-off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfLimit {
    /// In force now; `None`: no limit.
    pub max_bet: Option<i64>,
    /// A raise or removal asked for: the limit (`None`: removed) and when it takes effect
    /// (unix milliseconds).
    pub pending: Option<(Option<i64>, u64)>,
}

/// A player's account as a table needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    pub player: String,
    pub currency: String,
    /// Available to bet.
    pub balance: i64,
    pub blocked: bool,
    pub self_limit: SelfLimit,
    /// Raised by every movement of the account: of two balances told, the one with the
    /// higher version is the newer, whichever arrived last (answers to one player's
    /// concurrent requests cross on the way). `None` from a wallet that does not number
    /// them (an operator's seamless wallet): the last answer heard is taken as the newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A player's balance changed (a deposit at the cashier, a movement at any table), for the
/// tables to pass on to the player's subscriptions everywhere.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceChange {
    pub player: String,
    pub currency: String,
    /// Available after the change.
    pub balance: i64,
    /// Signed change of the available balance.
    pub delta: i64,
    /// The movement that made it.
    pub tx: TxId,
    /// `debit`, `credit`, `cancel`, `deposit`, `withdrawal`.
    pub reason: String,
    /// The table it was made at; empty for the cashier.
    pub table: String,
}

/// Balance changes committed together, in order. One message per commit rather than per
/// change: every table receives every change to skip those it made itself, and a busy
/// wallet commits tens to hundreds at once (127 a commit in `banco-bench wallet`).
pub type Changes = std::sync::Arc<[BalanceChange]>;

/// Why a wallet did not make a movement. Only [`WalletError::Unavailable`] may succeed when
/// sent again as it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", content = "detail", rename_all = "snake_case")]
pub enum WalletError {
    #[error("insufficient funds: {needed} needed, {available} available (minor units)")]
    InsufficientFunds { needed: i64, available: i64 },
    #[error("over the player's own limit of {limit} per bet (minor units); {asked} asked")]
    SelfLimit { limit: i64, asked: i64 },
    #[error("the player's account is blocked")]
    AccountBlocked,
    /// The operator does not know the player's session (seamless wallets).
    #[error("the player's session is not valid: {0}")]
    InvalidSession(String),
    /// Not reachable, timed out, or a temporary error: safe to retry with the same id.
    #[error("wallet unavailable: {0}")]
    Unavailable(String),
    /// The id was used before for another request.
    #[error("transaction {tx} was used before for another request: {why}")]
    Conflict { tx: TxId, why: String },
    /// The debit was cancelled before it arrived, or is cancelled.
    #[error("debit {tx} was cancelled")]
    Cancelled { tx: TxId },
    /// A cancel of a debit already settled by a credit.
    #[error("debit {tx} is already settled")]
    AlreadySettled { tx: TxId },
    /// A credit for a debit the wallet never took.
    #[error("debit {tx} does not exist")]
    DebitDoesNotExist { tx: TxId },
    /// The request itself is not valid (amount, currency, id): the message names the field.
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl WalletError {
    /// Worth sending again, unchanged, later.
    pub fn is_transient(&self) -> bool {
        matches!(self, WalletError::Unavailable(_))
    }
}

/// A wallet, whichever it is. Each call is one request; a caller may have many in flight
/// at once (the embedded and `banco wallet` stores commit concurrent requests together).
pub trait Wallet: Send + Sync + fmt::Debug + 'static {
    /// The player's account, created empty on first use.
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>>;

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>>;

    /// Several debits (of one bet request, or of many players' requests at once), each
    /// decided as [`Wallet::debit`] decides it: an answer for each, in their order, and
    /// [`WalletError::Unavailable`] for one not answered within `timeout`. A wallet that
    /// can decide them in one exchange (one transaction, one call) overrides this; by
    /// default each goes on its own, all at once, each within `timeout`.
    fn debit_many<'a>(
        &'a self,
        debits: &'a [Debit],
        timeout: Duration,
    ) -> BoxFuture<'a, Vec<Result<Receipt, WalletError>>> {
        Box::pin(debit_each(self, debits, timeout))
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>>;

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>>;

    /// Sets the player's own limit per bet as `change` asks: a lowering
    /// takes effect at once, a raise or removal after the wallet's cooling-off and at most
    /// once in its period; the answer says what is in force and what waits.
    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>>;

    /// Every balance change from now on, of every player, for as long as the receiver is
    /// kept, the changes committed together in one message (a receiver that lags is told
    /// how many messages it missed, and should read the accounts it shows again). `None`:
    /// this wallet cannot tell (an operator's wallet tells nobody): a table then shows the
    /// balance of each receipt and refreshes on subscribe.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Changes>>;

    /// What this wallet holds of `table`'s rounds. A table starting a new journal asks:
    /// the journal numbers its rounds from the first again, and its transaction ids are
    /// derived from them, so against movements of the table's earlier rounds a bet's debit
    /// would be answered as the replay of the earlier one with its id, taken without money
    /// moving. By default [`TableRounds::CannotTell`] (an operator's wallet is asked for
    /// movements only).
    fn table_rounds<'a>(
        &'a self,
        table: &'a str,
    ) -> BoxFuture<'a, Result<TableRounds, WalletError>> {
        let _ = table;
        Box::pin(std::future::ready(Ok(TableRounds::CannotTell)))
    }
}

/// What a wallet holds of one table's rounds ([`Wallet::table_rounds`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableRounds {
    /// No movement of the table: debits, credits and cancels, taken or refused.
    None,
    /// Movements of the table; the newest (the last made) is of this round.
    Newest(String),
    /// This wallet cannot say.
    CannotTell,
}

impl From<Option<String>> for TableRounds {
    /// The round of the table's newest movement, if it has one.
    fn from(newest: Option<String>) -> TableRounds {
        newest.map_or(TableRounds::None, TableRounds::Newest)
    }
}

/// Each of `debits` on its own, all at once, each within `timeout`: the answers in their
/// order ([`Wallet::debit_many`] of a wallet that has no better way).
pub async fn debit_each<W: Wallet + ?Sized>(
    wallet: &W,
    debits: &[Debit],
    timeout: Duration,
) -> Vec<Result<Receipt, WalletError>> {
    futures::future::join_all(debits.iter().map(|debit| async move {
        tokio::time::timeout(timeout, wallet.debit(debit))
            .await
            .unwrap_or_else(|_| Err(no_answer(debit, timeout)))
    }))
    .await
}

/// The error of a debit not answered within `timeout`: it may still be taken, so the
/// caller cancels it.
pub fn no_answer(debit: &Debit, timeout: Duration) -> WalletError {
    WalletError::Unavailable(format!(
        "no answer to debit {} within {} ms",
        debit.tx,
        timeout.as_millis()
    ))
}

/// Money in and out of a player's account from outside the tables: the casino's cashier
/// (deposits, withdrawals), and a host's welcome credit. Each with its own idempotency key,
/// so a retry moves money at most once.
pub trait Cashier: Send + Sync + fmt::Debug + 'static {
    fn deposit<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>>;

    fn withdraw<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>>;
}

/// Money the cashier puts into or takes out of a player's account, under its own
/// idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cash {
    pub key: TxId,
    pub player: String,
    pub currency: String,
    /// More than zero.
    pub amount: i64,
}

impl Cash {
    pub fn new(key: &TxId, player: &str, currency: &str, amount: i64) -> Cash {
        Cash {
            key: key.clone(),
            player: player.to_owned(),
            currency: currency.to_owned(),
            amount,
        }
    }
}

/// A player's own limit per bet, asked to change at `now_ms` (`max_bet` `None`: removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitChange {
    pub player: String,
    pub currency: String,
    pub max_bet: Option<i64>,
    /// When it is asked, in unix ms: a raise takes effect a cooling-off after it.
    pub now_ms: u64,
}

impl LimitChange {
    pub fn new(player: &str, currency: &str, max_bet: Option<i64>, now_ms: u64) -> LimitChange {
        LimitChange {
            player: player.to_owned(),
            currency: currency.to_owned(),
            max_bet,
            now_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn transaction_ids_are_short_plain_text() {
        assert!(TxId::new("debit:T01-S0001-H003:alice@casino.example:2:banker").is_ok());
        assert_eq!(TxId::new(""), Err(TxIdError::Empty));
        assert!(matches!(
            TxId::new("a".repeat(TX_ID_MAX_LEN + 1)),
            Err(TxIdError::TooLong(_))
        ));
        assert_eq!(
            TxId::new("debit:alice bob"),
            Err(TxIdError::BadCharacter {
                id: "debit:alice bob".to_owned(),
                bad: ' '
            })
        );
        let err = serde_json::from_str::<TxId>("\"a/b\"").unwrap_err();
        assert!(err.to_string().contains("`/` is not allowed"), "{err}");
    }

    /// A table journals the wallet's refusals (`WalletDebited`): every one must be written
    /// and read back as it was, the ones carrying a text too.
    #[test]
    fn every_wallet_error_is_journaled_and_read_back() {
        let tx = TxId::new("debit:r:p:1:banker").unwrap();
        let errors = [
            WalletError::InsufficientFunds {
                needed: 5,
                available: 1,
            },
            WalletError::SelfLimit { limit: 1, asked: 2 },
            WalletError::AccountBlocked,
            WalletError::InvalidSession("expired".to_owned()),
            WalletError::Unavailable("no answer within 3000 ms".to_owned()),
            WalletError::Conflict {
                tx: tx.clone(),
                why: "amount".to_owned(),
            },
            WalletError::Cancelled { tx: tx.clone() },
            WalletError::AlreadySettled { tx: tx.clone() },
            WalletError::DebitDoesNotExist { tx },
            WalletError::Invalid("amount_minor".to_owned()),
        ];
        for error in errors {
            let json = serde_json::to_string(&error).unwrap();
            assert_eq!(
                serde_json::from_str::<WalletError>(&json).unwrap(),
                error,
                "{json}"
            );
        }
    }
}
