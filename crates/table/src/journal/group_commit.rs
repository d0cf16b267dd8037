//! [`GroupCommitter`]: puts a [`Journal`] on its own OS thread so async callers (the table
//! actor is a tokio task) never block on fsync, and shares one fsync among every record
//! that queued up while the previous fsync was running.
//!
//! The thread loop: wait for one request, drain whatever else is already queued (up to
//! [`GroupCommitConfig::max_batch_records`] / `max_batch_bytes`), write them all, fsync
//! once, then answer every waiter with its own sequence number. Under load, batches grow
//! by themselves; when idle, a lone record is committed at once (no timer, no added latency).
//! Between batches it keeps zeros written ahead of the records, for the next commits to
//! overwrite.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::error::JournalError;
use super::writer::Journal;
use crate::metrics::JournalMetrics;

/// Limits for one group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitConfig {
    /// Most records written under one fsync.
    pub max_batch_records: usize,
    /// Soft cap on payload bytes per batch: draining stops once it is reached (the record
    /// that crossed it is still included).
    pub max_batch_bytes: usize,
    /// Requests that may wait in the queue; senders wait (asynchronously) beyond that.
    pub queue_capacity: usize,
    /// Under load (the previous batch held more than one record), how long the committer
    /// waits for more records before writing. On a virtual disk every fsync also costs
    /// CPU, so without this, busy tables spend their CPU on many tiny batches; an idle
    /// table's lone record never waits.
    pub gather: Duration,
    /// Bytes of zeros the committer writes ahead of the records at a time, once fewer than
    /// half as many are left, so that commits overwrite the file instead of growing it
    /// (see [`Journal::zero_ahead`]); 0 never writes ahead.
    pub zero_ahead: u64,
}

impl Default for GroupCommitConfig {
    fn default() -> Self {
        GroupCommitConfig {
            max_batch_records: 256,
            max_batch_bytes: 1 << 20,
            queue_capacity: 4096,
            gather: Duration::from_micros(200),
            zero_ahead: 256 * 1024,
        }
    }
}

/// Counters of the committer thread, for tests and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Batches written and fsynced successfully: exactly one fsync each.
    pub commits: u64,
    /// Records acknowledged.
    pub records: u64,
    /// Batches that failed (their waiters got an error).
    pub failed_commits: u64,
    /// Times zeros were written ahead of the records, each with an fsync of its own.
    pub zeroings: u64,
    /// The longest a commit took to write and fsync its batch (every record of it waited
    /// that long); since the committer started, or since [`StatsReader::restart_longest`].
    pub longest: Duration,
}

#[derive(Debug, Default)]
struct SharedStats {
    commits: AtomicU64,
    records: AtomicU64,
    failed_commits: AtomicU64,
    zeroings: AtomicU64,
    longest_ns: AtomicU64,
}

type Reply = oneshot::Sender<Result<u64, JournalError>>;

#[derive(Debug)]
struct Request {
    payload: Vec<u8>,
    reply: Reply,
}

/// A cloneable way to append through a [`GroupCommitter`].
#[derive(Debug, Clone)]
pub struct CommitHandle {
    tx: mpsc::Sender<Request>,
    path: Arc<PathBuf>,
}

impl CommitHandle {
    /// Queues `payload` and waits until it is durable; returns its sequence number.
    ///
    /// Dropping the future after the request was queued does not cancel the write: the
    /// record will still be committed, only the answer is lost.
    pub async fn append(&self, payload: Vec<u8>) -> Result<u64, JournalError> {
        self.enqueue(payload).await?.durable().await
    }

    /// Queues `payload` (waiting only for room in the queue) and returns at once with a
    /// [`PendingCommit`] that resolves when the record is durable. Records are written in
    /// the order they were queued, so a caller that queues from one task knows their
    /// order, and can go on working while the fsync runs (the table actor's pipelining).
    pub async fn enqueue(&self, payload: Vec<u8>) -> Result<PendingCommit, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Request { payload, reply })
            .await
            .map_err(|_| self.stopped())?;
        Ok(PendingCommit {
            answer,
            path: Arc::clone(&self.path),
        })
    }

    /// The blocking form of [`CommitHandle::append`], for threads outside any async
    /// runtime. Panics if called from within an async context (tokio's rule).
    pub fn blocking_append(&self, payload: Vec<u8>) -> Result<u64, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .blocking_send(Request { payload, reply })
            .map_err(|_| self.stopped())?;
        answer.blocking_recv().map_err(|_| self.stopped())?
    }

    fn stopped(&self) -> JournalError {
        JournalError::CommitterStopped {
            path: self.path.as_ref().clone(),
        }
    }
}

/// A queued record, not yet known to be durable. See [`CommitHandle::enqueue`].
#[derive(Debug)]
pub struct PendingCommit {
    answer: oneshot::Receiver<Result<u64, JournalError>>,
    path: Arc<PathBuf>,
}

impl PendingCommit {
    /// Waits until the record is durable; returns its sequence number. Dropping this does
    /// not cancel the write.
    pub async fn durable(self) -> Result<u64, JournalError> {
        let path = self.path;
        self.answer
            .await
            .map_err(|_| JournalError::CommitterStopped {
                path: path.as_ref().clone(),
            })?
    }
}

/// Reads a [`GroupCommitter`]'s counters from anywhere, also after it moved.
#[derive(Debug, Clone, Default)]
pub struct StatsReader(Arc<SharedStats>);

impl StatsReader {
    pub fn read(&self) -> CommitStats {
        self.0.snapshot()
    }

    /// [`CommitStats::longest`] counts from now on.
    pub fn restart_longest(&self) {
        self.0.longest_ns.store(0, Ordering::Relaxed);
    }
}

impl SharedStats {
    fn snapshot(&self) -> CommitStats {
        CommitStats {
            commits: self.commits.load(Ordering::Relaxed),
            records: self.records.load(Ordering::Relaxed),
            failed_commits: self.failed_commits.load(Ordering::Relaxed),
            zeroings: self.zeroings.load(Ordering::Relaxed),
            longest: Duration::from_nanos(self.longest_ns.load(Ordering::Relaxed)),
        }
    }
}

/// Owns a [`Journal`] on a dedicated thread and commits queued appends in groups.
#[derive(Debug)]
pub struct GroupCommitter {
    handle: CommitHandle,
    stats: Arc<SharedStats>,
    thread: JoinHandle<Journal>,
}

impl GroupCommitter {
    /// Moves `journal` onto a new thread named `journal-commit`.
    pub fn spawn(journal: Journal, config: GroupCommitConfig) -> Result<Self, JournalError> {
        GroupCommitter::spawn_counting(journal, config, &StatsReader::default(), None)
    }

    /// [`GroupCommitter::spawn`], adding to the counters `stats` reads (those of an earlier
    /// committer of the same journal, which a reopened journal carries on), and counting
    /// every commit into `metrics`.
    pub fn spawn_counting(
        journal: Journal,
        config: GroupCommitConfig,
        stats: &StatsReader,
        metrics: Option<JournalMetrics>,
    ) -> Result<Self, JournalError> {
        let path = Arc::new(journal.path().to_path_buf());
        let (tx, rx) = mpsc::channel(config.queue_capacity.max(1));
        let stats = Arc::clone(&stats.0);
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("journal-commit".to_owned())
            .spawn(move || run(journal, rx, config, &thread_stats, metrics.as_ref()))
            .map_err(|source| JournalError::Io {
                path: path.as_ref().clone(),
                op: "spawn committer thread",
                source,
            })?;
        Ok(GroupCommitter {
            handle: CommitHandle { tx, path },
            stats,
            thread,
        })
    }

    /// A handle to append from other tasks.
    pub fn handle(&self) -> CommitHandle {
        self.handle.clone()
    }

    /// Queues `payload` and waits until it is durable; returns its sequence number.
    pub async fn append(&self, payload: Vec<u8>) -> Result<u64, JournalError> {
        self.handle.append(payload).await
    }

    /// Queues `payload`; see [`CommitHandle::enqueue`].
    pub async fn enqueue(&self, payload: Vec<u8>) -> Result<PendingCommit, JournalError> {
        self.handle.enqueue(payload).await
    }

    /// Counters so far.
    pub fn stats(&self) -> CommitStats {
        self.stats.snapshot()
    }

    /// A reader of the counters that can be kept apart from the committer.
    pub fn stats_reader(&self) -> StatsReader {
        StatsReader(Arc::clone(&self.stats))
    }

    /// Stops accepting appends, commits everything already queued, and gives the journal
    /// back. Blocks until every other [`CommitHandle`] is dropped too (from async code, call
    /// it through `spawn_blocking`).
    pub fn shutdown(self) -> Result<Journal, JournalError> {
        let GroupCommitter { handle, thread, .. } = self;
        let path = handle.path.as_ref().clone();
        drop(handle);
        thread
            .join()
            .map_err(|_| JournalError::CommitterStopped { path })
    }
}

fn run(
    mut journal: Journal,
    mut rx: mpsc::Receiver<Request>,
    config: GroupCommitConfig,
    stats: &SharedStats,
    metrics: Option<&JournalMetrics>,
) -> Journal {
    let max_records = config.max_batch_records.max(1);
    let max_bytes = config.max_batch_bytes;
    let mut batch: Vec<Request> = Vec::with_capacity(max_records);
    let mut loaded = false;
    while let Some(first) = rx.blocking_recv() {
        let mut bytes = first.payload.len();
        batch.push(first);
        drain(&mut rx, &mut batch, &mut bytes, max_records, max_bytes);
        if loaded && !config.gather.is_zero() && batch.len() < max_records {
            std::thread::sleep(config.gather);
            drain(&mut rx, &mut batch, &mut bytes, max_records, max_bytes);
        }
        loaded = batch.len() > 1;
        let payloads: Vec<&[u8]> = batch.iter().map(|r| r.payload.as_slice()).collect();
        let started = Instant::now();
        let result = journal.append_batch(&payloads);
        drop(payloads);
        match result {
            Ok(seqs) => {
                let took = started.elapsed();
                if let Some(metrics) = metrics {
                    metrics.committed(batch.len(), bytes, took);
                }
                let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
                stats.longest_ns.fetch_max(nanos, Ordering::Relaxed);
                stats.commits.fetch_add(1, Ordering::Relaxed);
                stats
                    .records
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                for (seq, request) in seqs.zip(batch.drain(..)) {
                    // A waiter that went away still has its record committed.
                    let _ = request.reply.send(Ok(seq));
                }
                // After the answers, so that no waiter's commit waits for it. A failure
                // is logged, and only makes later commits grow the file.
                if let Ok(true) = journal.zero_ahead(config.zero_ahead) {
                    stats.zeroings.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(err) => {
                stats.failed_commits.fetch_add(1, Ordering::Relaxed);
                let reason = err.reason();
                for request in batch.drain(..) {
                    let _ = request.reply.send(Err(JournalError::Failed {
                        path: journal.path().to_path_buf(),
                        reason: reason.clone(),
                    }));
                }
            }
        }
    }
    journal
}

/// Moves whatever is already queued into `batch`, within the limits.
fn drain(
    rx: &mut mpsc::Receiver<Request>,
    batch: &mut Vec<Request>,
    bytes: &mut usize,
    max_records: usize,
    max_bytes: usize,
) {
    while batch.len() < max_records && *bytes < max_bytes {
        match rx.try_recv() {
            Ok(request) => {
                *bytes += request.payload.len();
                batch.push(request);
            }
            Err(_) => break,
        }
    }
}
