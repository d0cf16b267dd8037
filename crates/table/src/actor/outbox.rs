//! The outbox: every finished round, sealed into a hash chain, delivered in order to the
//! archive by its own task, with retries, while the table goes on.
//!
//! There is no outbox store: finished rounds are facts of the journal, so a restart
//! re-derives them (and their hashes) by replay. Only a small watermark file says up to
//! which round the archive has confirmed; rounds after it are sent again on restart (the
//! archive's append is idempotent by round id, so a crash between a delivery and its
//! watermark only causes a harmless re-send).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::rules::BoxFuture;
use crate::event::FinishedRound;
use crate::metrics::TableMetrics;

/// First wait after a failed delivery; doubled after each further failure.
pub const RETRY_FIRST: Duration = Duration::from_millis(50);
/// Longest wait between two delivery attempts.
pub const RETRY_MAX: Duration = Duration::from_secs(5);

/// The `prev_hash` of a table's first round.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A finished round with its place in the table's hash chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedRound {
    pub round: FinishedRound,
    /// 1, 2, 3, … per table, without gaps.
    pub seq: u64,
    /// Hex SHA-256 of the previous round ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// Hex SHA-256 over the 32 bytes of `prev_hash` followed by the canonical JSON of
    /// `round` (serde_json of [`FinishedRound`]: fields in declaration order, maps sorted).
    pub hash: String,
    /// Hex Ed25519 signature of the 32 bytes of `hash` by the table's key; empty when the
    /// table has no key (tests, demos without an archive).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// The id of the key that signed (`banco_auth::key_id` of its public key).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_id: String,
}

/// The table's signing key: it signs the hash of every round it seals, so that the chain
/// an auditor checks is the table's own, end to end.
#[derive(Clone)]
pub struct TableSigner {
    key: ed25519_dalek::SigningKey,
    key_id: String,
}

impl std::fmt::Debug for TableSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSigner")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl TableSigner {
    pub fn new(key: ed25519_dalek::SigningKey) -> TableSigner {
        let key_id = banco_auth::key_id(&key.verifying_key());
        TableSigner { key, key_id }
    }

    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    fn sign(&self, hash: &str) -> Result<String, String> {
        use ed25519_dalek::Signer as _;
        Ok(hex(&self.key.sign(&unhex(hash)?).to_bytes()))
    }

    /// The table's seal of what a round's clip is ([`clip_statement`]): its Ed25519
    /// signature of the statement's SHA-256, in hex.
    pub fn seal_clip(&self, statement: &[u8]) -> String {
        use ed25519_dalek::Signer as _;
        hex(&self.key.sign(&Sha256::digest(statement)).to_bytes())
    }

    /// Signs that table `table`'s chain ended at round `chain_seq`, of hash `head_hash`,
    /// at `at` (unix ms).
    pub fn checkpoint(&self, table: &str, chain_seq: u64, head_hash: &str, at: u64) -> Checkpoint {
        use ed25519_dalek::Signer as _;
        let statement = Checkpoint::statement(table, chain_seq, head_hash, at);
        Checkpoint {
            table: table.to_owned(),
            chain_seq,
            head_hash: head_hash.to_owned(),
            at,
            signature: hex(&self.key.sign(&Sha256::digest(statement)).to_bytes()),
            key_id: self.key_id.clone(),
        }
    }
}

/// A table's signed word of where its chain stood: its last round (`chain_seq`, 0 before
/// the first) and that round's hash, at an instant. The archive keeps the newest one, and
/// an auditor may keep their own copy (the table writes the newest to a file beside its
/// outbox): an archive whose chain stops short of a checkpoint has lost rounds, even if
/// every record left is intact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub table: String,
    pub chain_seq: u64,
    /// Lowercase hex; [`GENESIS_HASH`] at `chain_seq` 0.
    pub head_hash: String,
    /// Unix milliseconds.
    pub at: u64,
    /// Ed25519 of the SHA-256 of [`Checkpoint::statement`], hex.
    pub signature: String,
    pub key_id: String,
}

impl Checkpoint {
    /// What a checkpoint signs:
    /// `banco-head-v1\n<table>\n<chain_seq>\n<head hash>\n<at, unix ms>\n`.
    pub fn statement(table: &str, chain_seq: u64, head_hash: &str, at: u64) -> Vec<u8> {
        format!("banco-head-v1\n{table}\n{chain_seq}\n{head_hash}\n{at}\n").into_bytes()
    }

    /// Checks the signature against the table's public `key`.
    pub fn verify(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), String> {
        let bytes: [u8; 64] =
            unhex_n(&self.signature).map_err(|e| format!("checkpoint signature: {e}"))?;
        let statement =
            Checkpoint::statement(&self.table, self.chain_seq, &self.head_hash, self.at);
        key.verify_strict(
            &Sha256::digest(statement),
            &ed25519_dalek::Signature::from_bytes(&bytes),
        )
        .map_err(|_| {
            format!(
                "the checkpoint of table {} at round {} is not signed by key {}",
                self.table, self.chain_seq, self.key_id
            )
        })
    }

    /// Reads a checkpoint file as the outbox writes it.
    pub fn read(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a table checkpoint: {e}", path.display()))
    }
}

/// What a table seals of a round's video.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClipFacts<'a> {
    /// The clip file: its SHA-256 in lowercase hex and its size.
    Clip { sha256: &'a str, size_bytes: u64 },
    /// No clip, and why (`no_video`, `recorder_failed`, …: archive.proto's
    /// ClipMissingReason without its prefix, in lower case).
    Missing { reason: &'a str },
}

/// The bytes a table seals to bind a round's clip (or its absence) to the round: the
/// clip is finished after the round is sealed, so it cannot be in the round's own
/// record; this statement names the round's hash instead, so it is chained after it.
///
/// ```text
/// banco-clip-v1\n<round id>\n<round hash, lowercase hex>\nclip <sha256 hex> <size>\n
/// banco-clip-v1\n<round id>\n<round hash, lowercase hex>\nmissing <reason>\n
/// ```
pub fn clip_statement(round_id: &str, round_hash: &str, facts: ClipFacts<'_>) -> Vec<u8> {
    let last = match facts {
        ClipFacts::Clip { sha256, size_bytes } => format!("clip {sha256} {size_bytes}"),
        ClipFacts::Missing { reason } => format!("missing {reason}"),
    };
    format!("banco-clip-v1\n{round_id}\n{round_hash}\n{last}\n").into_bytes()
}

/// Checks a clip seal (hex) over `statement` against the table's public `key`.
pub fn verify_clip_seal(
    statement: &[u8],
    seal: &str,
    key: &ed25519_dalek::VerifyingKey,
) -> Result<(), String> {
    let bytes: [u8; 64] = unhex_n(seal).map_err(|e| format!("clip seal: {e}"))?;
    key.verify_strict(
        &Sha256::digest(statement),
        &ed25519_dalek::Signature::from_bytes(&bytes),
    )
    .map_err(|_| "the clip seal does not match what the record says of the clip".to_owned())
}

impl SealedRound {
    /// Checks `signature` against `key`: the table that holds its private half sealed this
    /// round with this hash.
    pub fn verify_signature(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), String> {
        let bytes: [u8; 64] = unhex_n(&self.signature)
            .map_err(|e| format!("round {}: signature: {e}", self.round.round_id))?;
        let hash = unhex(&self.hash)?;
        key.verify_strict(&hash, &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| {
                format!(
                    "round {}: the signature does not match its hash",
                    self.round.round_id
                )
            })
    }

    /// Recomputes the hash from `prev_hash` and `round` (for checks by receivers).
    pub fn compute_hash(prev_hash: &str, round: &FinishedRound) -> Result<String, String> {
        let json = serde_json::to_vec(round)
            .map_err(|e| format!("round {}: cannot encode: {e}", round.round_id))?;
        SealedRound::hash_encoded(prev_hash, &json)
    }

    /// The hash of a round already in its canonical encoding `json` (what
    /// [`SealedRound::compute_hash`] hashes), without encoding it again.
    pub fn hash_encoded(prev_hash: &str, json: &[u8]) -> Result<String, String> {
        let prev = unhex(prev_hash)?;
        let mut digest = Sha256::new();
        digest.update(prev);
        digest.update(json);
        Ok(hex(&digest.finalize()))
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Result<[u8; 32], String> {
    unhex_n(text)
}

/// `N` bytes from `2 N` hex digits.
pub(crate) fn unhex_n<const N: usize>(text: &str) -> Result<[u8; N], String> {
    let bad = || format!("`{text}` is not {} hex digits", 2 * N);
    if text.len() != 2 * N {
        return Err(bad());
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = text
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(bad)?;
    }
    Ok(out)
}

/// The head of a table's chain: what the next sealed round continues. The actor keeps
/// one per table; tests and benchmarks use it to seal rounds exactly as a table does.
#[derive(Clone, Debug)]
pub struct Chain {
    last_seq: u64,
    last_hash: String,
    signer: Option<Arc<TableSigner>>,
}

impl Chain {
    /// An empty chain whose rounds `signer` signs (if any).
    pub fn new(signer: Option<Arc<TableSigner>>) -> Chain {
        Chain {
            last_seq: 0,
            last_hash: GENESIS_HASH.to_owned(),
            signer,
        }
    }

    /// Rounds sealed so far.
    pub const fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The hash of the last round sealed ([`GENESIS_HASH`] before the first).
    pub fn last_hash(&self) -> &str {
        &self.last_hash
    }

    /// Seals `round` as the next link. Changes nothing on error.
    pub fn seal(&mut self, round: FinishedRound) -> Result<SealedRound, String> {
        let hash = SealedRound::compute_hash(&self.last_hash, &round)?;
        let (signature, key_id) = match &self.signer {
            Some(signer) => (signer.sign(&hash)?, signer.key_id().to_owned()),
            None => (String::new(), String::new()),
        };
        let sealed = SealedRound {
            round,
            seq: self.last_seq + 1,
            prev_hash: std::mem::replace(&mut self.last_hash, hash.clone()),
            hash,
            signature,
            key_id,
        };
        self.last_seq = sealed.seq;
        Ok(sealed)
    }
}

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
