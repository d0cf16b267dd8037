//! A wallet for the conformance checks to catch: [`crate::MemoryWallet`] with one fault.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::MemoryWallet;
use crate::api::{
    AccountView, BoxFuture, Cancel, Changes, Credit, Debit, LimitChange, Receipt, SelfLimit, TxId,
    Wallet, WalletError,
};

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
                version: None,
            })
        })
    }

    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        self.inner.set_self_limit(change)
    }

    fn changes(&self) -> Option<broadcast::Receiver<Changes>> {
        self.inner.changes()
    }
}
