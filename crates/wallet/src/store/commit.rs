//! Group commit: one committer per open store takes every request waiting in its queue
//! (up to [`MAX_BATCH`]), decides them in arrival order and writes them all in ONE
//! transaction, then answers each caller. Requests that arrive while a transaction
//! commits wait for the next one, so under load one fsync serves many tables' debits;
//! alone, a request is committed at once.
//!
//! On SQLite the committer is a thread of its own, which gathers the batch, runs its
//! transaction on its own connection and answers, then gathers the next ([`super::sqlite`]);
//! on PostgreSQL a task on the runtime that opened the store. Either way one queue carries
//! the requests and the close, so a close comes after whatever was asked before it.
//!
//! In the transaction the accounts touched are read (on PostgreSQL created if need be and
//! locked, `FOR UPDATE`, in key order so that two stores on one database never deadlock,
//! [`super::postgres`]; on SQLite the transaction takes the database's one write lock as it
//! begins, [`super::sqlite`]), then the earlier requests of the same ids and the marks of
//! the debits named.
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

use super::decide::{self, Answer, Kind, LimitPolicy, Link, MovementRow, Op, Writes};
use super::{Shared, StoreError};
use crate::api::{TxId, WalletError};

/// Requests decided and written in one transaction at most (a caller's requests are not
/// split: a batch may pass this by the last caller's).
pub(crate) const MAX_BATCH: usize = 1024;

type Answers = Vec<Result<Answer, WalletError>>;

/// What a committer is asked.
pub(super) enum Request {
    /// A caller's requests, decided in one transaction and answered together.
    Decide {
        ops: Vec<Op>,
        reply: oneshot::Sender<Answers>,
    },
    /// Stop once what came before is answered, closing the writer's connection.
    Close(oneshot::Sender<()>),
}

/// What runs a batch's transaction, and owns the connection it runs on.
pub(super) trait Transact {
    /// Decides and writes `ops` in one transaction.
    async fn transact(&mut self, ops: &[Op], at: Deciding) -> Result<Decided, StoreError>;

    /// After a batch's answers are sent.
    fn answered(&mut self) {}

    /// Closes the connection.
    async fn close(self);
}

/// The time a batch is decided at, and the rules of self-limits it is decided by.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deciding {
    pub(super) now_ms: u64,
    pub(super) policy: LimitPolicy,
}

/// A store opened to read only: every request is refused.
pub(super) struct ReadOnly;

impl Transact for ReadOnly {
    async fn transact(&mut self, _: &[Op], _: Deciding) -> Result<Decided, StoreError> {
        Err(StoreError::ReadOnly)
    }

    async fn close(self) {}
}

/// The queue of a store's committer.
#[derive(Debug)]
pub(crate) struct Committer {
    queue: mpsc::UnboundedSender<Request>,
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

/// A committer's end of its queue, and what it reports to.
pub(super) struct Queue {
    shared: Arc<Shared>,
    counts: Arc<Counts>,
    requests: mpsc::UnboundedReceiver<Request>,
}

impl Committer {
    /// The queue, and its end for the committer to run ([`run`]).
    pub(super) fn new(shared: Arc<Shared>) -> (Committer, Queue) {
        let (queue, requests) = mpsc::unbounded_channel();
        let counts = Arc::new(Counts::default());
        let end = Queue {
            shared,
            counts: Arc::clone(&counts),
            requests,
        };
        (Committer { queue, counts }, end)
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
        self.submit_many(vec![op])
            .await
            .pop()
            .unwrap_or_else(|| Err(stopped()))
    }

    /// Queues `ops` together (so that one transaction decides them all, with whatever
    /// else waits) and waits for its commit: an answer for each, in order.
    pub(crate) async fn submit_many(&self, ops: Vec<Op>) -> Answers {
        let count = ops.len();
        let (reply, answers) = oneshot::channel();
        // Not sent, or the committer gone before answering: the reply is dropped unsent.
        let _ = self.queue.send(Request::Decide { ops, reply });
        answers
            .await
            .unwrap_or_else(|_| (0..count).map(|_| Err(stopped())).collect())
    }

    /// Stops the committer once what was asked before is answered, and closes its
    /// connection; whatever is asked after is refused as closed.
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.queue.send(Request::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

fn stopped() -> WalletError {
    WalletError::Unavailable("the wallet store is closed".to_owned())
}

type Batch = Vec<(Vec<Op>, oneshot::Sender<Answers>)>;

/// The committer: batch after batch, until the store is closed or dropped.
pub(super) async fn run(mut queue: Queue, mut writer: impl Transact) {
    let mut closed = None;
    while closed.is_none()
        && let Some(first) = queue.requests.recv().await
    {
        let batch;
        (batch, closed) = gather(first, &mut queue.requests);
        if !batch.is_empty() {
            commit(&queue, &mut writer, batch).await;
            writer.answered();
        }
    }
    writer.close().await;
    // Whatever waits, or is asked from now on, is refused as closed.
    drop(queue.requests);
    if let Some(done) = closed {
        let _ = done.send(());
    }
}

/// `first` and whatever else waits, up to [`MAX_BATCH`] requests or a close (which ends
/// the batch, and is given back).
fn gather(
    first: Request,
    waiting: &mut mpsc::UnboundedReceiver<Request>,
) -> (Batch, Option<oneshot::Sender<()>>) {
    let mut batch = Vec::new();
    let mut size = 0;
    let mut request = first;
    loop {
        match request {
            Request::Decide { ops, reply } => {
                size += ops.len();
                batch.push((ops, reply));
            }
            Request::Close(done) => return (batch, Some(done)),
        }
        if size >= MAX_BATCH {
            return (batch, None);
        }
        match waiting.try_recv() {
            Ok(next) => request = next,
            Err(_) => return (batch, None),
        }
    }
}

async fn commit(queue: &Queue, writer: &mut impl Transact, batch: Batch) {
    let (shared, counts) = (&*queue.shared, &*queue.counts);
    let started = Instant::now();
    let mut ops = Vec::new();
    let mut replies = Vec::with_capacity(batch.len());
    for (asked, reply) in batch {
        replies.push((asked.len(), reply));
        ops.extend(asked);
    }
    counts.batch(ops.len());
    if let Some(metrics) = &shared.metrics {
        metrics.batch(ops.len());
    }
    let answers = match write(shared, writer, &ops).await {
        Ok(answers) => answers,
        Err(e) if ops.len() == 1 => vec![Err(unavailable(&e))],
        Err(_) => {
            let mut answers = Vec::with_capacity(ops.len());
            for op in &ops {
                let answer = write(shared, writer, std::slice::from_ref(op))
                    .await
                    .map_err(|e| unavailable(&e))
                    .and_then(|mut answers| {
                        answers.pop().unwrap_or_else(|| {
                            Err(WalletError::Unavailable("no answer".to_owned()))
                        })
                    });
                answers.push(answer);
            }
            answers
        }
    };
    timed(shared, counts, started);
    let mut answers = answers.into_iter();
    for (count, reply) in replies {
        let _ = reply.send(answers.by_ref().take(count).collect());
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
pub(super) type Decided = (Answers, Writes);

/// Decides and writes `ops` in one transaction, then publishes their balance changes; an
/// answer for each once committed.
async fn write(
    shared: &Shared,
    writer: &mut impl Transact,
    ops: &[Op],
) -> Result<Answers, StoreError> {
    let at = Deciding {
        now_ms: shared.clock.now_ms(),
        policy: shared.policy,
    };
    let (answers, mut writes) = writer.transact(ops, at).await?;
    if !writes.changes.is_empty() {
        // Nobody listening is not an error.
        let _ = shared
            .changes
            .send(std::mem::take(&mut writes.changes).into());
    }
    if let Some(metrics) = &shared.metrics {
        metrics.decided(ops, &answers, writes.accounts.len());
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn decide(sent: &mpsc::UnboundedSender<Request>) -> oneshot::Receiver<Answers> {
        let (reply, answers) = oneshot::channel();
        let ops = vec![Op::SetBlocked {
            player: "alice".into(),
            currency: "EUR".into(),
            blocked: false,
        }];
        sent.send(Request::Decide { ops, reply }).unwrap();
        answers
    }

    #[test]
    fn a_full_batch_leaves_the_rest_waiting() {
        let (sent, mut waiting) = mpsc::unbounded_channel();
        let _answers: Vec<_> = (0..MAX_BATCH + 5).map(|_| decide(&sent)).collect();
        let first = waiting.try_recv().unwrap();
        let (batch, closed) = gather(first, &mut waiting);
        assert_eq!(batch.len(), MAX_BATCH);
        assert!(closed.is_none());
        assert_eq!(waiting.len(), 5, "nothing taken beyond the batch is lost");
    }

    #[test]
    fn a_close_ends_the_batch_before_what_follows_it() {
        let (sent, mut waiting) = mpsc::unbounded_channel();
        let _before = decide(&sent);
        let (done, _closed) = oneshot::channel();
        sent.send(Request::Close(done)).unwrap();
        let _after = decide(&sent);
        let first = waiting.try_recv().unwrap();
        let (batch, closed) = gather(first, &mut waiting);
        assert_eq!(batch.len(), 1);
        assert!(closed.is_some());
        assert_eq!(
            waiting.len(),
            1,
            "what follows the close is left to be refused"
        );
    }
}
