//! The committer's SQLite connection, on a thread of its own that runs each batch's
//! transaction from BEGIN to COMMIT: reads, decisions and writes, one row at a time through
//! statements prepared once. Through sqlx every statement was a trip to the connection's
//! thread and back to the runtime (nine a batch), and every row's values were taken apart
//! and bound again on the way: the writer, SQLite's one at a time, spent more of each
//! batch waiting for those trips than writing.
//!
//! The reads (statements, reconciliation, balances) stay on the store's sqlx pool.

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::checkpoint::{
    BACKSTOP_PAGES, CheckpointStats, CheckpointStatsHandle, Checkpointer, Pace,
};
use super::commit::{
    ACCOUNT_COLUMNS, ACCOUNT_UPDATE, Decided, MARK_UPDATE, MOVEMENT_COLUMNS, Needs, count, number,
    refusal_text, tx_id,
};
use super::decide::{self, LimitPolicy, Loaded, Mark, Op, Writes};
use super::fields::{Columns, Rusqlite};
use super::{SELECT_ACCOUNT, SELECT_MOVEMENT, StoreError, account_row, movement_row};

/// The committer's page cache, in KiB (negative: SQLite's unit for a size): 64 MiB, the
/// accounts and the recent index pages of a busy wallet.
const CACHE_KIB: i64 = -65_536;

/// Statements the connection keeps prepared (it uses seven).
const STATEMENTS: usize = 16;

enum Job {
    Write {
        ops: Arc<[Op]>,
        now_ms: u64,
        policy: LimitPolicy,
        reply: oneshot::Sender<Result<Decided, StoreError>>,
    },
    Close(oneshot::Sender<()>),
}

/// The thread's queue; the thread ends, closing the connection, when this is dropped or
/// closed.
#[derive(Debug)]
pub(crate) struct SqliteWriter {
    jobs: mpsc::Sender<Job>,
    stats: CheckpointStatsHandle,
}

impl SqliteWriter {
    /// Opens the file at `path` (which the store's pool has created and set to WAL) and
    /// starts the thread.
    pub(super) fn open(path: &Path, pace: Pace) -> Result<SqliteWriter, StoreError> {
        // Each connection used by one thread only: SQLite's own locking of it is not needed.
        let connect = || {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        };
        let conn = connect()?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt(format!(
                "{}: journal mode {mode}, not WAL",
                path.display()
            )));
        }
        // Nothing acknowledged is lost, even on power loss.
        conn.pragma_update(None, "synchronous", "full")?;
        conn.pragma_update(None, "cache_size", CACHE_KIB)?;
        // A statement that could fail part-way keeps the pages it changes in a statement
        // journal, to undo only itself; in memory, not through a temporary file. A crash
        // never needs it (the WAL is what recovers).
        conn.pragma_update(None, "temp_store", "memory")?;
        // The WAL is copied back by a thread of its own, not by the commit that crosses a
        // mark (see `checkpoint`).
        conn.pragma_update(None, "wal_autocheckpoint", BACKSTOP_PAGES)?;
        conn.set_prepared_statement_cache_capacity(STATEMENTS);
        let checkpointer = Checkpointer::start(connect()?, pace)?;
        let stats = checkpointer.stats_handle();
        let (jobs, queue) = mpsc::channel();
        std::thread::Builder::new()
            .name("wallet-commit".to_owned())
            .spawn(move || serve(conn, &queue, checkpointer))
            .map_err(StoreError::Thread)?;
        Ok(SqliteWriter { jobs, stats })
    }

    /// Decides and writes `ops` in one transaction.
    pub(crate) async fn write(
        &self,
        ops: Arc<[Op]>,
        now_ms: u64,
        policy: LimitPolicy,
    ) -> Result<Decided, StoreError> {
        let (reply, outcome) = oneshot::channel();
        let job = Job::Write {
            ops,
            now_ms,
            policy,
            reply,
        };
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        // The thread gone mid-batch (a panic): nothing of it was committed.
        outcome.await.unwrap_or(Err(StoreError::Closed))
    }

    /// What the WAL's copier has done.
    pub(crate) fn checkpoint_stats(&self) -> CheckpointStats {
        self.stats.stats()
    }

    /// Ends the thread once what it was given is done, and closes the connection (the
    /// file is then complete without its WAL).
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.jobs.send(Job::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

fn serve(mut conn: Connection, queue: &mpsc::Receiver<Job>, mut checkpointer: Checkpointer) {
    while let Ok(job) = queue.recv() {
        match job {
            Job::Write {
                ops,
                now_ms,
                policy,
                reply,
            } => {
                let _ = reply.send(transaction(&mut conn, &ops, now_ms, policy));
                checkpointer.committed(&conn);
            }
            Job::Close(done) => {
                // The copier's connection closed first: this one, closed next, copies
                // what is left.
                checkpointer.stop();
                if let Err((_, e)) = conn.close() {
                    tracing::warn!(error = %e, "wallet: the committer's connection did not close cleanly");
                }
                let _ = done.send(());
                return;
            }
        }
    }
}

/// One batch, from BEGIN IMMEDIATE (SQLite's one write lock, so that every read of the
/// transaction is current) to COMMIT; rolled back by the drop of `tx` on any error.
fn transaction(
    conn: &mut Connection,
    ops: &[Op],
    now_ms: u64,
    policy: LimitPolicy,
) -> Result<Decided, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut loaded = load(&tx, &Needs::of(ops))?;
    let (answers, writes) = decide::decide(ops, &mut loaded, now_ms, policy);
    save(&tx, &writes)?;
    tx.commit()?;
    Ok((answers, writes))
}

/// The accounts, earlier requests and marks a batch is decided on. An account not there
/// is decided empty, and created by its upsert.
fn load(conn: &Connection, needs: &Needs<'_>) -> Result<Loaded, StoreError> {
    let mut loaded = Loaded::default();
    let mut select = conn.prepare_cached(&format!(
        "{SELECT_ACCOUNT} WHERE player = ?1 AND currency = ?2"
    ))?;
    let columns = Columns::of(&select);
    for (player, currency) in &needs.accounts {
        let mut rows = select.query(params![player, currency])?;
        if let Some(row) = rows.next()? {
            let account = account_row(&Rusqlite(row, &columns))?;
            loaded
                .accounts
                .insert((account.player.clone(), account.currency.clone()), account);
        }
    }
    let mut select = conn.prepare_cached(&format!("{SELECT_MOVEMENT} WHERE tx = ?1"))?;
    let columns = Columns::of(&select);
    for id in &needs.ids {
        let mut rows = select.query(params![id])?;
        if let Some(row) = rows.next()? {
            let movement = movement_row(&Rusqlite(row, &columns))?;
            loaded.seen.insert(movement.tx.clone(), movement);
        }
    }
    let mut select = conn.prepare_cached("SELECT state FROM debit_marks WHERE debit = ?1")?;
    for debit in &needs.debits {
        let mut rows = select.query(params![debit])?;
        if let Some(row) = rows.next()? {
            let state: String = row.get(0)?;
            let mark = Mark::parse(&state).ok_or_else(|| {
                StoreError::Corrupt(format!("debit {debit}: unknown state `{state}`"))
            })?;
            loaded.marks.insert(tx_id((*debit).to_owned())?, mark);
        }
    }
    Ok(loaded)
}

fn save(conn: &Connection, writes: &Writes) -> Result<(), StoreError> {
    let mut numbers = Vec::with_capacity(writes.movements.len());
    let mut insert = conn.prepare_cached(&format!(
        "INSERT INTO movements ({MOVEMENT_COLUMNS}) VALUES
            (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
    ))?;
    for m in &writes.movements {
        insert.execute(params![
            m.tx.as_str(),
            m.kind.as_str(),
            m.player,
            m.currency,
            m.amount,
            m.table,
            m.round,
            m.bet,
            m.position_total,
            m.credit_kind,
            m.refs,
            m.delta,
            m.balance,
            m.version.map(count),
            refusal_text(m)?,
            m.at_ms,
            number(m.prev, &numbers)?,
        ])?;
        // The one writer holds the lock: the row just inserted is the connection's last.
        numbers.push(conn.last_insert_rowid());
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO postings (movement, account, currency, amount) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for p in &writes.postings {
        insert.execute(params![
            numbers[p.movement],
            p.account,
            p.currency,
            p.amount
        ])?;
    }
    let mut upsert = conn.prepare_cached(&format!(
        "INSERT INTO debit_marks (debit, state) VALUES (?1, ?2){MARK_UPDATE}"
    ))?;
    for (debit, mark) in &writes.marks {
        upsert.execute(params![debit.as_str(), mark.as_str()])?;
    }
    let mut upsert = conn.prepare_cached(&format!(
        "INSERT INTO accounts ({ACCOUNT_COLUMNS}) VALUES
            (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11){ACCOUNT_UPDATE}"
    ))?;
    for a in writes.accounts.values() {
        upsert.execute(params![
            a.player,
            a.currency,
            a.balance,
            a.blocked,
            a.max_bet,
            a.pending.is_some(),
            a.pending.and_then(|(max, _)| max),
            a.pending.map(|(_, at)| count(at)),
            a.raise_asked_at.map(count),
            count(a.version),
            number(a.last, &numbers)?,
        ])?;
    }
    Ok(())
}
