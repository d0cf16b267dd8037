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

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
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
    /// Opens (or creates) `path`, reading the `seq` of its last round.
    pub fn open(path: &Path) -> std::io::Result<OutboxFile> {
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let mut last_seq = 0;
        for (n, line) in BufReader::new(&file).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let round: SealedRound = serde_json::from_str(&line).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} line {}: not a sealed round: {e}", path.display(), n + 1),
                )
            })?;
            last_seq = round.seq;
        }
        Ok(OutboxFile {
            inner: Arc::new(Mutex::new(Inner {
                path: path.to_owned(),
                file,
                last_seq,
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
        inner.file.write_all(&line).map_err(io)?;
        inner.file.sync_data().map_err(io)?;
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
