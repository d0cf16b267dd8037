//! The journal's file format, replay, torn-tail recovery, corruption detection and group
//! commit, on real files in temporary directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use banco_table::journal::{
    FrameDefect, GroupCommitConfig, GroupCommitter, Journal, JournalError, MAX_PAYLOAD_LEN, Record,
};

const HEADER_LEN: usize = 12;
const FRAME_HEADER_LEN: usize = 16;

fn payload(i: u64) -> Vec<u8> {
    let mut p = format!("command-{i}:").into_bytes();
    p.extend((0..(i * 37 % 211)).map(|b| (b * 13 + i) as u8));
    p
}

fn journal_path(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// A journal with `n` records `payload(1..=n)`; returns its path and the records.
fn journal_with(dir: &tempfile::TempDir, name: &str, n: u64) -> (PathBuf, Vec<Record>) {
    let path = journal_path(dir, name);
    let (mut journal, replayed) = Journal::open(&path).unwrap();
    assert!(replayed.is_empty());
    for i in 1..=n {
        assert_eq!(journal.append(&payload(i)).unwrap(), i);
    }
    drop(journal);
    let (_, records) = Journal::open(&path).unwrap();
    (path, records)
}

fn assert_records(records: &[Record], n: u64) {
    assert_eq!(records.len() as u64, n);
    for (i, record) in (1..).zip(records) {
        assert_eq!(record.seq, i);
        assert_eq!(record.payload, payload(i), "payload of seq {i}");
    }
}

fn write_bytes(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
}

#[test]
fn round_trip_of_many_records() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "t.journal", 2000);
    assert_records(&records, 2000);
    // Offsets point at each frame, back to back after the header.
    let mut offset = HEADER_LEN as u64;
    for r in &records {
        assert_eq!(r.offset, offset);
        offset += (FRAME_HEADER_LEN + r.payload.len()) as u64;
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), offset);
    let (journal, _) = Journal::open(&path).unwrap();
    assert_eq!(journal.size_bytes(), offset);
    assert_eq!(journal.len(), 2000);
    assert_eq!(journal.last_seq(), 2000);
    assert_eq!(journal.path(), path);
    assert!(journal.torn_tail().is_none());
}

#[test]
fn empty_payload_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "t.journal");
    let (mut journal, _) = Journal::open(&path).unwrap();
    assert_eq!(journal.append(b"").unwrap(), 1);
    assert_eq!(journal.append(b"x").unwrap(), 2);
    drop(journal);
    let (_, records) = Journal::open(&path).unwrap();
    assert_eq!(records[0].payload, b"");
    assert_eq!(records[1].payload, b"x");
}

#[test]
fn reopen_continues_the_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = journal_with(&dir, "t.journal", 3);
    let (mut journal, records) = Journal::open(&path).unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(journal.next_seq(), 4);
    assert_eq!(journal.append(&payload(4)).unwrap(), 4);
    assert_eq!(
        journal.append_batch(&[&payload(5), &payload(6)]).unwrap(),
        5..7
    );
    drop(journal);
    let (journal, records) = Journal::open(&path).unwrap();
    assert_records(&records, 6);
    assert_eq!(journal.last_seq(), 6);
}

#[test]
fn torn_tail_at_every_byte_of_the_last_record_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "full.journal", 5);
    let full = fs::read(&path).unwrap();
    let last_start = records[4].offset as usize;
    let last_len = full.len() - last_start;
    assert!(last_len > FRAME_HEADER_LEN);
    let cut_path = journal_path(&dir, "cut.journal");
    for kept in 1..last_len {
        write_bytes(&cut_path, &full[..last_start + kept]);
        let (mut journal, replayed) = Journal::open(&cut_path).unwrap();
        assert_records(&replayed, 4);
        let torn = journal.torn_tail().expect("torn tail reported");
        assert_eq!(torn.offset, last_start as u64, "kept {kept}");
        assert_eq!(torn.dropped_bytes, kept as u64);
        assert_eq!(torn.seq, 5);
        assert!(matches!(torn.defect, FrameDefect::Truncated { .. }));
        assert_eq!(fs::metadata(&cut_path).unwrap().len(), last_start as u64);
        // The sequence carries on where the good records end.
        assert_eq!(journal.append(&payload(5)).unwrap(), 5);
        drop(journal);
        let (journal, replayed) = Journal::open(&cut_path).unwrap();
        assert!(journal.torn_tail().is_none());
        assert_records(&replayed, 5);
        assert_eq!(fs::read(&cut_path).unwrap(), full, "kept {kept}");
    }
}

#[test]
fn flipped_byte_in_the_last_record_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "full.journal", 5);
    let full = fs::read(&path).unwrap();
    let last_start = records[4].offset as usize;
    let bad_path = journal_path(&dir, "bad.journal");
    for at in last_start..full.len() {
        let mut bytes = full.clone();
        bytes[at] ^= 0x5a;
        write_bytes(&bad_path, &bytes);
        let (journal, replayed) = Journal::open(&bad_path).unwrap();
        assert_records(&replayed, 4);
        let torn = journal.torn_tail().expect("torn tail reported");
        assert_eq!(torn.offset, last_start as u64, "flip at {at}");
        assert_eq!(torn.seq, 5);
        assert_eq!(fs::metadata(&bad_path).unwrap().len(), last_start as u64);
    }
}

#[test]
fn flipped_byte_in_a_middle_record_is_an_error_naming_offset_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "full.journal", 5);
    let full = fs::read(&path).unwrap();
    let (start, end) = (records[2].offset as usize, records[3].offset as usize);
    let bad_path = journal_path(&dir, "bad.journal");
    for at in start..end {
        let mut bytes = full.clone();
        bytes[at] ^= 0x01;
        write_bytes(&bad_path, &bytes);
        let err = Journal::open(&bad_path).expect_err("corruption must not open");
        match &err {
            JournalError::Corrupt {
                path: p,
                offset,
                seq,
                next_valid_offset,
                next_valid_seq,
                ..
            } => {
                assert_eq!(p, &bad_path);
                assert_eq!(*offset, start as u64, "flip at {at}");
                assert_eq!(*seq, 3);
                assert_eq!(*next_valid_offset, end as u64);
                assert_eq!(*next_valid_seq, 4);
            }
            other => panic!("flip at {at}: expected Corrupt, got {other:?}"),
        }
        let message = err.to_string();
        assert!(message.contains(&format!("offset {start}")), "{message}");
        assert!(message.contains("seq 3"), "{message}");
        // Nothing was truncated or rewritten.
        assert_eq!(fs::read(&bad_path).unwrap(), bytes);
    }
}

#[test]
fn corruption_in_the_middle_of_a_long_journal_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "full.journal", 300);
    let mut bytes = fs::read(&path).unwrap();
    // Zero out record 100's frame header, as a lost disk sector would.
    let at = records[99].offset as usize;
    bytes[at..at + FRAME_HEADER_LEN].fill(0);
    write_bytes(&path, &bytes);
    match Journal::open(&path) {
        Err(JournalError::Corrupt { offset, seq, .. }) => {
            assert_eq!(offset, at as u64);
            assert_eq!(seq, 100);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_missing_record_is_a_sequence_break() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "full.journal", 3);
    let bytes = fs::read(&path).unwrap();
    let (start, end) = (records[1].offset as usize, records[2].offset as usize);
    let mut gapped = bytes[..start].to_vec();
    gapped.extend_from_slice(&bytes[end..]);
    write_bytes(&path, &gapped);
    match Journal::open(&path) {
        Err(JournalError::SequenceBreak {
            offset,
            expected,
            found,
            ..
        }) => {
            assert_eq!((offset, expected, found), (start as u64, 2, 3));
        }
        other => panic!("expected SequenceBreak, got {other:?}"),
    }
}

#[test]
fn empty_and_header_only_files_open_empty() {
    let dir = tempfile::tempdir().unwrap();
    // Missing file: created with a header.
    let path = journal_path(&dir, "new.journal");
    let (journal, records) = Journal::open(&path).unwrap();
    assert!(records.is_empty() && journal.is_empty());
    assert_eq!(journal.last_seq(), 0);
    assert_eq!(fs::metadata(&path).unwrap().len(), HEADER_LEN as u64);
    let header = fs::read(&path).unwrap();
    drop(journal);

    // Header-only file: no records, nothing torn.
    let (mut journal, records) = Journal::open(&path).unwrap();
    assert!(records.is_empty());
    assert!(journal.torn_tail().is_none());
    assert_eq!(journal.append(b"first").unwrap(), 1);

    // Zero-length file (crash right after creating it): initialised.
    let empty = journal_path(&dir, "empty.journal");
    write_bytes(&empty, b"");
    let (mut journal, records) = Journal::open(&empty).unwrap();
    assert!(records.is_empty());
    assert_eq!(journal.append(b"first").unwrap(), 1);

    // A torn header (crash while writing it): every prefix is initialised.
    for kept in 1..HEADER_LEN {
        let torn = journal_path(&dir, "torn-header.journal");
        write_bytes(&torn, &header[..kept]);
        let (journal, records) = Journal::open(&torn).unwrap();
        assert!(records.is_empty());
        assert_eq!(journal.size_bytes(), HEADER_LEN as u64);
        assert_eq!(fs::read(&torn).unwrap(), header);
    }
}

#[test]
fn wrong_magic_or_version_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "x.journal");
    write_bytes(&path, b"SQLite format 3\0 and then some");
    let err = Journal::open(&path).unwrap_err();
    assert!(matches!(err, JournalError::BadMagic { .. }), "{err:?}");
    assert!(err.to_string().contains("not a banco journal"), "{err}");
    // Untouched.
    assert_eq!(fs::read(&path).unwrap(), b"SQLite format 3\0 and then some");

    write_bytes(&path, b"abc");
    assert!(matches!(
        Journal::open(&path),
        Err(JournalError::BadMagic { .. })
    ));

    let mut future = b"BANCOJNL".to_vec();
    future.extend_from_slice(&2u32.to_le_bytes());
    write_bytes(&path, &future);
    match Journal::open(&path) {
        Err(JournalError::UnsupportedVersion {
            found, supported, ..
        }) => assert_eq!((found, supported), (2, 1)),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

#[test]
fn a_torn_batch_keeps_its_complete_records() {
    // Documented: a batch is not atomic; each record is independently checksummed, so a
    // crash during a batch's write keeps the complete prefix (none of it acknowledged yet).
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = journal_with(&dir, "t.journal", 2);
    let (mut journal, _) = Journal::open(&path).unwrap();
    let batch: Vec<Vec<u8>> = (3..=12).map(payload).collect();
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    let fsyncs_before = journal.fsync_count();
    assert_eq!(journal.append_batch(&refs).unwrap(), 3..13);
    assert_eq!(
        journal.fsync_count(),
        fsyncs_before + 1,
        "one fsync per batch"
    );
    drop(journal);
    let (_, records) = Journal::open(&path).unwrap();
    let full = fs::read(&path).unwrap();

    let cut = journal_path(&dir, "cut.journal");
    // Cut inside the batch's last record, then inside its 5th record (seq 7).
    for (inside, survivors) in [(11usize, 11u64), (6, 6)] {
        write_bytes(&cut, &full[..records[inside].offset as usize + 9]);
        let (journal, replayed) = Journal::open(&cut).unwrap();
        assert_records(&replayed, survivors);
        assert_eq!(journal.torn_tail().unwrap().seq, survivors + 1);
    }
}

#[test]
fn an_empty_batch_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = journal_with(&dir, "t.journal", 2);
    let (mut journal, _) = Journal::open(&path).unwrap();
    let size = journal.size_bytes();
    assert_eq!(journal.append_batch(&[]).unwrap(), 3..3);
    assert_eq!(journal.size_bytes(), size);
    assert_eq!(journal.append(b"next").unwrap(), 3);
}

#[test]
fn an_oversized_payload_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = journal_with(&dir, "t.journal", 2);
    let (mut journal, _) = Journal::open(&path).unwrap();
    let size = fs::metadata(&path).unwrap().len();
    let big = vec![7u8; MAX_PAYLOAD_LEN + 1];
    match journal.append_batch(&[b"ok", &big]) {
        Err(JournalError::PayloadTooLarge { index, len, .. }) => {
            assert_eq!((index, len), (1, MAX_PAYLOAD_LEN + 1));
        }
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), size);
    // Not a failure of the journal: it goes on.
    assert!(journal.failure().is_none());
    assert_eq!(journal.append(b"ok").unwrap(), 3);
}

#[test]
fn group_commit_under_64_concurrent_tasks() {
    const TASKS: u64 = 64;
    const PER_TASK: u64 = 25;
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "group.journal");
    let (journal, _) = Journal::open(&path).unwrap();
    let committer = GroupCommitter::spawn(journal, GroupCommitConfig::default()).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    let acked: Vec<(u64, Vec<u8>)> = runtime.block_on(async {
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let handle = committer.handle();
            tasks.push(tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0..PER_TASK {
                    let p = format!("task{task}-bet{i}").into_bytes();
                    let seq = handle.append(p.clone()).await.unwrap();
                    acked.push((seq, p));
                }
                acked
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all
    });

    let total = TASKS * PER_TASK;
    let seqs: HashSet<u64> = acked.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs.len() as u64, total, "every reply has a distinct seq");
    assert_eq!(seqs, (1..=total).collect::<HashSet<_>>());

    let stats = committer.stats();
    assert_eq!(stats.records, total);
    assert_eq!(stats.failed_commits, 0);
    assert!(
        stats.commits < stats.records,
        "group commit must share fsyncs: {stats:?}"
    );
    eprintln!(
        "group commit: {} records in {} fsyncs",
        stats.records, stats.commits
    );

    let journal = committer.shutdown().unwrap();
    assert_eq!(journal.last_seq(), total);
    drop(journal);
    let (_, records) = Journal::open(&path).unwrap();
    assert_eq!(records.len() as u64, total);
    for (seq, p) in &acked {
        assert_eq!(&records[(*seq - 1) as usize].payload, p, "seq {seq}");
    }
    // Each task's records are in the order it appended them.
    for task in 0..TASKS {
        let prefix = format!("task{task}-bet");
        let order: Vec<u64> = records
            .iter()
            .filter_map(|r| {
                std::str::from_utf8(&r.payload)
                    .ok()?
                    .strip_prefix(&prefix)?
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(order, (0..PER_TASK).collect::<Vec<_>>());
    }
}

#[test]
fn the_committer_answers_after_shutdown_of_all_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "t.journal");
    let (journal, _) = Journal::open(&path).unwrap();
    let committer = GroupCommitter::spawn(journal, GroupCommitConfig::default()).unwrap();
    let handle = committer.handle();
    assert_eq!(handle.blocking_append(b"one".to_vec()).unwrap(), 1);
    drop(handle);
    let journal = committer.shutdown().unwrap();
    assert_eq!(journal.last_seq(), 1);
}
