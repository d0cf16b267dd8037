//! What the store counts for Prometheus: movements by kind and result, the accounts each
//! transaction touched, how many requests each commit carried and how long it took. The
//! committer adds to atomics; the `/metrics` endpoint only reads.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::decide::{Answer, Op};
use crate::api::WalletError;

type Labels = [(&'static str, &'static str); 2];

/// The store's metrics; cheap to clone.
#[derive(Clone, Debug)]
pub struct StoreMetrics {
    movements: Family<Labels, Counter>,
    accounts: Counter,
    batch: Histogram,
    took: Histogram,
}

impl StoreMetrics {
    /// New metrics, registered into `registry` under `banco_wallet_*`.
    pub fn register(registry: &mut Registry) -> StoreMetrics {
        let metrics = StoreMetrics {
            movements: Family::default(),
            accounts: Counter::default(),
            // 1, 2, 4, … 1,024: a commit carries at most 1,024 requests.
            batch: Histogram::new(exponential_buckets(1.0, 2.0, 11)),
            // 0.25 ms, 0.5 ms, … 1 s: a commit here takes 1 to 5 ms, a slow disk far more.
            took: Histogram::new(exponential_buckets(0.000_25, 2.0, 13)),
        };
        registry.register(
            "banco_wallet_movements",
            "Requests decided, by kind (debit, credit, cancel, deposit, withdrawal, self_limit, block) and result (ok, replayed, or the refusal)",
            metrics.movements.clone(),
        );
        registry.register(
            "banco_wallet_accounts_touched",
            "Accounts written, counted once per transaction that wrote them",
            metrics.accounts.clone(),
        );
        registry.register(
            "banco_wallet_commit_batch_requests",
            "Requests decided and written in one transaction (one fsync)",
            metrics.batch.clone(),
        );
        registry.register(
            "banco_wallet_commit_seconds",
            "Time from a transaction's first statement to its answers, its fsync included (what each of its requests waited at the database)",
            metrics.took.clone(),
        );
        metrics
    }

    pub(crate) fn batch(&self, requests: usize) {
        self.batch.observe(requests as f64);
    }

    pub(crate) fn took(&self, took: std::time::Duration) {
        self.took.observe(took.as_secs_f64());
    }

    pub(crate) fn decided(
        &self,
        ops: &[Op],
        answers: &[Result<Answer, WalletError>],
        accounts: usize,
    ) {
        for labels in super::commit::results(ops, answers) {
            self.movements
                .get_or_create(&[("kind", labels.0), ("result", labels.1)])
                .inc();
        }
        self.accounts.inc_by(accounts as u64);
    }
}
