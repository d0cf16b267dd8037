//! The journal's file format, replay, torn-tail recovery, corruption detection and group
//! commit, on real files in temporary directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use banco_table::journal::{
    FrameDefect, GroupCommitConfig, GroupCommitter, Journal, JournalError, MAX_PAYLOAD_LEN,
    READ_ATTEMPTS, Record,
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

/// A journal of five records, as bytes; where its last record starts; and a path beside
/// it (named `copy`) for the damaged copies a test writes.
fn five_records_and_a_copy(dir: &tempfile::TempDir, copy: &str) -> (Vec<u8>, usize, PathBuf) {
    let (path, records) = journal_with(dir, "full.journal", 5);
    let full = fs::read(&path).unwrap();
    (full, records[4].offset as usize, journal_path(dir, copy))
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
    let (full, last_start, cut_path) = five_records_and_a_copy(&dir, "cut.journal");
    let last_len = full.len() - last_start;
    assert!(last_len > FRAME_HEADER_LEN);
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
    let (full, last_start, bad_path) = five_records_and_a_copy(&dir, "bad.journal");
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
    // Each commit wrote and fsynced: the longest took some time, and counts again from
    // nothing when restarted.
    assert!(stats.longest > std::time::Duration::ZERO, "{stats:?}");
    let reader = committer.stats_reader();
    reader.restart_longest();
    assert_eq!(reader.read().longest, std::time::Duration::ZERO);

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

/// A journal of `n` records followed by `zeros` bytes written ahead, as the group
/// committer leaves it; returns its path, records and bytes.
fn journal_with_zeros_ahead(
    dir: &tempfile::TempDir,
    name: &str,
    n: u64,
    zeros: u64,
) -> (PathBuf, Vec<Record>, Vec<u8>) {
    let (path, records) = journal_with(dir, name, n);
    let (mut journal, _) = Journal::open(&path).unwrap();
    let size = journal.size_bytes();
    assert!(journal.zero_ahead(zeros).unwrap());
    assert_eq!(journal.file_len(), size + zeros);
    drop(journal);
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, size + zeros);
    (path, records, bytes)
}

#[test]
fn zeros_written_ahead_are_free_space_that_appends_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = journal_with_zeros_ahead(&dir, "t.journal", 5, 4096);
    let (mut journal, records) = Journal::open(&path).unwrap();
    assert_records(&records, 5);
    assert!(journal.torn_tail().is_none(), "zeros ahead are not torn");
    let size = journal.size_bytes();
    assert_eq!(journal.file_len(), size + 4096, "the zeros are kept");
    assert_eq!(
        Journal::read(&path).unwrap(),
        records,
        "a reader stops there too"
    );

    // Enough room: nothing is written, and no fsync spent.
    let fsyncs = journal.fsync_count();
    assert!(!journal.zero_ahead(4096).unwrap());
    assert_eq!(
        (journal.file_len(), journal.fsync_count()),
        (size + 4096, fsyncs)
    );

    // Appends go into the zeros: the file keeps its length.
    assert_eq!(
        journal.append_batch(&[&payload(6), &payload(7)]).unwrap(),
        6..8
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), size + 4096);
    // Past them, the file grows as it would without.
    let big = vec![7u8; 8000];
    assert_eq!(journal.append(&big).unwrap(), 8);
    let end = journal.size_bytes();
    assert_eq!(journal.file_len(), end);
    assert_eq!(fs::metadata(&path).unwrap().len(), end);
    assert!(journal.zero_ahead(512).unwrap());
    assert_eq!(fs::metadata(&path).unwrap().len(), end + 512);
    drop(journal);

    let (journal, records) = Journal::open(&path).unwrap();
    assert_records(&records[..7], 7);
    assert_eq!(records[7].payload, big);
    assert_eq!(journal.size_bytes(), end);
    assert!(journal.torn_tail().is_none());
}

#[test]
fn a_record_cut_in_zeroed_space_is_a_torn_tail() {
    // A crash while writing into zeros leaves the first bytes of the record, then zeros.
    let dir = tempfile::tempdir().unwrap();
    let (full, last_start, cut_path) = five_records_and_a_copy(&dir, "cut.journal");
    for kept in 0..full.len() - last_start {
        let mut bytes = full[..last_start + kept].to_vec();
        bytes.resize(full.len() + 1024, 0);
        write_bytes(&cut_path, &bytes);
        let (mut journal, replayed) = Journal::open(&cut_path).unwrap();
        assert_records(&replayed, 4);
        let written = full[last_start..last_start + kept].iter().any(|&b| b != 0);
        match journal.torn_tail() {
            Some(torn) => {
                assert!(written, "kept {kept}: only zeros, yet {torn:?}");
                assert_eq!((torn.offset, torn.seq), (last_start as u64, 5));
                assert_eq!(torn.dropped_bytes, (bytes.len() - last_start) as u64);
                assert_eq!(fs::metadata(&cut_path).unwrap().len(), last_start as u64);
            }
            None => {
                assert!(!written, "kept {kept}: written bytes taken for free space");
                assert_eq!(journal.file_len(), bytes.len() as u64);
            }
        }
        assert_eq!(journal.append(&payload(5)).unwrap(), 5, "kept {kept}");
        drop(journal);
        let (_, replayed) = Journal::open(&cut_path).unwrap();
        assert_records(&replayed, 5);
    }
}

/// Zeroes `bytes[from..to]`, as a power cut that kept none of that part of a write.
fn unwritten(bytes: &[u8], from: usize, to: usize) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    bytes[from..to].fill(0);
    bytes
}

#[test]
fn a_power_cut_that_kept_a_later_sector_of_a_write_is_a_torn_tail() {
    // A power cut during one write into zeroed space may keep a later sector and lose an
    // earlier one: valid records follow a gap of zeros, none of them acknowledged.
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = journal_with_zeros_ahead(&dir, "full.journal", 3, 64 * 1024);
    let (mut journal, _) = Journal::open(&path).unwrap();
    let batch_start = journal.size_bytes() as usize;
    let batch: Vec<Vec<u8>> = (4..=40).map(payload).collect();
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    journal.append_batch(&refs).unwrap();
    let batch_end = journal.size_bytes() as usize;
    drop(journal);
    let full = fs::read(&path).unwrap();
    assert!(batch_end - batch_start > 4 * 512, "the batch spans sectors");
    let records = Journal::read(&path).unwrap();
    let first_after = |at: usize| records.iter().find(|r| r.offset as usize >= at).unwrap();
    let boundary = batch_start.next_multiple_of(512);
    assert!(
        boundary - batch_start > FRAME_HEADER_LEN,
        "the test's layout"
    );

    let cases = [
        // The sector the write began in: lost from the write's start to its end.
        (batch_start, boundary),
        // A whole sector in the middle of the write.
        (boundary + 1024, boundary + 1536),
    ];
    let cut = journal_path(&dir, "cut.journal");
    for (from, to) in cases {
        write_bytes(&cut, &unwritten(&full, from, to));
        // The first record the lost bytes fall in.
        let torn_seq = records
            .iter()
            .find(|r| r.offset as usize + FRAME_HEADER_LEN + r.payload.len() > from)
            .unwrap()
            .seq;
        let (journal, replayed) = Journal::open(&cut).unwrap();
        let torn = journal.torn_tail().expect("a torn tail");
        assert_eq!(torn.seq, torn_seq, "lost {from}..{to}");
        assert_records(&replayed, torn_seq - 1);
        assert!(first_after(to).seq > torn_seq, "valid records followed");
        assert_eq!(fs::metadata(&cut).unwrap().len(), torn.offset);
    }

    // Zeros shorter than a sector, in the middle of records: damage, not a lost sector.
    let middle = first_after(boundary + 1024);
    let at = middle.offset as usize + FRAME_HEADER_LEN;
    let damaged = unwritten(&full, at, at + 100);
    write_bytes(&cut, &damaged);
    match Journal::open(&cut) {
        Err(JournalError::Corrupt { seq, .. }) => assert_eq!(seq, middle.seq),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(fs::read(&cut).unwrap(), damaged, "left untouched");
}

#[test]
fn a_reader_beside_the_writer_says_corrupt_only_of_lasting_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (path, records) = journal_with(&dir, "t.journal", 6);
    let at = records[3].offset as usize + FRAME_HEADER_LEN;
    let bytes = unwritten(&fs::read(&path).unwrap(), at, at + 4);
    write_bytes(&path, &bytes);
    let started = std::time::Instant::now();
    assert!(matches!(
        Journal::read(&path),
        Err(JournalError::Corrupt { seq: 4, .. })
    ));
    // Read again between attempts, 5 ms apart.
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(5 * u64::from(READ_ATTEMPTS - 1))
    );
    assert_eq!(fs::read(&path).unwrap(), bytes, "only read");
}

#[test]
fn a_reader_beside_a_writer_into_zeros_reads_every_acknowledged_record() {
    // The writer commits into zeros and writes more zeros between commits, as the group
    // committer does, while the reader reads: every read is a gap-free prefix of the
    // records as written, holding every record acknowledged before it began, and none
    // calls the file corrupt.
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "t.journal");
    let (mut journal, _) = Journal::open(&path).unwrap();
    let acked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let acked = std::sync::Arc::clone(&acked);
        std::thread::spawn(move || {
            let mut zeroings = 0;
            for i in 1..=3000u64 {
                let batch: Vec<Vec<u8>> = (0..4).map(|k| payload(4 * i + k)).collect();
                let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                let seqs = journal.append_batch(&refs).unwrap();
                acked.store(seqs.end - 1, std::sync::atomic::Ordering::Release);
                zeroings += u32::from(journal.zero_ahead(8192).unwrap());
            }
            zeroings
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let before = acked.load(std::sync::atomic::Ordering::Acquire);
        let records = Journal::read(&path).unwrap();
        assert!(
            records.len() as u64 >= before,
            "{} < {before}",
            records.len()
        );
        for (seq, record) in (1..).zip(&records) {
            assert_eq!(record.seq, seq);
            // Batch i holds payloads 4i to 4i + 3: record seq is payload seq + 3.
            assert_eq!(record.payload, payload(seq + 3), "seq {seq}");
        }
        reads += 1;
    }
    let zeroings = writer.join().unwrap();
    assert!(zeroings > 100, "only {zeroings} times zeros were written");
    assert!(reads > 10, "only {reads} reads while the writer ran");
    assert_eq!(Journal::read(&path).unwrap().len(), 12_000);
}

#[tokio::test]
async fn the_group_committer_keeps_zeros_ahead_of_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let config = GroupCommitConfig {
        zero_ahead: 8192,
        ..GroupCommitConfig::default()
    };
    let path = journal_path(&dir, "t.journal");
    let (journal, _) = Journal::open(&path).unwrap();
    let committer = GroupCommitter::spawn(journal, config).unwrap();
    for i in 1..=200 {
        assert_eq!(committer.append(payload(i)).await.unwrap(), i);
    }
    let stats = committer.stats();
    let journal = tokio::task::spawn_blocking(move || committer.shutdown())
        .await
        .unwrap()
        .unwrap();
    let ahead = journal.file_len() - journal.size_bytes();
    assert!((4096..=8192).contains(&ahead), "{ahead} bytes ahead");
    // 8 KiB at a time, after the first record (which grew the file), each its own fsync.
    let first_end = (HEADER_LEN + FRAME_HEADER_LEN + payload(1).len()) as u64;
    assert_eq!(
        stats.zeroings * 8192,
        journal.file_len() - first_end,
        "{stats:?}"
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), journal.file_len());
    drop(journal);
    let (_, records) = Journal::open(&path).unwrap();
    assert_records(&records, 200);

    // Without: the file is its records.
    let path = journal_path(&dir, "none.journal");
    let (journal, _) = Journal::open(&path).unwrap();
    let config = GroupCommitConfig {
        zero_ahead: 0,
        ..config
    };
    let committer = GroupCommitter::spawn(journal, config).unwrap();
    committer.append(payload(1)).await.unwrap();
    assert_eq!(committer.stats().zeroings, 0);
    let journal = tokio::task::spawn_blocking(move || committer.shutdown())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(journal.file_len(), journal.size_bytes());
}

#[test]
fn no_zeros_are_written_ahead_in_memory() {
    // On tmpfs an fsync writes nothing, so zeros would only take room (and a full tmpfs
    // would refuse a command only once they were used up).
    let dir = tempfile::tempdir_in("/dev/shm").expect("/dev/shm, a tmpfs on Debian");
    let path = journal_path(&dir, "t.journal");
    let (mut journal, _) = Journal::open(&path).unwrap();
    journal.append(b"first").unwrap();
    assert!(!journal.zero_ahead(4096).unwrap());
    assert_eq!(journal.file_len(), journal.size_bytes());
    assert_eq!(fs::metadata(&path).unwrap().len(), journal.size_bytes());
}

#[test]
fn damage_before_a_last_record_that_ends_in_zeros_is_corrupt() {
    // The zeros a record's payload may end in are not free space: the record behind the
    // damage is found, acknowledged, and the file refused rather than cut.
    let dir = tempfile::tempdir().unwrap();
    let path = journal_path(&dir, "t.journal");
    let (mut journal, _) = Journal::open(&path).unwrap();
    journal.append(&payload(1)).unwrap();
    journal.append(&payload(2)).unwrap();
    journal
        .append(&[7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        .unwrap();
    assert!(journal.zero_ahead(4096).unwrap());
    drop(journal);
    let records = Journal::read(&path).unwrap();
    let at = records[1].offset as usize + FRAME_HEADER_LEN;
    let mut bytes = fs::read(&path).unwrap();
    bytes[at] ^= 0x40;
    write_bytes(&path, &bytes);
    match Journal::open(&path) {
        Err(JournalError::Corrupt {
            seq,
            next_valid_seq,
            ..
        }) => assert_eq!((seq, next_valid_seq), (2, 3)),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}
