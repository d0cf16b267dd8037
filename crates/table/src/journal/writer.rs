//! [`Journal`]: the synchronous, single-owner append path. Every append is written and
//! fsynced before it returns, so a returned sequence number is durable.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::{JournalError, TornTail};
use super::format::{HEADER_LEN, MAX_PAYLOAD_LEN, encode_frame, header_bytes};
use super::replay::{Record, scan};

/// How many times [`Journal::read`] reads a file that looks corrupt before saying so.
pub const READ_ATTEMPTS: u32 = 5;

/// An open, append-only journal file with a single owner.
///
/// Failure policy: if a write or fsync fails (disk full, I/O error), the records of that
/// call are not acknowledged, the file is truncated back to the last acknowledged record
/// (best effort), and the journal is marked failed: every later append returns
/// [`JournalError::Failed`] until the journal is reopened with [`Journal::open`], which
/// re-reads and re-verifies the file from disk. Appends are refused rather than retried
/// because after a failed fsync the kernel may have dropped the dirty pages while a later
/// fsync still reports success, so nothing written after the failure could be trusted.
///
/// If the truncation back also fails (the disk is gone), the failed records may still be
/// on disk and be replayed by the next open although they were never acknowledged. That is
/// the same situation as a crash between the fsync and the reply, which every write-ahead
/// log has: callers make commands idempotent (the ledger's idempotency keys).
///
/// One process must own a journal file at a time; this type does not lock the file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Bytes of the file that hold the header and acknowledged records.
    size_bytes: u64,
    /// Length of the file: `size_bytes`, then zeros written ahead (see
    /// [`Journal::zero_ahead`]).
    file_len: u64,
    /// Whether [`Journal::zero_ahead`] writes: not on a file system in memory, and not
    /// again after it failed, until the journal is reopened.
    zeroing: bool,
    last_seq: u64,
    fsyncs: u64,
    failed: Option<String>,
    torn_tail: Option<TornTail>,
    /// Reused buffer for encoding a batch, so a batch is one `write` call.
    scratch: Vec<u8>,
}

impl Journal {
    /// Every valid record of the journal at `path`, read without opening it for writing:
    /// for a reader beside the table's own writer (a torn tail, which may be a record
    /// being written just then, is left out and left alone).
    ///
    /// The writer copies records into zeros written ahead, and a read at that moment can
    /// see a later part of its write and not an earlier one: damage followed by valid
    /// records. So [`JournalError::Corrupt`] is only answered once the file reads so
    /// [`READ_ATTEMPTS`] times, a few milliseconds apart; a write in progress is over by
    /// the next.
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Record>, JournalError> {
        let path = path.as_ref();
        let mut attempts = 1;
        loop {
            let bytes = std::fs::read(path).map_err(|source| JournalError::Io {
                path: path.to_path_buf(),
                op: "read",
                source,
            })?;
            match scan(path, &bytes) {
                Err(JournalError::Corrupt { .. }) if attempts < READ_ATTEMPTS => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                scanned => return Ok(scanned?.records),
            }
        }
    }

    /// Opens the journal at `path`, creating it if it does not exist, and replays it.
    ///
    /// Returns every valid record in order. A torn tail (a partial or damaged final record
    /// with nothing valid after it) is truncated away and reported by
    /// [`Journal::torn_tail`]; damage followed by valid records is
    /// [`JournalError::Corrupt`] and the file is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<(Journal, Vec<Record>), JournalError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |op: &'static str| {
            let path = path.clone();
            move |source| JournalError::Io { path, op, source }
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err("open"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err("read"))?;
        let scanned = scan(&path, &bytes)?;
        let mut file_len = bytes.len() as u64;
        drop(bytes);

        let mut size_bytes = scanned.valid_len;
        let mut fsyncs = 0;
        if size_bytes == 0 {
            // New file (or a crash while creating one): write the header and make both the
            // file and its directory entry durable before anything is appended.
            file.set_len(0).map_err(io_err("truncate"))?;
            file.seek(SeekFrom::Start(0)).map_err(io_err("seek"))?;
            file.write_all(&header_bytes())
                .map_err(io_err("write header"))?;
            file.sync_data().map_err(io_err("fsync"))?;
            sync_parent_dir(&path).map_err(io_err("fsync directory"))?;
            fsyncs += 1;
            size_bytes = HEADER_LEN;
            file_len = HEADER_LEN;
        } else if let Some(torn) = &scanned.torn_tail {
            tracing::warn!(
                path = %path.display(),
                offset = torn.offset,
                dropped_bytes = torn.dropped_bytes,
                seq = torn.seq,
                defect = %torn.defect,
                "journal: truncating torn tail (an unacknowledged record cut by a crash)"
            );
            file.set_len(size_bytes)
                .map_err(io_err("truncate torn tail"))?;
            file.sync_data().map_err(io_err("fsync"))?;
            fsyncs += 1;
            file_len = size_bytes;
        }
        file.seek(SeekFrom::Start(size_bytes))
            .map_err(io_err("seek"))?;

        let last_seq = scanned.records.last().map_or(0, |r| r.seq);
        let zeroing = !in_memory(&file);
        let journal = Journal {
            path,
            file,
            size_bytes,
            file_len,
            zeroing,
            last_seq,
            fsyncs,
            failed: None,
            torn_tail: scanned.torn_tail,
            scratch: Vec::new(),
        };
        Ok((journal, scanned.records))
    }

    /// Appends one record, fsyncs, and returns its sequence number: durable on return.
    pub fn append(&mut self, payload: &[u8]) -> Result<u64, JournalError> {
        self.append_batch(&[payload]).map(|seqs| seqs.start)
    }

    /// Appends several records with one write and ONE fsync, returning their sequence
    /// numbers (in order). An empty batch writes nothing and returns an empty range.
    ///
    /// A batch is not atomic: each record is framed and checksummed on its own, so a crash
    /// during the write may keep a prefix of the batch. None of it was acknowledged yet, so
    /// that is the same as a crash between a record's fsync and its reply. Sizes are checked
    /// before anything is written: an oversized payload rejects the whole batch.
    pub fn append_batch(&mut self, payloads: &[&[u8]]) -> Result<Range<u64>, JournalError> {
        if let Some(reason) = &self.failed {
            return Err(JournalError::Failed {
                path: self.path.clone(),
                reason: reason.clone(),
            });
        }
        if let Some((index, payload)) = payloads
            .iter()
            .enumerate()
            .find(|(_, p)| p.len() > MAX_PAYLOAD_LEN)
        {
            return Err(JournalError::PayloadTooLarge {
                path: self.path.clone(),
                index,
                len: payload.len(),
                max: MAX_PAYLOAD_LEN,
            });
        }
        let first = self.last_seq + 1;
        if payloads.is_empty() {
            return Ok(first..first);
        }
        self.scratch.clear();
        for (seq, payload) in (first..).zip(payloads) {
            encode_frame(&mut self.scratch, seq, payload);
        }
        if let Err(source) = self.file.write_all(&self.scratch) {
            return Err(self.fail("write", source));
        }
        if let Err(source) = self.file.sync_data() {
            return Err(self.fail("fsync", source));
        }
        self.fsyncs += 1;
        self.size_bytes += self.scratch.len() as u64;
        self.file_len = self.file_len.max(self.size_bytes);
        self.last_seq += payloads.len() as u64;
        if self.scratch.capacity() > 1 << 20 {
            self.scratch = Vec::new();
        }
        Ok(first..self.last_seq + 1)
    }

    /// Makes sure at least half of `step` bytes of zeros lie ahead of the records, writing
    /// `step` more (and fsyncing them) when fewer do. Returns whether it wrote.
    ///
    /// An fdatasync after a write that grows the file must also commit the file's new size
    /// to the file system's own journal; one after a write into space the file already has
    /// only writes the data. On ext4 beside another process's stream of fsyncs (the
    /// wallet's) that halved the mean fsync and cut its longest waits (the benchmarks
    /// page). [`Journal::open`] and readers take a tail of zeros as free space. Called
    /// between commits, not in one (the group committer does it after answering a batch),
    /// so that no commit waits for zeros to reach the disk. Nothing is written on a file
    /// system in memory (tmpfs, ramfs): its fsync writes nothing, and zeros would only
    /// take room.
    ///
    /// Zeros are only a way to make commits cheaper, so failing to write them (a full
    /// disk) does not fail the journal: the zeros just written are cut off again, the error
    /// is returned and logged, and from then on until the journal is reopened commits grow
    /// the file, as they would without. A failed fsync cannot have lost a record: every
    /// record was fsynced before, and the pages written since hold only zeros.
    pub fn zero_ahead(&mut self, step: u64) -> Result<bool, JournalError> {
        if step == 0
            || self.failed.is_some()
            || !self.zeroing
            || self.file_len - self.size_bytes >= step / 2
        {
            return Ok(false);
        }
        let zeros = vec![0u8; usize::try_from(step).unwrap_or(usize::MAX)];
        let written = self
            .file
            .write_all_at(&zeros, self.file_len)
            .map_err(|e| ("write zeros ahead", e))
            .and_then(|()| self.file.sync_data().map_err(|e| ("fsync zeros ahead", e)));
        match written {
            Ok(()) => {
                self.fsyncs += 1;
                self.file_len += zeros.len() as u64;
                Ok(true)
            }
            Err((op, source)) => {
                self.zeroing = false;
                // Best effort: zeros left beyond `file_len` are free space all the same.
                let _ = self.file.set_len(self.file_len);
                tracing::warn!(
                    path = %self.path.display(),
                    error = %source,
                    "journal: {op} failed; commits grow the file until the journal is reopened"
                );
                Err(JournalError::Io {
                    path: self.path.clone(),
                    op,
                    source,
                })
            }
        }
    }

    /// Marks the journal failed after `op` failed, rolling the file back to the last
    /// acknowledged record. Returns the error to hand to the caller.
    fn fail(&mut self, op: &'static str, source: std::io::Error) -> JournalError {
        let mut reason = format!("{op} failed: {source}");
        let rollback = self
            .file
            .set_len(self.size_bytes)
            .and_then(|()| self.file.sync_data())
            .and_then(|()| self.file.seek(SeekFrom::Start(self.size_bytes)).map(|_| ()));
        if let Err(rollback_err) = rollback {
            reason.push_str(&format!(
                "; truncating back to {} bytes also failed ({rollback_err}): the unacknowledged \
                 records may reappear on reopen",
                self.size_bytes
            ));
        }
        self.file_len = self.size_bytes;
        tracing::error!(path = %self.path.display(), %reason, "journal: append failed");
        self.failed = Some(reason);
        JournalError::Io {
            path: self.path.clone(),
            op,
            source,
        }
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of records in the journal (acknowledged ones, plus those replayed on open).
    pub fn len(&self) -> u64 {
        self.last_seq
    }

    /// True if no record has been written.
    pub fn is_empty(&self) -> bool {
        self.last_seq == 0
    }

    /// Sequence number of the last record, 0 if there is none.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Sequence number the next append will get.
    pub fn next_seq(&self) -> u64 {
        self.last_seq + 1
    }

    /// Size of the valid part of the file in bytes (header plus records).
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Length of the file in bytes: the valid part, then any zeros written ahead.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Number of successful fsyncs of the file since it was opened (including the one that
    /// made a new header or a torn-tail truncation durable, and those of zeros written
    /// ahead). Lets tests and metrics see how well group commit batches.
    pub fn fsync_count(&self) -> u64 {
        self.fsyncs
    }

    /// The torn tail that [`Journal::open`] cut off, if any.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// Why appends are refused, if an earlier write or fsync failed.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }
}

/// Whether `file` is on a file system in memory: tmpfs or ramfs, by their `statfs(2)` types.
#[allow(
    clippy::useless_conversion,
    reason = "`f_type` is an i64 here, narrower on other architectures"
)]
fn in_memory(file: &File) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    rustix::fs::fstatfs(file)
        .is_ok_and(|fs| matches!(i64::from(fs.f_type), TMPFS_MAGIC | RAMFS_MAGIC))
}

/// Makes a newly created file's directory entry durable.
fn sync_parent_dir(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}
