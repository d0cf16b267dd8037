//! An archive sink for the time before the archive service: each sealed round becomes one
//! JSON line of a file.
//!
//! Format: one [`SealedRound`] per line (serde JSON: `round`, `seq`, `prev_hash`, `hash`),
//! in the table's round order (`seq` 1, 2, 3, … without gaps). A line is written and the
//! file fsynced before the append is acknowledged, so the actor's outbox watermark never
//! gets ahead of the file. The actor re-sends rounds after its watermark on restart; a
//! round whose `seq` is already in the file is acknowledged without writing it again, and
//! one that would leave a gap is refused (the outbox retries, in order), so the file stays
//! exactly the chain. Whoever imports the file later into the archive checks `prev_hash`
//! continuity as the archive always does.
//!
//! A crash can cut the last line (it was never acknowledged: the fsync comes after the
//! write). Opening truncates such a torn last line, as the journal truncates its torn tail,
//! and the actor sends that round again. A bad line with rounds after it is not a crash's
//! doing: opening refuses the file, naming the line.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use banco_table::actor::{ArchiveSink, BoxFuture, SealedRound, SinkError};

/// Appends sealed rounds to a JSON-lines file. See the module documentation.
#[derive(Debug, Clone)]
pub struct OutboxFile {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    file: File,
    /// The `seq` of the last line in the file (0: empty).
    last_seq: u64,
}

impl OutboxFile {
    /// Opens (or creates) `path`, reading the `seq` of its last round. A torn last line is
    /// truncated away; any other bad line, or a round out of order, is an error naming the
    /// line.
    pub fn open(path: &Path) -> std::io::Result<OutboxFile> {
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let scanned = scan(path, &bytes)?;
        if scanned.valid_len < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                line = scanned.lines + 1,
                dropped_bytes = bytes.len() - scanned.valid_len,
                "outbox file: truncating a torn last line (a write cut by a crash, never acknowledged)"
            );
            file.set_len(scanned.valid_len as u64)?;
            file.sync_data()?;
        }
        Ok(OutboxFile {
            inner: Arc::new(Mutex::new(Inner {
                path: path.to_owned(),
                file,
                last_seq: scanned.last_seq,
            })),
        })
    }

    /// The `seq` of the last round written.
    pub fn last_seq(&self) -> u64 {
        self.inner.lock().map_or(0, |inner| inner.last_seq)
    }

    fn write(inner: &Mutex<Inner>, round: &SealedRound) -> Result<(), SinkError> {
        let mut inner = inner
            .lock()
            .map_err(|_| SinkError("outbox file lock poisoned by an earlier failure".to_owned()))?;
        if round.seq <= inner.last_seq {
            return Ok(());
        }
        if round.seq != inner.last_seq + 1 {
            return Err(SinkError(format!(
                "{}: round seq {} would leave a gap after {}",
                inner.path.display(),
                round.seq,
                inner.last_seq
            )));
        }
        let mut line = serde_json::to_vec(round).map_err(|e| {
            SinkError(format!(
                "round {}: cannot encode: {e}",
                round.round.round_id
            ))
        })?;
        line.push(b'\n');
        let path = inner.path.display().to_string();
        let io = |e: std::io::Error| SinkError(format!("{path}: {e}"));
        let len = inner.file.metadata().map_err(io)?.len();
        if let Err(e) = inner
            .file
            .write_all(&line)
            .and_then(|()| inner.file.sync_data())
        {
            // A full disk can take part of the line: cut it off, or the retry would write
            // the whole line after it and the file would no longer open.
            if let Err(undo) = inner.file.set_len(len) {
                return Err(SinkError(format!(
                    "{path}: {e}; cutting the partial line off also failed: {undo}"
                )));
            }
            return Err(io(e));
        }
        inner.last_seq = round.seq;
        Ok(())
    }
}

impl ArchiveSink for OutboxFile {
    fn append<'a>(&'a self, round: &'a SealedRound) -> BoxFuture<'a, Result<(), SinkError>> {
        let inner = Arc::clone(&self.inner);
        let round = round.clone();
        Box::pin(async move {
            // The fsync blocks: off the async threads.
            tokio::task::spawn_blocking(move || OutboxFile::write(&inner, &round))
                .await
                .map_err(|e| SinkError(format!("outbox writer task failed: {e}")))?
        })
    }
}

/// What [`scan`] found in an outbox file.
#[derive(Debug, PartialEq, Eq)]
struct Scanned {
    /// The `seq` of the last round (0: none).
    last_seq: u64,
    /// Bytes up to the end of the last whole, valid line.
    valid_len: usize,
    /// Lines in those bytes.
    lines: usize,
}

/// Reads the rounds of an outbox file. The last line may be torn (no newline, or not a
/// round): it is left out of `valid_len`. A bad line before it, or a `seq` that does not
/// follow the previous one, is an error naming the line.
fn scan(path: &Path, bytes: &[u8]) -> std::io::Result<Scanned> {
    let bad = |line: usize, why: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} line {line}: {why}", path.display()),
        )
    };
    let mut scanned = Scanned {
        last_seq: 0,
        valid_len: 0,
        lines: 0,
    };
    let mut start = 0;
    let mut number = 0;
    while start < bytes.len() {
        number += 1;
        let newline = bytes[start..].iter().position(|&b| b == b'\n');
        let end = newline.map_or(bytes.len(), |n| start + n);
        let next = newline.map_or(bytes.len(), |_| end + 1);
        let text = &bytes[start..end];
        let is_last = bytes[next..].iter().all(u8::is_ascii_whitespace);
        if text.iter().all(u8::is_ascii_whitespace) {
            if newline.is_none() {
                // Trailing blanks without a newline: a torn line too.
                break;
            }
            scanned.valid_len = next;
            scanned.lines = number;
            start = next;
            continue;
        }
        let round = match serde_json::from_slice::<SealedRound>(text) {
            Ok(round) if newline.is_some() => round,
            Err(e) if !is_last => return Err(bad(number, format!("not a sealed round: {e}"))),
            // A cut write (no newline, or not a whole round): the last line, never
            // acknowledged.
            _ => break,
        };
        if round.seq != scanned.last_seq + 1 {
            return Err(bad(
                number,
                format!(
                    "round seq {} after {}: the file is not the table's chain in order",
                    round.seq, scanned.last_seq
                ),
            ));
        }
        scanned.last_seq = round.seq;
        scanned.valid_len = next;
        scanned.lines = number;
        start = next;
    }
    Ok(scanned)
}
