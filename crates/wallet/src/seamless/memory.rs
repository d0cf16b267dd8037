//! A small wallet in memory that keeps the [`Wallet`] trait's contract, to test the
//! protocol against (here, and `banco wallet conformance` in other crates): not a store,
//! it forgets everything when dropped.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::api::{
    AccountView, BalanceChange, BoxFuture, Cancel, Credit, Debit, Receipt, SelfLimit, TxId, Wallet,
    WalletError,
};

/// A raise or removal of a self-limit waits this long (the rules' default cooling-off).
pub const COOLING_OFF_MS: u64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Default)]
struct Account {
    balance: i64,
    blocked: bool,
    self_limit: SelfLimit,
}

/// What a transaction id was first used for, and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    Debit(Debit),
    Credit(Credit),
    Cancel(Cancel),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DebitState {
    Taken,
    Settled,
    Cancelled,
}

#[derive(Debug, Default)]
struct State {
    accounts: HashMap<(String, String), Account>,
    answered: HashMap<TxId, (Request, Receipt)>,
    debits: HashMap<TxId, (DebitState, Debit)>,
    /// Cancels of debits never received: the debit is refused if it comes.
    cancelled_early: HashSet<TxId>,
}

/// Accounts and movements in memory; see the module.
#[derive(Debug)]
pub struct MemoryWallet {
    state: Mutex<State>,
    changes: broadcast::Sender<BalanceChange>,
}

impl Default for MemoryWallet {
    fn default() -> MemoryWallet {
        MemoryWallet {
            state: Mutex::new(State::default()),
            changes: broadcast::channel(1024).0,
        }
    }
}

impl MemoryWallet {
    pub fn new() -> Arc<MemoryWallet> {
        Arc::new(MemoryWallet::default())
    }

    /// Money in at the cashier.
    pub fn deposit(&self, player: &str, currency: &str, amount: i64) {
        self.lock().account(player, currency).balance += amount;
    }

    /// Blocks (or unblocks) the player's account: debits are refused.
    pub fn set_blocked(&self, player: &str, currency: &str, blocked: bool) {
        self.lock().account(player, currency).blocked = blocked;
    }

    /// The available balance now.
    pub fn balance(&self, player: &str, currency: &str) -> i64 {
        self.lock().account(player, currency).balance
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere with the lock held leaves the maps consistent: each movement
        // changes them only after its checks.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes the movement `request` asks for: the first answer again for the same request,
    /// a conflict for another one with its id; else `apply` decides, with the lock held,
    /// how much it moves (or refuses it, changing nothing).
    fn movement(
        &self,
        request: Request,
        apply: impl FnOnce(&mut State) -> Result<i64, WalletError>,
    ) -> Result<Receipt, WalletError> {
        let (tx, player, currency, table, reason, amount, least) = match &request {
            Request::Debit(d) => (
                &d.tx,
                &d.player,
                &d.currency,
                &d.table,
                "debit",
                d.amount,
                1,
            ),
            Request::Credit(c) => (
                &c.tx,
                &c.player,
                &c.currency,
                &c.table,
                "credit",
                c.amount,
                0,
            ),
            Request::Cancel(c) => (
                &c.tx,
                &c.player,
                &c.currency,
                &c.table,
                "cancel",
                c.amount,
                1,
            ),
        };
        check_amount(amount, least, "amount")?;
        check_currency(currency)?;
        let mut state = self.lock();
        if let Some((first, receipt)) = state.answered.get(tx) {
            return if *first == request {
                Ok(Receipt {
                    replayed: true,
                    ..receipt.clone()
                })
            } else {
                Err(WalletError::Conflict {
                    tx: tx.clone(),
                    why: format!("it was {}", describe(first)),
                })
            };
        }
        let delta = apply(&mut state)?;
        let account = state.account(player, currency);
        account.balance += delta;
        let receipt = Receipt {
            tx: tx.clone(),
            balance: account.balance,
            currency: currency.clone(),
            replayed: false,
        };
        // Nobody listening is fine.
        let _ = self.changes.send(BalanceChange {
            player: player.clone(),
            currency: currency.clone(),
            balance: receipt.balance,
            delta,
            tx: tx.clone(),
            reason: reason.to_owned(),
            table: table.clone(),
        });
        state
            .answered
            .insert(receipt.tx.clone(), (request, receipt.clone()));
        Ok(receipt)
    }

    fn debit_now(&self, debit: &Debit) -> Result<Receipt, WalletError> {
        self.movement(Request::Debit(debit.clone()), |state| {
            if state.cancelled_early.contains(&debit.tx) {
                return Err(WalletError::Cancelled {
                    tx: debit.tx.clone(),
                });
            }
            let account = state.account(&debit.player, &debit.currency);
            if account.blocked {
                return Err(WalletError::AccountBlocked);
            }
            if let Some(limit) = account.self_limit.max_bet
                && debit.position_total > limit
            {
                return Err(WalletError::SelfLimit {
                    limit,
                    asked: debit.position_total,
                });
            }
            if account.balance < debit.amount {
                return Err(WalletError::InsufficientFunds {
                    needed: debit.amount,
                    available: account.balance,
                });
            }
            state
                .debits
                .insert(debit.tx.clone(), (DebitState::Taken, debit.clone()));
            Ok(-debit.amount)
        })
    }

    fn credit_now(&self, credit: &Credit) -> Result<Receipt, WalletError> {
        self.movement(Request::Credit(credit.clone()), |state| {
            for tx in &credit.debits {
                match state.debits.get(tx) {
                    None if state.cancelled_early.contains(tx) => {
                        return Err(WalletError::Cancelled { tx: tx.clone() });
                    }
                    None => return Err(WalletError::DebitDoesNotExist { tx: tx.clone() }),
                    Some((DebitState::Cancelled, _)) => {
                        return Err(WalletError::Cancelled { tx: tx.clone() });
                    }
                    Some((DebitState::Settled, _)) => {
                        return Err(WalletError::AlreadySettled { tx: tx.clone() });
                    }
                    Some((DebitState::Taken, debit)) => {
                        if debit.player != credit.player || debit.currency != credit.currency {
                            return Err(WalletError::Invalid(format!(
                                "debits: {tx} is {}'s in {}, not {}'s in {}",
                                debit.player, debit.currency, credit.player, credit.currency
                            )));
                        }
                    }
                }
            }
            for tx in &credit.debits {
                if let Some((debit, _)) = state.debits.get_mut(tx) {
                    *debit = DebitState::Settled;
                }
            }
            Ok(credit.amount)
        })
    }

    fn cancel_now(&self, cancel: &Cancel) -> Result<Receipt, WalletError> {
        self.movement(Request::Cancel(cancel.clone()), |state| {
            let refund = match state.debits.get(&cancel.debit) {
                None => {
                    state.cancelled_early.insert(cancel.debit.clone());
                    return Ok(0);
                }
                Some((DebitState::Settled, _)) => {
                    return Err(WalletError::AlreadySettled {
                        tx: cancel.debit.clone(),
                    });
                }
                // Cancelled by another cancel id: nothing more to give back.
                Some((DebitState::Cancelled, _)) => 0,
                Some((DebitState::Taken, debit)) => {
                    if debit.amount != cancel.amount
                        || debit.player != cancel.player
                        || debit.currency != cancel.currency
                    {
                        return Err(WalletError::Invalid(format!(
                            "debit {}: {} {} of {}'s, not {} {} of {}'s",
                            cancel.debit,
                            debit.amount,
                            debit.currency,
                            debit.player,
                            cancel.amount,
                            cancel.currency,
                            cancel.player
                        )));
                    }
                    debit.amount
                }
            };
            if let Some((debit, _)) = state.debits.get_mut(&cancel.debit) {
                *debit = DebitState::Cancelled;
            }
            Ok(refund)
        })
    }
}

impl State {
    fn account(&mut self, player: &str, currency: &str) -> &mut Account {
        self.accounts
            .entry((player.to_owned(), currency.to_owned()))
            .or_default()
    }
}

fn describe(request: &Request) -> String {
    match request {
        Request::Debit(d) => format!("a debit of {} from {}", d.amount, d.player),
        Request::Credit(c) => format!("a credit of {} to {}", c.amount, c.player),
        Request::Cancel(c) => format!("a cancel of {}", c.debit),
    }
}

fn check_amount(amount: i64, least: i64, field: &str) -> Result<(), WalletError> {
    if amount < least {
        return Err(WalletError::Invalid(format!(
            "{field}: {amount} is less than {least}"
        )));
    }
    Ok(())
}

fn check_currency(currency: &str) -> Result<(), WalletError> {
    if currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(WalletError::Invalid(format!(
            "currency: `{currency}` is not an ISO 4217 code (three capital letters)"
        )))
    }
}

impl Wallet for MemoryWallet {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        Box::pin(async move {
            check_currency(currency)?;
            let mut state = self.lock();
            let account = state.account(player, currency);
            if let Some((limit, at)) = account.self_limit.pending
                && at <= super::protocol::now_ms()
            {
                account.self_limit = SelfLimit {
                    max_bet: limit,
                    pending: None,
                };
            }
            Ok(AccountView {
                player: player.to_owned(),
                currency: currency.to_owned(),
                balance: account.balance,
                blocked: account.blocked,
                self_limit: account.self_limit.clone(),
            })
        })
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move { self.debit_now(debit) })
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move { self.credit_now(credit) })
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move { self.cancel_now(cancel) })
    }

    fn set_self_limit<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
        max_bet: Option<i64>,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        Box::pin(async move {
            if let Some(limit) = max_bet {
                check_amount(limit, 1, "max_bet")?;
            }
            let mut state = self.lock();
            let limit = &mut state.account(player, currency).self_limit;
            let lowering = match (max_bet, limit.max_bet) {
                (Some(new), Some(old)) => new <= old,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if lowering {
                *limit = SelfLimit {
                    max_bet,
                    pending: None,
                };
            } else {
                limit.pending = Some((max_bet, now_ms + COOLING_OFF_MS));
            }
            Ok(limit.clone())
        })
    }

    fn changes(&self) -> Option<broadcast::Receiver<BalanceChange>> {
        Some(self.changes.subscribe())
    }
}

/// A deliberately wrong wallet: it answers a cancel of a debit it has not seen with OK but
/// does not remember it, so the debit, arriving late, is taken. What `banco wallet
/// conformance` must catch.
#[derive(Debug)]
pub struct ForgetsEarlyCancels {
    inner: Arc<MemoryWallet>,
    seen: Mutex<HashSet<TxId>>,
}

impl ForgetsEarlyCancels {
    pub fn new(inner: Arc<MemoryWallet>) -> Arc<ForgetsEarlyCancels> {
        Arc::new(ForgetsEarlyCancels {
            inner,
            seen: Mutex::new(HashSet::new()),
        })
    }

    fn seen(&self) -> MutexGuard<'_, HashSet<TxId>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Wallet for ForgetsEarlyCancels {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        self.inner.account(player, currency)
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        self.seen().insert(debit.tx.clone());
        self.inner.debit(debit)
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        self.inner.credit(credit)
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        if self.seen().contains(&cancel.debit) {
            return self.inner.cancel(cancel);
        }
        Box::pin(async move {
            Ok(Receipt {
                tx: cancel.tx.clone(),
                balance: self.inner.balance(&cancel.player, &cancel.currency),
                currency: cancel.currency.clone(),
                replayed: false,
            })
        })
    }

    fn set_self_limit<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
        max_bet: Option<i64>,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        self.inner.set_self_limit(player, currency, max_bet, now_ms)
    }

    fn changes(&self) -> Option<broadcast::Receiver<BalanceChange>> {
        self.inner.changes()
    }
}
