//! The WAL copied back into the database file on a thread and connection of its own, so
//! that no batch waits for the copy.
//!
//! Left to SQLite, the commit that takes the log past `wal_autocheckpoint` copies every
//! page of it back before that batch is answered: about 12 ms for 4,000 pages, five
//! times a second at 20,000 debits a second, which made the slowest answers of
//! `banco-bench bets` (p99 24 and 37 ms, against 20 and 22 ms with no copy at all in the
//! run).
//! Here a second connection copies what is committed every [`Pace`] while commits come:
//! a PASSIVE checkpoint, which waits for nobody and which nobody waits for. The log
//! starts over from its first page only at a transaction's start that finds it copied
//! whole, which the copier, always a commit or two behind, never brings about under load.
//! So once the log is long the committer, right after its next commit is answered, copies
//! the little committed during the last pass itself, and its next transaction starts the
//! log over.
//!
//! SQLite's own copy stays as a backstop ([`BACKSTOP_PAGES`]): should this thread fail or
//! fall far behind, the log is still bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::StoreError;

/// Pages in the log past which SQLite copies it back at a commit, which waits for the
/// copy: only if the copier has not kept up.
pub(super) const BACKSTOP_PAGES: i64 = 40_000;

/// When the copier copies, and when the log is started over.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pace {
    /// Least time between two passes. Each copies the pages changed since the one before
    /// once, however often they were changed: passes far apart copy fewer pages in all.
    pub(super) every: Duration,
    /// Pages in the log (as the last pass found it) past which it is started over: the
    /// mark SQLite copied at before, so that the log's file stays the size it was.
    pub(super) restart_pages: i64,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace {
            // At 20,000 bets a second through the embedded wallet: 49 passes in a run of
            // 5 s, 0.42–0.47 pages copied a bet, the copier's thread 0.4–0.5 µs a bet.
            every: Duration::from_millis(100),
            restart_pages: 4_000,
        }
    }
}

/// What the copying has done since the store opened, in pages of the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Passes of the copier's.
    pub passes: u64,
    /// Pages of the log the copier copied back.
    pub copied: u64,
    /// Times the committer copied the rest, so that the log started over.
    pub restarts: u64,
}

#[derive(Debug, Default)]
struct Shared {
    /// The last pass found the log long: the committer copies the rest after its next
    /// commit.
    restart: AtomicBool,
    passes: AtomicU64,
    copied: AtomicU64,
    restarts: AtomicU64,
}

/// Reads a [`Checkpointer`]'s [`CheckpointStats`].
#[derive(Clone, Debug)]
pub(super) struct CheckpointStatsHandle(Arc<Shared>);

impl CheckpointStatsHandle {
    pub(super) fn stats(&self) -> CheckpointStats {
        CheckpointStats {
            passes: self.0.passes.load(Ordering::Relaxed),
            copied: self.0.copied.load(Ordering::Relaxed),
            restarts: self.0.restarts.load(Ordering::Relaxed),
        }
    }
}

/// The copier's thread, and what the committer tells it.
#[derive(Debug)]
pub(super) struct Checkpointer {
    /// One waiting nudge is enough: a pass copies whatever was committed before it.
    /// `None` once stopped, or once the copier was found gone.
    nudge: Option<SyncSender<()>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread, which copies through `conn`, a connection of its own to a
    /// database in WAL mode.
    pub(super) fn start(conn: Connection, pace: Pace) -> Result<Checkpointer, StoreError> {
        let (nudge, nudged) = mpsc::sync_channel(1);
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("wallet-checkpoint".to_owned())
            .spawn({
                let shared = Arc::clone(&shared);
                move || copy_while_nudged(&conn, &nudged, pace, &shared)
            })
            .map_err(StoreError::Thread)?;
        Ok(Checkpointer {
            nudge: Some(nudge),
            shared,
            thread: Some(thread),
        })
    }

    /// After each commit, once its batch is answered, on the committer's connection.
    pub(super) fn committed(&mut self, conn: &Connection) {
        if let Some(nudge) = &self.nudge
            && let Err(TrySendError::Disconnected(())) = nudge.try_send(())
        {
            // Said once: SQLite's backstop copies from now on.
            tracing::warn!("wallet: the WAL copier has stopped; commits copy the WAL back");
            self.nudge = None;
        }
        if self.shared.restart.swap(false, Ordering::Relaxed) {
            match passive(conn) {
                Ok(_) => {
                    self.shared.restarts.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::warn!(error = %e, "wallet: could not copy the WAL back"),
            }
        }
    }

    /// Reads what it did, from any thread.
    pub(super) fn stats_handle(&self) -> CheckpointStatsHandle {
        CheckpointStatsHandle(Arc::clone(&self.shared))
    }

    /// Ends the copier (at once if it waits for its next pass, else once the pass is done)
    /// and closes its connection.
    pub(super) fn stop(&mut self) {
        self.nudge = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("wallet: the WAL copier panicked");
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn copy_while_nudged(conn: &Connection, nudged: &mpsc::Receiver<()>, pace: Pace, shared: &Shared) {
    // Pages of the log copied as the last pass ended.
    let mut before = 0;
    while nudged.recv().is_ok() {
        // The commits of the next `every` are copied together; a stop ends the wait (the
        // committer's connection, closed after this one, copies what is left).
        let pass_at = Instant::now() + pace.every;
        loop {
            match nudged.recv_timeout(pass_at.saturating_duration_since(Instant::now())) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        match passive(conn) {
            Ok(Pass { log, copied }) => {
                shared.passes.fetch_add(1, Ordering::Relaxed);
                // Fewer than before: the log started over since.
                let new = copied.checked_sub(before).unwrap_or(copied);
                shared.copied.fetch_add(new, Ordering::Relaxed);
                before = copied;
                if log >= pace.restart_pages {
                    shared.restart.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => tracing::warn!(error = %e, "wallet: could not copy the WAL back"),
        }
    }
}

/// What a checkpoint found: the pages in the log, and how many of them are copied (by it
/// and by the checkpoints before it since the log started over).
struct Pass {
    log: i64,
    copied: u64,
}

/// A PASSIVE checkpoint: copies every committed page it can without waiting. Another
/// connection's copy under way makes it copy nothing, which is no error.
fn passive(conn: &Connection) -> Result<Pass, rusqlite::Error> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        let log: i64 = row.get(1)?;
        let copied: i64 = row.get(2)?;
        Ok(Pass {
            log,
            copied: u64::try_from(copied).unwrap_or(0),
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const PAGE: usize = 8_192;

    /// A database in WAL mode whose rows each fill a page, and its WAL's path.
    fn database(dir: &std::path::Path) -> (Connection, std::path::PathBuf) {
        let path = dir.join("wallet.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "page_size", PAGE).unwrap();
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", BACKSTOP_PAGES)
            .unwrap();
        conn.execute("CREATE TABLE rows (n INTEGER PRIMARY KEY, fill BLOB)", [])
            .unwrap();
        (conn, dir.join("wallet.db-wal"))
    }

    fn commit_a_page(conn: &Connection, n: usize) {
        conn.execute(
            "INSERT INTO rows (n, fill) VALUES (?1, zeroblob(?2))",
            rusqlite::params![n, PAGE / 2],
        )
        .unwrap();
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let since = Instant::now();
        while !done() {
            assert!(since.elapsed() < Duration::from_secs(30), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_log_is_copied_beside_the_commits_and_started_over() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, wal) = database(dir.path());
        let pace = Pace {
            every: Duration::from_millis(2),
            restart_pages: 20,
        };
        let copier = Connection::open(dir.path().join("wallet.db")).unwrap();
        let mut checkpointer = Checkpointer::start(copier, pace).unwrap();
        let stats = checkpointer.stats_handle();
        let mut n = 0;
        for _ in 0..10 {
            // Each commit adds a page of rows and a page of their key's index at most.
            for _ in 0..30 {
                n += 1;
                commit_a_page(&conn, n);
                checkpointer.committed(&conn);
            }
            let passes = stats.stats().passes;
            wait_for("a pass of the copier", || stats.stats().passes > passes);
            // That pass found the log long, unless it started over lately: then this
            // commit copies the rest, and the next one writes the log from its start.
            n += 1;
            commit_a_page(&conn, n);
            checkpointer.committed(&conn);
        }
        let written = std::fs::metadata(&wal).unwrap().len() as usize / PAGE;
        let stats = stats.stats();
        // 310 commits of two or three pages each (a page of rows, the table's root): the
        // log would hold them all had it not started over; it starts over at least once
        // every 31 commits after it passed 20 pages.
        assert!(stats.restarts > 0, "{stats:?}");
        assert!(
            written < 200,
            "the log grew to {written} pages over {n} commits: {stats:?}"
        );
        assert!(stats.copied >= n as u64, "{stats:?}");
        checkpointer.stop();
        drop(conn);
        let conn = Connection::open(dir.path().join("wallet.db")).unwrap();
        let rows: usize = conn
            .query_row("SELECT COUNT(*) FROM rows", [], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, n);
    }
}
