//! A wallet in memory that keeps the whole [`Wallet`] contract: for tests of everything
//! that spends through a wallet, and as the reference the conformance checks describe. It
//! is not durable: a real table uses the store (embedded or `banco wallet`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::broadcast;

use crate::api::{
    AccountView, BalanceChange, BoxFuture, Cancel, Cash, Cashier, Changes, Credit, Debit,
    LimitChange, Receipt, SelfLimit, TableRounds, TxId, Wallet, WalletError,
};

/// What one transaction id was used for, and the answer it got.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Debit(Debit, Result<Receipt, WalletError>),
    Credit(Credit, Result<Receipt, WalletError>),
    Cancel(Cancel, Result<Receipt, WalletError>),
    Deposit(String, String, i64, Result<Receipt, WalletError>),
}

#[derive(Debug, Default)]
struct State {
    balances: BTreeMap<(String, String), i64>,
    /// Movements made on each account ([`AccountView::version`]).
    versions: BTreeMap<(String, String), u64>,
    limits: BTreeMap<(String, String), i64>,
    blocked: BTreeMap<(String, String), bool>,
    seen: BTreeMap<TxId, Seen>,
    /// Debits cancelled (before or after they came), and debits settled by a credit.
    cancelled: BTreeMap<TxId, ()>,
    settled: BTreeMap<TxId, ()>,
}

impl State {
    /// Moves `amount` on the account: its balance and version after.
    fn moved(&mut self, player: &str, currency: &str, amount: i64) -> (i64, u64) {
        let account = (player.to_owned(), currency.to_owned());
        let balance = self.balances.entry(account.clone()).or_insert(0);
        *balance += amount;
        let balance = *balance;
        let version = self.versions.entry(account).or_insert(0);
        *version += 1;
        (balance, *version)
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct MemoryWallet {
    state: Mutex<State>,
    changes: broadcast::Sender<Changes>,
    /// The next calls answer [`WalletError::Unavailable`] without doing anything.
    fail_next: AtomicUsize,
    calls: AtomicUsize,
}

impl Default for MemoryWallet {
    fn default() -> MemoryWallet {
        MemoryWallet::new()
    }
}

impl MemoryWallet {
    pub fn new() -> MemoryWallet {
        MemoryWallet {
            state: Mutex::new(State::default()),
            changes: broadcast::channel(1024).0,
            fail_next: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain values: a panic while holding it leaves nothing half-changed worth refusing.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A cashier's deposit (idempotent by `key`); a negative `amount` withdraws.
    pub fn deposit(
        &self,
        key: &str,
        player: &str,
        currency: &str,
        amount: i64,
    ) -> Result<Receipt, WalletError> {
        let tx = TxId::new(key).map_err(|e| WalletError::Invalid(e.to_string()))?;
        if amount == 0 {
            return Err(WalletError::Invalid(
                "amount_minor 0: a deposit or a withdrawal is more than zero".to_owned(),
            ));
        }
        let mut state = self.state();
        if let Some(seen) = state.seen.get(&tx) {
            return match seen {
                Seen::Deposit(p, c, a, answer) if p == player && c == currency && *a == amount => {
                    replayed(answer)
                }
                _ => Err(conflict(&tx)),
            };
        }
        let available = state
            .balances
            .get(&(player.to_owned(), currency.to_owned()))
            .copied()
            .unwrap_or(0);
        if available + amount < 0 {
            return Err(WalletError::InsufficientFunds {
                needed: -amount,
                available,
            });
        }
        let (balance, version) = state.moved(player, currency, amount);
        let receipt = Receipt {
            tx: tx.clone(),
            balance,
            currency: currency.to_owned(),
            replayed: false,
            version: Some(version),
        };
        state.seen.insert(
            tx.clone(),
            Seen::Deposit(
                player.to_owned(),
                currency.to_owned(),
                amount,
                Ok(receipt.clone()),
            ),
        );
        drop(state);
        let reason = if amount > 0 { "deposit" } else { "withdrawal" };
        self.publish(vec![change(player, currency, &receipt, amount, reason, "")]);
        Ok(receipt)
    }

    /// Blocks or unblocks the player's account.
    pub fn set_blocked(&self, player: &str, currency: &str, blocked: bool) {
        self.state()
            .blocked
            .insert((player.to_owned(), currency.to_owned()), blocked);
    }

    /// The player's available balance.
    pub fn balance(&self, player: &str, currency: &str) -> i64 {
        self.state()
            .balances
            .get(&(player.to_owned(), currency.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// The next `n` calls answer `Unavailable` and do nothing (a wallet that is down).
    pub fn fail_next(&self, n: usize) {
        self.fail_next.store(n, Ordering::SeqCst);
    }

    /// The transaction ids of every request decided so far (refused ones too), in id
    /// order.
    pub fn transactions(&self) -> Vec<TxId> {
        self.state().seen.keys().cloned().collect()
    }

    /// Calls so far (movements and reads), failed ones included.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn down(&self) -> Result<(), WalletError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            Err(WalletError::Unavailable(
                "the memory wallet was told to fail".to_owned(),
            ))
        } else {
            Ok(())
        }
    }

    fn publish(&self, changes: Vec<BalanceChange>) {
        if !changes.is_empty() {
            // Nobody listening is not an error.
            let _ = self.changes.send(Changes::from(changes));
        }
    }

    /// Decides `debit`; its balance change, if any, goes in `changes` to be told.
    fn do_debit(
        &self,
        debit: &Debit,
        changes: &mut Vec<BalanceChange>,
    ) -> Result<Receipt, WalletError> {
        if debit.amount <= 0 {
            return Err(WalletError::Invalid(format!(
                "amount_minor {}: a debit is more than zero",
                debit.amount
            )));
        }
        let mut state = self.state();
        if let Some(seen) = state.seen.get(&debit.tx) {
            return match seen {
                Seen::Debit(d, answer) if d == debit => replayed(answer),
                _ => Err(conflict(&debit.tx)),
            };
        }
        let account = (debit.player.clone(), debit.currency.clone());
        let available = state.balances.get(&account).copied().unwrap_or(0);
        let answer = if state.cancelled.contains_key(&debit.tx) {
            Err(WalletError::Cancelled {
                tx: debit.tx.clone(),
            })
        } else if state.blocked.get(&account).copied().unwrap_or(false) {
            Err(WalletError::AccountBlocked)
        } else if let Some(&limit) = state
            .limits
            .get(&account)
            .filter(|&&l| debit.position_total > l)
        {
            Err(WalletError::SelfLimit {
                limit,
                asked: debit.position_total,
            })
        } else if available < debit.amount {
            Err(WalletError::InsufficientFunds {
                needed: debit.amount,
                available,
            })
        } else {
            let (balance, version) = state.moved(&debit.player, &debit.currency, -debit.amount);
            Ok(Receipt {
                tx: debit.tx.clone(),
                balance,
                currency: debit.currency.clone(),
                replayed: false,
                version: Some(version),
            })
        };
        state
            .seen
            .insert(debit.tx.clone(), Seen::Debit(debit.clone(), answer.clone()));
        drop(state);
        if let Ok(receipt) = &answer {
            changes.push(change(
                &debit.player,
                &debit.currency,
                receipt,
                -debit.amount,
                "debit",
                &debit.table,
            ));
        }
        answer
    }

    fn do_credit(&self, credit: &Credit) -> Result<Receipt, WalletError> {
        if credit.amount < 0 {
            return Err(WalletError::Invalid(format!(
                "amount_minor {}: a credit is zero or more",
                credit.amount
            )));
        }
        let mut state = self.state();
        if let Some(seen) = state.seen.get(&credit.tx) {
            return match seen {
                Seen::Credit(c, answer) if c == credit => replayed(answer),
                _ => Err(conflict(&credit.tx)),
            };
        }
        let taken = |tx: &TxId| matches!(state.seen.get(tx), Some(Seen::Debit(_, Ok(_))));
        let missing = credit
            .debits
            .iter()
            .find(|tx| !taken(tx) || state.cancelled.contains_key(*tx))
            .cloned();
        let answer = if let Some(tx) = missing {
            Err(WalletError::DebitDoesNotExist { tx })
        } else {
            let (balance, version) = state.moved(&credit.player, &credit.currency, credit.amount);
            for tx in &credit.debits {
                state.settled.insert(tx.clone(), ());
            }
            Ok(Receipt {
                tx: credit.tx.clone(),
                balance,
                currency: credit.currency.clone(),
                replayed: false,
                version: Some(version),
            })
        };
        state.seen.insert(
            credit.tx.clone(),
            Seen::Credit(credit.clone(), answer.clone()),
        );
        drop(state);
        if let Ok(receipt) = &answer {
            self.publish(vec![change(
                &credit.player,
                &credit.currency,
                receipt,
                credit.amount,
                "credit",
                &credit.table,
            )]);
        }
        answer
    }

    fn do_cancel(&self, cancel: &Cancel) -> Result<Receipt, WalletError> {
        let mut state = self.state();
        if let Some(seen) = state.seen.get(&cancel.tx) {
            return match seen {
                Seen::Cancel(c, answer) if c == cancel => replayed(answer),
                _ => Err(conflict(&cancel.tx)),
            };
        }
        let answer = if state.settled.contains_key(&cancel.debit) {
            Err(WalletError::AlreadySettled {
                tx: cancel.debit.clone(),
            })
        } else {
            let refund = match state.seen.get(&cancel.debit) {
                Some(Seen::Debit(d, Ok(_))) => d.amount,
                _ => 0,
            };
            state.cancelled.insert(cancel.debit.clone(), ());
            let (balance, version) = state.moved(&cancel.player, &cancel.currency, refund);
            Ok((
                Receipt {
                    tx: cancel.tx.clone(),
                    balance,
                    currency: cancel.currency.clone(),
                    replayed: false,
                    version: Some(version),
                },
                refund,
            ))
        };
        let answer_only = answer.clone().map(|(r, _)| r);
        state.seen.insert(
            cancel.tx.clone(),
            Seen::Cancel(cancel.clone(), answer_only.clone()),
        );
        drop(state);
        if let Ok((receipt, refund)) = &answer
            && *refund > 0
        {
            self.publish(vec![change(
                &cancel.player,
                &cancel.currency,
                receipt,
                *refund,
                "cancel",
                &cancel.table,
            )]);
        }
        answer_only
    }
}

fn replayed(answer: &Result<Receipt, WalletError>) -> Result<Receipt, WalletError> {
    answer.clone().map(|r| Receipt {
        replayed: true,
        ..r
    })
}

fn conflict(tx: &TxId) -> WalletError {
    WalletError::Conflict {
        tx: tx.clone(),
        why: "it was used for another request".to_owned(),
    }
}

impl Cashier for MemoryWallet {
    fn deposit<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        let answer = self.cash(cash, "deposit", cash.amount);
        Box::pin(async move { answer })
    }

    fn withdraw<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        let answer = self.cash(cash, "withdrawal", -cash.amount);
        Box::pin(async move { answer })
    }
}

impl MemoryWallet {
    /// `cash` as the cashier's `what`, moving `delta` (its amount, negative to withdraw).
    fn cash(&self, cash: &Cash, what: &str, delta: i64) -> Result<Receipt, WalletError> {
        self.down()?;
        if cash.amount <= 0 {
            return Err(WalletError::Invalid(format!(
                "amount_minor {}: a {what} is more than zero",
                cash.amount
            )));
        }
        MemoryWallet::deposit(self, cash.key.as_str(), &cash.player, &cash.currency, delta)
    }
}

/// The balance change a movement made, as it is told to the tables.
fn change(
    player: &str,
    currency: &str,
    receipt: &Receipt,
    delta: i64,
    reason: &str,
    table: &str,
) -> BalanceChange {
    BalanceChange {
        player: player.to_owned(),
        currency: currency.to_owned(),
        balance: receipt.balance,
        delta,
        tx: receipt.tx.clone(),
        reason: reason.to_owned(),
        table: table.to_owned(),
    }
}

impl Wallet for MemoryWallet {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        let answer = self.down().map(|()| {
            let state = self.state();
            let account = (player.to_owned(), currency.to_owned());
            AccountView {
                player: player.to_owned(),
                currency: currency.to_owned(),
                balance: state.balances.get(&account).copied().unwrap_or(0),
                blocked: state.blocked.get(&account).copied().unwrap_or(false),
                self_limit: SelfLimit {
                    max_bet: state.limits.get(&account).copied(),
                    pending: None,
                },
                version: Some(state.versions.get(&account).copied().unwrap_or(0)),
            }
        });
        Box::pin(async move { answer })
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        let mut changes = Vec::new();
        let answer = self
            .down()
            .and_then(|()| self.do_debit(debit, &mut changes));
        self.publish(changes);
        Box::pin(async move { answer })
    }

    /// Each debit as [`Wallet::debit`] would take it (each a call, each failing while told
    /// to fail), their balance changes told as one message, as a store tells a commit's:
    /// one message a debit overran the tables' receivers under load.
    fn debit_many<'a>(
        &'a self,
        debits: &'a [Debit],
        _timeout: Duration,
    ) -> BoxFuture<'a, Vec<Result<Receipt, WalletError>>> {
        let mut changes = Vec::new();
        let answers = debits
            .iter()
            .map(|debit| {
                self.down()
                    .and_then(|()| self.do_debit(debit, &mut changes))
            })
            .collect();
        self.publish(changes);
        Box::pin(async move { answers })
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        let answer = self.down().and_then(|()| self.do_credit(credit));
        Box::pin(async move { answer })
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        let answer = self.down().and_then(|()| self.do_cancel(cancel));
        Box::pin(async move { answer })
    }

    /// Takes any change at once (no cooling-off: tests of the table need none).
    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        let answer = self.down().map(|()| {
            let account = (change.player.clone(), change.currency.clone());
            let mut state = self.state();
            match change.max_bet {
                Some(max) => state.limits.insert(account, max),
                None => state.limits.remove(&account),
            };
            SelfLimit {
                max_bet: change.max_bet,
                pending: None,
            }
        });
        Box::pin(async move { answer })
    }

    fn changes(&self) -> Option<broadcast::Receiver<Changes>> {
        Some(self.changes.subscribe())
    }

    /// Never down for this question: the tests that make it fail mean the table's calls.
    fn table_rounds<'a>(
        &'a self,
        table: &'a str,
    ) -> BoxFuture<'a, Result<TableRounds, WalletError>> {
        let state = self.state();
        // A table's round ids sort in play order.
        let newest = state
            .seen
            .values()
            .filter_map(|seen| match seen {
                Seen::Debit(d, _) => Some((&d.table, &d.round)),
                Seen::Credit(c, _) => Some((&c.table, &c.round)),
                Seen::Cancel(c, _) => Some((&c.table, &c.round)),
                Seen::Deposit(..) => None,
            })
            .filter(|(of, _)| *of == table)
            .map(|(_, round)| round)
            .max()
            .cloned()
            .into();
        Box::pin(std::future::ready(Ok(newest)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn debit(tx: &str, amount: i64) -> Debit {
        Debit {
            tx: TxId::new(tx).unwrap(),
            player: "alice".to_owned(),
            currency: "EUR".to_owned(),
            amount,
            table: "T01".to_owned(),
            round: "T01-S0001-H001".to_owned(),
            bet: "banker".to_owned(),
            position_total: amount,
        }
    }

    fn cancel_of(d: &Debit) -> Cancel {
        d.cancel_as(TxId::new(format!("cancel:{}", d.tx)).unwrap())
    }

    #[tokio::test]
    async fn debits_sent_together_are_told_as_one_message_and_each_answered() {
        let wallet = MemoryWallet::new();
        wallet.deposit("dep-1", "alice", "EUR", 1_000).unwrap();
        let mut changes = wallet.changes().unwrap();
        let debits = [debit("d1", 300), debit("d2", 900), debit("d3", 200)];
        let answers = wallet.debit_many(&debits, Duration::from_secs(1)).await;
        assert_eq!(answers[0].as_ref().unwrap().balance, 700);
        assert_eq!(
            answers[1],
            Err(WalletError::InsufficientFunds {
                needed: 900,
                available: 700
            })
        );
        assert_eq!(answers[2].as_ref().unwrap().balance, 500);
        let told = changes.try_recv().unwrap();
        let told: Vec<_> = told.iter().map(|c| (c.tx.as_str(), c.balance)).collect();
        assert_eq!(told, [("d1", 700), ("d3", 500)]);
        assert!(changes.try_recv().is_err(), "one message for the three");

        // Each debit is a call: a wallet told to fail twice fails the first two.
        wallet.fail_next(2);
        let answers = wallet
            .debit_many(
                &[debit("d4", 1), debit("d5", 1), debit("d6", 1)],
                Duration::from_secs(1),
            )
            .await;
        assert!(matches!(answers[0], Err(WalletError::Unavailable(_))));
        assert!(matches!(answers[1], Err(WalletError::Unavailable(_))));
        assert_eq!(answers[2].as_ref().unwrap().balance, 499);
    }

    #[tokio::test]
    async fn keeps_the_contract() {
        let wallet = MemoryWallet::new();
        wallet.deposit("dep-1", "alice", "EUR", 1_000).unwrap();
        assert!(
            wallet
                .deposit("dep-1", "alice", "EUR", 1_000)
                .unwrap()
                .replayed
        );
        assert_eq!(wallet.balance("alice", "EUR"), 1_000);

        let d1 = debit("d1", 600);
        assert_eq!(wallet.debit(&d1).await.unwrap().balance, 400);
        assert!(
            wallet.debit(&d1).await.unwrap().replayed,
            "same id, same answer"
        );
        assert_eq!(wallet.balance("alice", "EUR"), 400);
        assert!(matches!(
            wallet.debit(&debit("d1", 500)).await,
            Err(WalletError::Conflict { .. })
        ));
        assert_eq!(
            wallet.debit(&debit("d2", 500)).await,
            Err(WalletError::InsufficientFunds {
                needed: 500,
                available: 400
            })
        );

        // A cancel before its debit is remembered: the late debit is refused.
        let d3 = debit("d3", 100);
        wallet.cancel(&cancel_of(&d3)).await.unwrap();
        assert!(matches!(
            wallet.debit(&d3).await,
            Err(WalletError::Cancelled { .. })
        ));
        assert_eq!(wallet.balance("alice", "EUR"), 400);

        // A cancel after its debit gives the money back; a credit settles the other.
        let d4 = debit("d4", 100);
        wallet.debit(&d4).await.unwrap();
        assert_eq!(wallet.cancel(&cancel_of(&d4)).await.unwrap().balance, 400);
        let credit = Credit {
            tx: TxId::new("c1").unwrap(),
            player: "alice".to_owned(),
            currency: "EUR".to_owned(),
            amount: 1_170,
            kind: crate::api::CreditKind::Settlement,
            table: "T01".to_owned(),
            round: "T01-S0001-H001".to_owned(),
            bet: "banker".to_owned(),
            debits: vec![d1.tx.clone()],
        };
        assert_eq!(wallet.credit(&credit).await.unwrap().balance, 1_570);
        assert!(wallet.credit(&credit).await.unwrap().replayed);
        assert!(matches!(
            wallet.cancel(&cancel_of(&d1)).await,
            Err(WalletError::AlreadySettled { .. })
        ));
        assert_eq!(wallet.balance("alice", "EUR"), 1_570);
    }
}
