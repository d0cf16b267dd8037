//! Group commit: one committer task per open store takes every request waiting in its
//! queue (up to [`MAX_BATCH`]), decides them in arrival order and writes them all in ONE
//! transaction, then answers each caller. Requests that arrive while a transaction
//! commits wait for the next one, so under load one fsync serves many tables' debits;
//! alone, a request is committed at once.
//!
//! In the transaction the accounts touched are read (on PostgreSQL created if need be and
//! locked, `FOR UPDATE`, in key order so that two stores on one database never deadlock;
//! on SQLite the transaction takes the database's one write lock as it begins), then the
//! earlier requests of the same ids and the marks of the debits named.
//! What another store commits on an account first is therefore what this one decides on:
//! no balance is written from a stale read. If the database fails the transaction (a
//! store elsewhere took the same id at the same instant, a full disk), nothing of it was
//! committed, and each request is tried again in a transaction of its own, so that each
//! caller gets its own answer.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{QueryBuilder, Row as _};
use tokio::sync::{mpsc, oneshot};

use super::decide::{self, AccountRow, Answer, Kind, Loaded, Mark, Op, Writes};
use super::{Db, Shared, StoreError, pieces};
use crate::api::{TxId, WalletError};

/// Requests decided and written in one transaction at most.
pub(crate) const MAX_BATCH: usize = 1024;

/// Ids per `IN (…)` list.
const IDS_PER_SELECT: usize = 1024;

/// `items` in look-ups of [`IDS_PER_SELECT`] at most. Each statement is a round trip to
/// the connection's thread, so on SQLite (`filler` given) a look-up is one statement,
/// padded up to a power of two with `filler` (one of a few shapes, each prepared once).
/// The filler is an empty id or player, which no request may have: it reads nothing, and
/// were such a row ever there, no request of the batch would be decided on it.
/// PostgreSQL keeps its pieces of powers of two.
fn lookups<T: Copy>(items: &[T], filler: Option<T>) -> Vec<Vec<T>> {
    let Some(filler) = filler else {
        return pieces(items, IDS_PER_SELECT).map(<[T]>::to_vec).collect();
    };
    items
        .chunks(IDS_PER_SELECT)
        .map(|chunk| {
            let mut list = chunk.to_vec();
            list.resize(chunk.len().next_power_of_two(), filler);
            list
        })
        .collect()
}

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
    /// The most one carried.
    pub largest: u64,
}

#[derive(Debug, Default)]
struct Counts {
    commits: AtomicU64,
    requests: AtomicU64,
    largest: AtomicU64,
}

impl Counts {
    fn batch(&self, requests: usize) {
        let requests = requests as u64;
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.requests.fetch_add(requests, Ordering::Relaxed);
        self.largest.fetch_max(requests, Ordering::Relaxed);
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
        }
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
        commit(&shared, batch).await;
    }
}

async fn commit(shared: &Shared, batch: Vec<(Op, Reply)>) {
    let (ops, replies): (Vec<Op>, Vec<Reply>) = batch.into_iter().unzip();
    if let Some(metrics) = &shared.metrics {
        metrics.batch(ops.len());
    }
    match write(shared, &ops).await {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(e) if ops.len() == 1 => {
            for reply in replies {
                let _ = reply.send(Err(unavailable(&e)));
            }
        }
        Err(_) => {
            for (op, reply) in ops.into_iter().zip(replies) {
                let answer = write(shared, std::slice::from_ref(&op))
                    .await
                    .map_err(|e| unavailable(&e))
                    .and_then(|mut answers| {
                        answers.pop().unwrap_or_else(|| {
                            Err(WalletError::Unavailable("no answer".to_owned()))
                        })
                    });
                let _ = reply.send(answer);
            }
        }
    }
}

fn unavailable(e: &StoreError) -> WalletError {
    tracing::warn!(error = %e, "wallet: a transaction failed; nothing of it was written");
    WalletError::Unavailable(format!("the wallet's database failed: {e}"))
}

/// Movements per multi-row INSERT (16 parameters each), postings (4), accounts (10):
/// powers of two under SQLite's 32,766 parameters.
const MOVEMENTS_PER_INSERT: usize = 1024;
const POSTINGS_PER_INSERT: usize = 4096;
const ACCOUNTS_PER_INSERT: usize = 2048;

/// A time in unix ms or a version as stored (BIGINT): neither comes near `i64::MAX`.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Writes `$writes` through `$conn`.
macro_rules! save {
    ($writes:expr, $conn:expr) => {{
        let writes: &Writes = $writes;
        let mut numbered: HashMap<String, i64> = HashMap::with_capacity(writes.movements.len());
        for piece in pieces(&writes.movements, MOVEMENTS_PER_INSERT) {
            let mut q = QueryBuilder::new(
                "INSERT INTO movements (tx, kind, player, currency, amount, table_id, round_id,
                    bet, position_total, credit_kind, refs, delta, balance, version, refusal,
                    at_ms) ",
            );
            let mut refusals = Vec::with_capacity(piece.len());
            for m in piece {
                refusals.push(match &m.refusal {
                    Some(r) => Some(
                        serde_json::to_string(r).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                    ),
                    None => None,
                });
            }
            q.push_values(piece.iter().zip(&refusals), |mut b, (m, refusal)| {
                b.push_bind(m.tx.as_str())
                    .push_bind(m.kind.as_str())
                    .push_bind(m.player.as_str())
                    .push_bind(m.currency.as_str())
                    .push_bind(m.amount)
                    .push_bind(m.table.as_str())
                    .push_bind(m.round.as_str())
                    .push_bind(m.bet.as_str())
                    .push_bind(m.position_total)
                    .push_bind(m.credit_kind.as_str())
                    .push_bind(m.refs.as_str())
                    .push_bind(m.delta)
                    .push_bind(m.balance)
                    .push_bind(m.version.map(count))
                    .push_bind(refusal.as_deref())
                    .push_bind(m.at_ms);
            });
            // The numbers the database gave, by id: neither backend promises RETURNING's
            // rows in the order of VALUES.
            q.push(" RETURNING seq, tx");
            for row in q.build().fetch_all($conn).await? {
                let tx: String = row.try_get(1)?;
                numbered.insert(tx, row.try_get::<i64, _>(0)?);
            }
        }
        for piece in pieces(&writes.postings, POSTINGS_PER_INSERT) {
            let mut q =
                QueryBuilder::new("INSERT INTO postings (movement, account, currency, amount) ");
            let mut movements = Vec::with_capacity(piece.len());
            for p in piece {
                movements.push(*numbered.get(p.tx.as_str()).ok_or_else(|| {
                    StoreError::Corrupt(format!("movement {} was not numbered", p.tx))
                })?);
            }
            q.push_values(piece.iter().zip(movements), |mut b, (p, movement)| {
                b.push_bind(movement)
                    .push_bind(p.account.as_str())
                    .push_bind(p.currency.as_str())
                    .push_bind(p.amount);
            });
            q.build().execute($conn).await?;
        }
        let marks: Vec<(&TxId, &Mark)> = writes.marks.iter().collect();
        for piece in pieces(&marks, POSTINGS_PER_INSERT) {
            let mut q = QueryBuilder::new("INSERT INTO debit_marks (debit, state) ");
            q.push_values(piece, |mut b, (debit, mark)| {
                b.push_bind(debit.as_str()).push_bind(mark.as_str());
            });
            q.push(" ON CONFLICT (debit) DO UPDATE SET state = excluded.state");
            q.build().execute($conn).await?;
        }
        let accounts: Vec<&AccountRow> = writes.accounts.values().collect();
        for piece in pieces(&accounts, ACCOUNTS_PER_INSERT) {
            let mut q = QueryBuilder::new(
                "INSERT INTO accounts (player, currency, balance, blocked, max_bet, pending,
                    pending_max_bet, pending_at, raise_asked_at, version) ",
            );
            q.push_values(piece, |mut b, a| {
                b.push_bind(a.player.as_str())
                    .push_bind(a.currency.as_str())
                    .push_bind(a.balance)
                    .push_bind(a.blocked)
                    .push_bind(a.max_bet)
                    .push_bind(a.pending.is_some())
                    .push_bind(a.pending.and_then(|(max, _)| max))
                    .push_bind(a.pending.map(|(_, at)| count(at)))
                    .push_bind(a.raise_asked_at.map(count))
                    .push_bind(count(a.version));
            });
            q.push(
                " ON CONFLICT (player, currency) DO UPDATE SET balance = excluded.balance,
                    blocked = excluded.blocked, max_bet = excluded.max_bet,
                    pending = excluded.pending, pending_max_bet = excluded.pending_max_bet,
                    pending_at = excluded.pending_at, raise_asked_at = excluded.raise_asked_at,
                    version = excluded.version",
            );
            q.build().execute($conn).await?;
        }
    }};
}

/// Decides and writes `ops` in one transaction; an answer for each once committed, and
/// their balance changes published.
async fn write(
    shared: &Shared,
    ops: &[Op],
) -> Result<Vec<Result<Answer, WalletError>>, StoreError> {
    let now_ms = shared.clock.now_ms();
    let keys: BTreeSet<(&str, &str)> = ops
        .iter()
        .filter(|op| op.check().is_ok())
        .map(Op::account)
        .collect();
    let keys: Vec<(&str, &str)> = keys.into_iter().collect();
    let mut ids: BTreeSet<&str> = BTreeSet::new();
    for op in ops {
        ids.extend(op.tx().map(TxId::as_str));
        ids.extend(op.debits().into_iter().map(TxId::as_str));
    }
    let ids: Vec<&str> = ids.into_iter().collect();
    let debits: BTreeSet<&str> = ops
        .iter()
        .flat_map(|op| op.debits().into_iter().map(TxId::as_str))
        .collect();
    let debits: Vec<&str> = debits.into_iter().collect();
    // What another store commits first is what this one decides on. On PostgreSQL the
    // accounts are created first so that they can be locked (`FOR UPDATE` locks only rows
    // that exist). SQLite has one writer at a time: taken at BEGIN (IMMEDIATE), it keeps
    // every read of the transaction current, and an account read missing is decided empty
    // and created by the final upsert, without a statement of its own.
    let (begin, create_first, lock) = match shared.db {
        Db::Sqlite(_) => ("BEGIN IMMEDIATE", false, ""),
        Db::Postgres(_) => ("BEGIN", true, " ORDER BY player, currency FOR UPDATE"),
    };
    let sqlite = matches!(shared.db, Db::Sqlite(_));
    let (answers, writes) = super::on_pool!(db = &shared.writer, |pool| {
        let mut tx = pool.begin_with(begin).await?;
        let mut loaded = Loaded::default();
        for piece in lookups(&keys, sqlite.then_some(("", ""))) {
            if create_first {
                let mut q = QueryBuilder::new(
                    "INSERT INTO accounts (player, currency, balance, blocked, pending) ",
                );
                q.push_values(&piece, |mut b, (player, currency)| {
                    b.push_bind(*player)
                        .push_bind(*currency)
                        .push_bind(0_i64)
                        .push_bind(false)
                        .push_bind(false);
                });
                q.push(" ON CONFLICT (player, currency) DO NOTHING");
                q.build().execute(&mut *tx).await?;
            }
            let mut q = QueryBuilder::new(super::SELECT_ACCOUNT);
            q.push(" WHERE (player, currency) IN (VALUES ");
            let mut list = q.separated(", ");
            for (player, currency) in &piece {
                list.push("(");
                list.push_bind_unseparated(*player);
                list.push_unseparated(", ");
                list.push_bind_unseparated(*currency);
                list.push_unseparated(")");
            }
            q.push(")");
            q.push(lock);
            for row in q.build().fetch_all(&mut *tx).await? {
                let account = super::account_row(&row)?;
                loaded
                    .accounts
                    .insert((account.player.clone(), account.currency.clone()), account);
            }
        }
        for piece in lookups(&ids, sqlite.then_some("")) {
            let mut q = QueryBuilder::new(super::SELECT_MOVEMENT);
            q.push(" WHERE tx IN (");
            let mut list = q.separated(", ");
            for id in &piece {
                list.push_bind(*id);
            }
            q.push(")");
            for row in q.build().fetch_all(&mut *tx).await? {
                let movement = super::movement_row(&row)?;
                loaded.seen.insert(movement.tx.clone(), movement);
            }
        }
        for piece in lookups(&debits, sqlite.then_some("")) {
            let mut q = QueryBuilder::new("SELECT debit, state FROM debit_marks WHERE debit IN (");
            let mut list = q.separated(", ");
            for id in &piece {
                list.push_bind(*id);
            }
            q.push(")");
            for row in q.build().fetch_all(&mut *tx).await? {
                let debit: String = row.try_get(0)?;
                let state: String = row.try_get(1)?;
                let mark = Mark::parse(&state).ok_or_else(|| {
                    StoreError::Corrupt(format!("debit {debit}: unknown state `{state}`"))
                })?;
                loaded.marks.insert(tx_id(debit)?, mark);
            }
        }
        let (answers, writes) = decide::decide(ops, &mut loaded, now_ms, shared.policy);
        save!(&writes, &mut *tx);
        tx.commit().await?;
        (answers, writes)
    });
    for change in writes.changes {
        // Nobody listening is not an error.
        let _ = shared.changes.send(change);
    }
    if let Some(metrics) = &shared.metrics {
        metrics.decided(ops, &answers, writes.accounts.len());
    }
    Ok(answers)
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
    use super::*;

    #[test]
    fn a_look_up_on_sqlite_is_one_statement_of_a_power_of_two() {
        let ids: Vec<u32> = (1..=2_500).collect();
        let padded = lookups(&ids, Some(0));
        let sizes: Vec<usize> = padded.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1024, 1024, 512]);
        assert_eq!(padded[2][..452], ids[2_048..]);
        assert!(padded[2][452..].iter().all(|&id| id == 0));
        let asked: Vec<u32> = padded.into_iter().flatten().filter(|&id| id != 0).collect();
        assert_eq!(asked, ids);
        assert!(lookups::<u32>(&[], Some(0)).is_empty());
        assert_eq!(lookups(&[7], Some(0)), [vec![7]]);
        assert_eq!(lookups(&[7, 8, 9], Some(0)), [vec![7, 8, 9, 0]]);
    }

    #[test]
    fn a_look_up_on_postgres_keeps_its_pieces() {
        let ids: Vec<u32> = (0..131).collect();
        let sizes: Vec<usize> = lookups(&ids, None).iter().map(Vec::len).collect();
        assert_eq!(sizes, [128, 2, 1]);
    }
}
