//! How long the table waited for its wallet: a wallet that passes every call on to the one
//! it wraps and keeps, for each debit, the time from the table sending it to the answer.
//! With the bet's own latency beside it, a run tells the wallet's part of a bet's wait
//! from the rest (the journal, the table's thread, the connections).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use banco_wallet::{
    AccountView, BoxFuture, Cancel, Changes, Credit, Debit, LimitChange, Receipt, SelfLimit,
    TableRounds, Wallet, WalletError,
};

#[derive(Debug)]
pub(crate) struct TimedWallet {
    inner: Arc<dyn Wallet>,
    /// One wait per debit, in the order the answers came.
    waits: Mutex<Vec<Duration>>,
}

impl TimedWallet {
    pub(crate) fn new(inner: Arc<dyn Wallet>) -> TimedWallet {
        TimedWallet {
            inner,
            waits: Mutex::new(Vec::new()),
        }
    }

    /// The waits since the last call, which starts counting afresh.
    pub(crate) fn take_waits(&self) -> Vec<Duration> {
        std::mem::take(&mut *self.waits.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `answer`, once it came, keeping its wait for each of its `debits`.
    async fn timed<T>(&self, debits: usize, answer: BoxFuture<'_, T>) -> T {
        let sent = Instant::now();
        let answer = answer.await;
        let waited = sent.elapsed();
        let mut waits = self.waits.lock().unwrap_or_else(PoisonError::into_inner);
        waits.extend(std::iter::repeat_n(waited, debits));
        answer
    }
}

impl Wallet for TimedWallet {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        self.inner.account(player, currency)
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.timed(1, self.inner.debit(debit)))
    }

    fn debit_many<'a>(
        &'a self,
        debits: &'a [Debit],
        timeout: Duration,
    ) -> BoxFuture<'a, Vec<Result<Receipt, WalletError>>> {
        Box::pin(self.timed(debits.len(), self.inner.debit_many(debits, timeout)))
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        self.inner.credit(credit)
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        self.inner.cancel(cancel)
    }

    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        self.inner.set_self_limit(change)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Changes>> {
        self.inner.changes()
    }

    fn table_rounds<'a>(
        &'a self,
        table: &'a str,
    ) -> BoxFuture<'a, Result<TableRounds, WalletError>> {
        self.inner.table_rounds(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use banco_wallet::{MemoryWallet, TxId};

    fn debit(tx: &str) -> Debit {
        Debit {
            tx: TxId::new(tx).expect("a valid id"),
            player: "alice".to_owned(),
            currency: "EUR".to_owned(),
            amount: 100,
            table: "T01".to_owned(),
            round: "T01-S0001-H001".to_owned(),
            bet: "banker".to_owned(),
            position_total: 100,
        }
    }

    /// Every debit's answer is passed on unchanged and waited for once, a group's debits
    /// each; what else the wallet is asked keeps no wait.
    #[tokio::test]
    async fn keeps_a_wait_for_each_debit_and_passes_the_answers_on() {
        let memory = Arc::new(MemoryWallet::new());
        memory
            .deposit("dep-1", "alice", "EUR", 250)
            .expect("a deposit");
        let timed = TimedWallet::new(memory);
        let answers = timed
            .debit_many(
                &[debit("d1"), debit("d2"), debit("d3")],
                Duration::from_secs(1),
            )
            .await;
        assert_eq!(answers[0].as_ref().map(|r| r.balance), Ok(150));
        assert_eq!(answers[1].as_ref().map(|r| r.balance), Ok(50));
        assert!(matches!(
            answers[2],
            Err(WalletError::InsufficientFunds {
                needed: 100,
                available: 50
            })
        ));
        let one = timed.debit(&debit("d4")).await;
        assert!(matches!(one, Err(WalletError::InsufficientFunds { .. })));
        let view = timed.account("alice", "EUR").await.expect("an account");
        assert_eq!(view.balance, 50);
        assert_eq!(timed.take_waits().len(), 4);
        assert!(timed.take_waits().is_empty(), "counting starts afresh");
    }
}
