//! The committer's SQLite connection, on the committer's thread, which runs each batch's
//! transaction from BEGIN to COMMIT: reads, decisions and writes, one row at a time through
//! statements prepared once. Through sqlx every statement was a trip to the connection's
//! thread and back to the runtime (nine a batch), and every row's values were taken apart
//! and bound again on the way: the writer, SQLite's one at a time, spent more of each
//! batch waiting for those trips than writing.
//!
//! The reads (statements, reconciliation, balances) stay on the store's sqlx pool.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use super::checkpoint::{BACKSTOP_PAGES, CheckpointStatsHandle, Checkpointer, Pace};
use super::commit::{
    ACCOUNT_COLUMNS, ACCOUNT_UPDATE, Decided, Deciding, MARK_UPDATE, MOVEMENT_COLUMNS, Needs,
    Queue, Transact, count, number, refusal_text, tx_id,
};
use super::decide::{self, Loaded, Mark, Op, Writes};
use super::fields::{Columns, Rusqlite};
use super::{SELECT_ACCOUNT, SELECT_MOVEMENT, StoreError, account_row, movement_row};

/// The committer's page cache, in KiB (negative: SQLite's unit for a size): 64 MiB, the
/// accounts and the recent index pages of a busy wallet.
const CACHE_KIB: i64 = -65_536;

/// Statements the connection keeps prepared (it uses seven).
const STATEMENTS: usize = 16;

/// The committer's connection and the copier of its WAL, opened, not yet committing.
#[derive(Debug)]
pub(crate) struct SqliteWriter {
    conn: Connection,
    checkpointer: Checkpointer,
}

impl SqliteWriter {
    /// Opens the file at `path` (which the store's pool has created and set to WAL) and
    /// starts the WAL's copier.
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
        Ok(SqliteWriter { conn, checkpointer })
    }

    /// What the WAL's copier has done, readable from any thread.
    pub(super) fn checkpoint_stats(&self) -> CheckpointStatsHandle {
        self.checkpointer.stats_handle()
    }

    /// Starts the committer on a thread of its own, which ends (closing the connection)
    /// when the store is closed or dropped.
    pub(super) fn start(self, queue: Queue) -> Result<(), StoreError> {
        std::thread::Builder::new()
            .name("wallet-commit".to_owned())
            // The transactions never wait for anything but the queue.
            .spawn(move || futures::executor::block_on(super::commit::run(queue, self)))
            .map_err(StoreError::Thread)?;
        Ok(())
    }
}

impl Transact for SqliteWriter {
    async fn transact(&mut self, ops: &[Op], at: Deciding) -> Result<Decided, StoreError> {
        transaction(&mut self.conn, ops, at)
    }

    fn answered(&mut self) {
        self.checkpointer.committed(&self.conn);
    }

    async fn close(mut self) {
        // The copier's connection closed first: this one, closed next, copies what is
        // left.
        self.checkpointer.stop();
        if let Err((_, e)) = self.conn.close() {
            tracing::warn!(error = %e, "wallet: the committer's connection did not close cleanly");
        }
    }
}

/// One batch, from BEGIN IMMEDIATE (SQLite's one write lock, so that every read of the
/// transaction is current) to COMMIT; rolled back by the drop of `tx` on any error.
fn transaction(conn: &mut Connection, ops: &[Op], at: Deciding) -> Result<Decided, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut loaded = load(&tx, &Needs::of(ops))?;
    let (answers, writes) = decide::decide(ops, &mut loaded, at.now_ms, at.policy);
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
