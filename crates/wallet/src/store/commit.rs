//! Group commit: one committer task per open store takes every request waiting in its
//! queue (up to [`MAX_BATCH`]), decides them in arrival order and writes them all in ONE
//! transaction, then answers each caller. Requests that arrive while a transaction
//! commits wait for the next one, so under load one fsync serves many tables' debits;
//! alone, a request is committed at once.
//!
//! In the transaction the accounts touched are read (on PostgreSQL created if need be and
//! locked, `FOR UPDATE`, in key order so that two stores on one database never deadlock,
//! [`super::postgres`]; on SQLite the transaction takes the database's one write lock as it
//! begins, on the committer's own thread, [`super::sqlite`]), then the earlier requests of
//! the same ids and the marks of the debits named.
//! What another store commits on an account first is therefore what this one decides on:
//! no balance is written from a stale read. If the database fails the transaction (a
//! store elsewhere took the same id at the same instant, a full disk), nothing of it was
//! committed, and each request is tried again in a transaction of its own, so that each
//! caller gets its own answer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::decide::{self, Answer, Kind, Link, MovementRow, Op, Writes};
use super::{Shared, StoreError, Writer};
use crate::api::{TxId, WalletError};

/// Requests decided and written in one transaction at most.
pub(crate) const MAX_BATCH: usize = 1024;

type Reply = oneshot::Sender<Result<Answer, WalletError>>;

/// The queue of a store's committer.
#[derive(Debug)]
pub(crate) struct Committer {
    /// Requests sent together arrive together, so they go in one transaction.
    queue: mpsc::UnboundedSender<Vec<(Op, Reply)>>,
    counts: Arc<Counts>,
}

/// What the committer has done since the store was opened: transactions and the requests
/// they carried, for a benchmark or a test to see group commit at work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Transactions committed or tried (each one commit, so one fsync on SQLite).
    pub commits: u64,
    /// Requests they carried.
    pub requests: u64,
    /// The most one carried (since the store opened, or since its maxima were restarted).
    pub largest: u64,
    /// The longest one took, from its first statement to its answer (a commit that waited
    /// on the disk, or copied the WAL back, shows here as every request in it waited);
    /// since the store opened, or since its maxima were restarted.
    pub longest: Duration,
}

#[derive(Debug, Default)]
struct Counts {
    commits: AtomicU64,
    requests: AtomicU64,
    largest: AtomicU64,
    longest_us: AtomicU64,
}

impl Counts {
    fn batch(&self, requests: usize) {
        let requests = requests as u64;
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.requests.fetch_add(requests, Ordering::Relaxed);
        self.largest.fetch_max(requests, Ordering::Relaxed);
    }

    fn took(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.longest_us.fetch_max(micros, Ordering::Relaxed);
    }
}

impl Committer {
    /// Starts the committer (on the current Tokio runtime); it stops when the store is
    /// dropped.
    pub(crate) fn start(shared: Arc<Shared>) -> Committer {
        let (queue, rx) = mpsc::unbounded_channel();
        let counts = Arc::new(Counts::default());
        tokio::spawn(run(shared, Arc::clone(&counts), rx));
        Committer { queue, counts }
    }

    pub(crate) fn stats(&self) -> CommitStats {
        CommitStats {
            commits: self.counts.commits.load(Ordering::Relaxed),
            requests: self.counts.requests.load(Ordering::Relaxed),
            largest: self.counts.largest.load(Ordering::Relaxed),
            longest: Duration::from_micros(self.counts.longest_us.load(Ordering::Relaxed)),
        }
    }

    /// [`CommitStats::largest`] and [`CommitStats::longest`] count from now on.
    pub(crate) fn restart_maxima(&self) {
        self.counts.largest.store(0, Ordering::Relaxed);
        self.counts.longest_us.store(0, Ordering::Relaxed);
    }

    /// Queues `op` and waits for its transaction's commit.
    pub(crate) async fn submit(&self, op: Op) -> Result<Answer, WalletError> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(vec![(op, reply)]).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Queues `ops` together (so that one transaction decides them all, with whatever
    /// else waits) and waits for its commit: an answer for each, in order.
    pub(crate) async fn submit_many(&self, ops: Vec<Op>) -> Vec<Result<Answer, WalletError>> {
        let (requests, answers): (Vec<_>, Vec<_>) = ops
            .into_iter()
            .map(|op| {
                let (reply, answer) = oneshot::channel();
                ((op, reply), answer)
            })
            .unzip();
        // Not sent: every answer's sender is dropped with it, and each reads as closed.
        let _ = self.queue.send(requests);
        let mut decided = Vec::with_capacity(answers.len());
        for answer in answers {
            decided.push(answer.await.unwrap_or_else(|_| Err(stopped())));
        }
        decided
    }
}

fn stopped() -> WalletError {
    WalletError::Unavailable("the wallet store is closed".to_owned())
}

async fn run(
    shared: Arc<Shared>,
    counts: Arc<Counts>,
    mut rx: mpsc::UnboundedReceiver<Vec<(Op, Reply)>>,
) {
    while let Some(mut batch) = rx.recv().await {
        while batch.len() < MAX_BATCH {
            let Ok(next) = rx.try_recv() else { break };
            batch.extend(next);
        }
        counts.batch(batch.len());
        commit(&shared, &counts, batch).await;
    }
}

async fn commit(shared: &Shared, counts: &Counts, batch: Vec<(Op, Reply)>) {
    let started = Instant::now();
    let (ops, replies): (Vec<Op>, Vec<Reply>) = batch.into_iter().unzip();
    let ops: Arc<[Op]> = ops.into();
    if let Some(metrics) = &shared.metrics {
        metrics.batch(ops.len());
    }
    match write(shared, Arc::clone(&ops)).await {
        Ok(answers) => {
            timed(shared, counts, started);
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(e) if ops.len() == 1 => {
            timed(shared, counts, started);
            for reply in replies {
                let _ = reply.send(Err(unavailable(&e)));
            }
        }
        Err(_) => {
            // Each caller answered as soon as its own transaction is done.
            for (op, reply) in ops.iter().zip(replies) {
                let answer = write(shared, Arc::from([op.clone()]))
                    .await
                    .map_err(|e| unavailable(&e))
                    .and_then(|mut answers| {
                        answers.pop().unwrap_or_else(|| {
                            Err(WalletError::Unavailable("no answer".to_owned()))
                        })
                    });
                let _ = reply.send(answer);
            }
            timed(shared, counts, started);
        }
    }
}

/// Counts a commit's time; before its answers go where it can, so that whoever reads the
/// counts after an answer finds its commit in them.
fn timed(shared: &Shared, counts: &Counts, started: Instant) {
    let took = started.elapsed();
    counts.took(took);
    if let Some(metrics) = &shared.metrics {
        metrics.took(took);
    }
}

fn unavailable(e: &StoreError) -> WalletError {
    tracing::warn!(error = %e, "wallet: a transaction failed; nothing of it was written");
    WalletError::Unavailable(format!("the wallet's database failed: {e}"))
}

/// What one transaction decided: an answer for each request, and what it wrote.
pub(super) type Decided = (Vec<Result<Answer, WalletError>>, Writes);

/// Decides and writes `ops` in one transaction on the store's backend, then publishes
/// their balance changes; an answer for each once committed.
async fn write(
    shared: &Shared,
    ops: Arc<[Op]>,
) -> Result<Vec<Result<Answer, WalletError>>, StoreError> {
    let now_ms = shared.clock.now_ms();
    let (answers, mut writes) = match &shared.writer {
        Writer::Sqlite(writer) => writer.write(Arc::clone(&ops), now_ms, shared.policy).await,
        Writer::Postgres(pool) => super::postgres::write(pool, &ops, now_ms, shared.policy).await,
        Writer::ReadOnly => Err(StoreError::ReadOnly),
    }?;
    if !writes.changes.is_empty() {
        // Nobody listening is not an error.
        let _ = shared
            .changes
            .send(std::mem::take(&mut writes.changes).into());
    }
    if let Some(metrics) = &shared.metrics {
        metrics.decided(&ops, &answers, writes.accounts.len());
    }
    Ok(answers)
}

/// What a batch's decisions read: its accounts (in key order, the order PostgreSQL locks
/// them in), the ids it names (its own, and the debits credits and cancels name), and the
/// debits whose marks matter. Each once.
#[derive(Debug)]
pub(super) struct Needs<'a> {
    pub(super) accounts: Vec<(&'a str, &'a str)>,
    pub(super) ids: Vec<&'a str>,
    pub(super) debits: Vec<&'a str>,
}

impl<'a> Needs<'a> {
    pub(super) fn of(ops: &'a [Op]) -> Needs<'a> {
        let accounts: BTreeSet<(&str, &str)> = ops
            .iter()
            .filter(|op| op.check().is_ok())
            .map(Op::account)
            .collect();
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        let mut debits: BTreeSet<&str> = BTreeSet::new();
        for op in ops {
            ids.extend(op.tx().map(TxId::as_str));
            for debit in op.debits() {
                ids.insert(debit.as_str());
                debits.insert(debit.as_str());
            }
        }
        Needs {
            accounts: accounts.into_iter().collect(),
            ids: ids.into_iter().collect(),
            debits: debits.into_iter().collect(),
        }
    }
}

/// The columns a movement is written with, in the order both backends bind them (its
/// number aside: SQLite numbers each as it inserts it, PostgreSQL's are taken first).
pub(super) const MOVEMENT_COLUMNS: &str = "tx, kind, player, currency, amount, table_id, \
    round_id, bet, position_total, credit_kind, refs, delta, balance, version, refusal, at_ms, \
    prev";

/// The columns an account is written with.
pub(super) const ACCOUNT_COLUMNS: &str = "player, currency, balance, blocked, max_bet, pending, \
    pending_max_bet, pending_at, raise_asked_at, version, last_movement";

/// An account's write replaces every column but its key.
pub(super) const ACCOUNT_UPDATE: &str = " ON CONFLICT (player, currency) DO UPDATE SET \
    balance = excluded.balance, blocked = excluded.blocked, max_bet = excluded.max_bet, \
    pending = excluded.pending, pending_max_bet = excluded.pending_max_bet, \
    pending_at = excluded.pending_at, raise_asked_at = excluded.raise_asked_at, \
    version = excluded.version, last_movement = excluded.last_movement";

/// A debit's newer mark replaces its older one.
pub(super) const MARK_UPDATE: &str = " ON CONFLICT (debit) DO UPDATE SET state = excluded.state";

/// A time in unix ms or a version as stored (BIGINT): neither comes near `i64::MAX`.
pub(super) fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A refused movement's refusal as stored (JSON), to answer a retry alike.
pub(super) fn refusal_text(m: &MovementRow) -> Result<Option<String>, StoreError> {
    m.refusal
        .as_ref()
        .map(|r| serde_json::to_string(r).map_err(|e| StoreError::Corrupt(e.to_string())))
        .transpose()
}

/// The number of the movement `link` points to (`numbers`: the batch's, as written so
/// far).
pub(super) fn number(link: Option<Link>, numbers: &[i64]) -> Result<Option<i64>, StoreError> {
    match link {
        None => Ok(None),
        Some(Link::Stored(seq)) => Ok(Some(seq)),
        Some(Link::Written(place)) => numbers.get(place).copied().map(Some).ok_or_else(|| {
            StoreError::Corrupt(format!("movement {place} of the batch is not numbered"))
        }),
    }
}

pub(crate) fn tx_id(text: String) -> Result<TxId, StoreError> {
    TxId::new(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// How many of `ops` each kind of movement took and refused (for the metrics).
pub(crate) fn results<'a>(
    ops: &'a [Op],
    answers: &'a [Result<Answer, WalletError>],
) -> impl Iterator<Item = (&'static str, &'static str)> + 'a {
    ops.iter().zip(answers).map(|(op, answer)| {
        let kind = match op {
            Op::Debit(_) => Kind::Debit.as_str(),
            Op::Credit(_) => Kind::Credit.as_str(),
            Op::Cancel(_) => Kind::Cancel.as_str(),
            Op::Cash(decide::CashKind::Deposit, _) => Kind::Deposit.as_str(),
            Op::Cash(decide::CashKind::Withdrawal, _) => Kind::Withdrawal.as_str(),
            Op::SetLimit(_) => "self_limit",
            Op::SetBlocked { .. } => "block",
        };
        (kind, super::result_label(answer))
    })
}
