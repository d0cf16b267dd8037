//! The outbox: every finished round, sealed into a hash chain, delivered in order to the
//! archive by its own task, with retries, while the table goes on.
//!
//! There is no outbox store: finished rounds are facts of the journal, so a restart
//! re-derives them (and their hashes) by replay. Only a small watermark file says up to
//! which round the archive has confirmed; rounds after it are sent again on restart (the
//! archive's append is idempotent by round id, so a crash between a delivery and its
//! watermark only causes a harmless re-send).

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub use banco_records::chain::{
    Chain, Checkpoint, ClipFacts, GENESIS_HASH, SealedRound, TableSigner, clip_statement,
    verify_clip_seal,
};

use super::rules::BoxFuture;
use crate::metrics::TableMetrics;

/// First wait after a failed delivery; doubled after each further failure.
pub const RETRY_FIRST: Duration = Duration::from_millis(50);
/// Longest wait between two delivery attempts.
pub const RETRY_MAX: Duration = Duration::from_secs(5);

/// The archive refused or could not be reached; the round will be sent again.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("archive: {0}")]
pub struct SinkError(pub String);

/// Rounds the outbox sends at once at most when it is behind.
pub(crate) const DELIVERY_BATCH: usize = 200;

/// Where sealed rounds go (the archive's Append). Must be idempotent by round id.
pub trait ArchiveSink: Send + Sync + 'static {
    fn append<'a>(&'a self, round: &'a SealedRound) -> BoxFuture<'a, Result<(), SinkError>>;

    /// Hands the archive the table's signed word of its head, once every round up to it
    /// was taken. By default nothing (a sink that keeps no checkpoints).
    fn checkpoint<'a>(
        &'a self,
        checkpoint: &'a Checkpoint,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        let _ = checkpoint;
        Box::pin(async { Ok(()) })
    }

    /// Delivers `rounds` (in chain order, at least one) and answers how many of them,
    /// from the first, were taken; an error when not even the first was. An outbox that
    /// is behind sends its backlog this way. By default, one [`ArchiveSink::append`] after
    /// another.
    fn append_many<'a>(
        &'a self,
        rounds: &'a [SealedRound],
    ) -> BoxFuture<'a, Result<usize, SinkError>> {
        Box::pin(async move {
            let mut taken = 0;
            for round in rounds {
                match self.append(round).await {
                    Ok(()) => taken += 1,
                    Err(e) if taken == 0 => return Err(e),
                    Err(_) => break,
                }
            }
            Ok(taken)
        })
    }
}

/// An [`ArchiveSink`] in memory, for tests: records every round it accepted, and can be
/// told to fail its next calls.
#[derive(Debug, Default)]
pub struct MemorySink {
    received: Mutex<Vec<SealedRound>>,
    checkpoints: Mutex<Vec<Checkpoint>>,
    fail_next: AtomicUsize,
    attempts: AtomicUsize,
}

impl MemorySink {
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// The next `n` calls fail.
    pub fn fail_next(&self, n: usize) {
        self.fail_next.store(n, Ordering::SeqCst);
    }

    /// Every round accepted, in the order of the calls (a re-send appears twice).
    pub fn received(&self) -> Vec<SealedRound> {
        self.received
            .lock()
            .map(|r| r.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// Calls so far, failed ones included.
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Every checkpoint handed over, in order.
    pub fn checkpoints(&self) -> Vec<Checkpoint> {
        self.checkpoints
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}

impl ArchiveSink for MemorySink {
    fn append<'a>(&'a self, round: &'a SealedRound) -> BoxFuture<'a, Result<(), SinkError>> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let result = if failing {
            Err(SinkError("memory sink told to fail".to_owned()))
        } else {
            match self.received.lock() {
                Ok(mut received) => {
                    received.push(round.clone());
                    Ok(())
                }
                Err(_) => Err(SinkError("memory sink poisoned".to_owned())),
            }
        };
        Box::pin(async move { result })
    }

    fn checkpoint<'a>(
        &'a self,
        checkpoint: &'a Checkpoint,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        let result = match self.checkpoints.lock() {
            Ok(mut kept) => {
                kept.push(checkpoint.clone());
                Ok(())
            }
            Err(_) => Err(SinkError("memory sink poisoned".to_owned())),
        };
        Box::pin(async move { result })
    }
}

/// What the watermark file holds: the last round the archive confirmed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Watermark {
    pub(crate) delivered_seq: u64,
    /// Its hash, so that a journal that no longer matches what was delivered is noticed.
    pub(crate) hash: Option<String>,
}

impl Watermark {
    /// Reads the watermark; a missing file means nothing delivered yet.
    pub(crate) fn read(path: &Path) -> Result<Watermark, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("outbox watermark {}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Watermark::default()),
            Err(e) => Err(format!("outbox watermark {}: {e}", path.display())),
        }
    }

    /// Writes it durably.
    pub(crate) fn write(&self, path: &Path) -> Result<(), String> {
        let json = serde_json::to_vec(self).map_err(|e| format!("encode watermark: {e}"))?;
        write_durably(path, &json)
    }
}

/// Writes `bytes` to `path` durably: a temporary file, fsync, rename over, fsync the
/// directory, so a crash leaves the old file or the new one, never half of one.
fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let fail = |op: &str, e: std::io::Error| format!("{op} {}: {e}", path.display());
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp).map_err(|e| fail("create", e))?;
    file.write_all(bytes).map_err(|e| fail("write", e))?;
    file.sync_all().map_err(|e| fail("fsync", e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| fail("rename", e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| fail("fsync directory of", e))?;
    }
    Ok(())
}

/// Where the table's checkpoints go besides the archive, and how often one is signed
/// while no round is delivered.
#[derive(Clone, Debug)]
pub(crate) struct Checkpoints {
    pub(crate) table: String,
    pub(crate) signer: Arc<TableSigner>,
    /// The newest checkpoint, written durably after each (for auditors: `banco audit
    /// verify --head FILE`).
    pub(crate) file: PathBuf,
    pub(crate) every: Duration,
}

impl Checkpoints {
    /// Signs `head` (seq, hash) now, keeps it in the file and hands it to `sink`. Neither
    /// failure stops the outbox: the next checkpoint tries again.
    async fn sign(&self, sink: &dyn ArchiveSink, head: (u64, &str)) {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let checkpoint = self.signer.checkpoint(&self.table, head.0, head.1, at);
        match serde_json::to_vec_pretty(&checkpoint) {
            Ok(json) => {
                let path = self.file.clone();
                match tokio::task::spawn_blocking(move || write_durably(&path, &json)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "outbox: checkpoint file not written"),
                    Err(e) => tracing::warn!(error = %e, "outbox: checkpoint task failed"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "outbox: checkpoint not encoded"),
        }
        if let Err(e) = sink.checkpoint(&checkpoint).await {
            tracing::warn!(error = %e, seq = head.0, "outbox: the archive did not take the checkpoint");
        }
    }
}

/// The delivery task: sends `pending` then whatever arrives on `incoming`, in order,
/// each round until the sink takes it (a backlog in batches of up to [`DELIVERY_BATCH`]),
/// and records the watermark after each answer. With `checkpoints`, once the archive has
/// every round it signs a checkpoint of the head (`delivered`: the last round taken, or
/// the head the table started with), and again every `checkpoints.every` while idle.
pub(crate) async fn deliver(
    sink: Arc<dyn ArchiveSink>,
    watermark: PathBuf,
    mut pending: VecDeque<SealedRound>,
    mut incoming: mpsc::UnboundedReceiver<SealedRound>,
    metrics: TableMetrics,
    (checkpoints, mut delivered): (Option<Checkpoints>, (u64, String)),
) {
    let mut backoff = RETRY_FIRST;
    // Before the first round: where the archive already stands, if the table has rounds.
    let mut due = checkpoints.is_some() && pending.is_empty() && delivered.0 > 0;
    loop {
        while let Ok(round) = incoming.try_recv() {
            pending.push_back(round);
        }
        metrics.outbox_depth(pending.len());
        if pending.is_empty() {
            if let Some(checkpoints) = &checkpoints {
                if due {
                    checkpoints
                        .sign(sink.as_ref(), (delivered.0, &delivered.1))
                        .await;
                    due = false;
                }
                match tokio::time::timeout(checkpoints.every, incoming.recv()).await {
                    Ok(Some(round)) => pending.push_back(round),
                    Ok(None) => return,
                    Err(_idle) => due = true,
                }
                continue;
            }
            match incoming.recv().await {
                Some(round) => pending.push_back(round),
                None => return,
            }
            continue;
        }
        let n = pending.len().min(DELIVERY_BATCH);
        let batch = &pending.make_contiguous()[..n];
        match sink.append_many(batch).await {
            Ok(taken) if taken > 0 => {
                backoff = RETRY_FIRST;
                let last = &batch[taken.min(batch.len()) - 1];
                delivered = (last.seq, last.hash.clone());
                due = true;
                let mark = Watermark {
                    delivered_seq: last.seq,
                    hash: Some(last.hash.clone()),
                };
                let path = watermark.clone();
                let written = tokio::task::spawn_blocking(move || mark.write(&path)).await;
                match written {
                    Ok(Ok(())) => {}
                    // Not fatal: the rounds are sent again after a restart, which is safe.
                    Ok(Err(e)) => tracing::warn!(error = %e, "outbox: watermark not written"),
                    Err(e) => tracing::warn!(error = %e, "outbox: watermark task failed"),
                }
                pending.drain(..taken.min(pending.len()));
                metrics.outbox_depth(pending.len() + incoming.len());
            }
            answer => {
                let error = match answer {
                    Err(e) => e.to_string(),
                    Ok(_) => "the archive took none of the rounds sent".to_owned(),
                };
                metrics.outbox_failed();
                let first = &batch[0];
                tracing::warn!(
                    round = %first.round.round_id,
                    seq = first.seq,
                    error = %error,
                    retry_in_ms = backoff.as_millis(),
                    "outbox: delivery failed, will retry"
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RETRY_MAX);
            }
        }
    }
}
