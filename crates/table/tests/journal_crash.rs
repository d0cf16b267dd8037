//! Real crashes: a helper process appends in a loop, printing each acknowledged record; the
//! test kills it with SIGKILL (`Child::kill`) at random moments, restarts it on the same
//! file, and finally checks that every acknowledged record is present, intact, once, and
//! in order. Plus a real write failure (file-size limit → EFBIG, standing in for ENOSPC).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::hash::BuildHasher;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use banco_table::journal::Journal;

const HELPER: &str = env!("CARGO_BIN_EXE_journal-crash-helper");

fn random_below(n: u64) -> u64 {
    RandomState::new().hash_one(std::time::Instant::now()) % n
}

/// Collects the `ack <seq> <payload>` lines the helper printed; only complete lines count.
fn collect_acks(child: &mut Child) -> JoinHandle<Vec<(u64, String)>> {
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut acks = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if line.ends_with('\n') => {
                    let mut parts = line.trim_end().splitn(3, ' ');
                    assert_eq!(parts.next(), Some("ack"), "line {line:?}");
                    let seq = parts.next().unwrap().parse().unwrap();
                    acks.push((seq, parts.next().unwrap().to_owned()));
                }
                Ok(_) => break, // a partial last line: not an acknowledgement
            }
        }
        acks
    })
}

/// Parses `run{run}-w{worker}-n{n}-xxx` into (run, worker, n).
fn parse_payload(payload: &[u8]) -> (String, u64, u64) {
    let text = std::str::from_utf8(payload).unwrap();
    let mut parts = text.split('-');
    let run = parts.next().unwrap().to_owned();
    let worker = parts
        .next()
        .unwrap()
        .trim_start_matches('w')
        .parse()
        .unwrap();
    let n = parts
        .next()
        .unwrap()
        .trim_start_matches('n')
        .parse()
        .unwrap();
    (run, worker, n)
}

fn crash_repeatedly(path: &Path, mode: &str, rounds: usize) {
    let mut acked: Vec<(u64, String)> = Vec::new();
    for round in 0..rounds {
        let mut child = Command::new(HELPER)
            .args([path.to_str().unwrap(), &round.to_string(), mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let reader = collect_acks(&mut child);
        let delay = 5 + random_below(120);
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        assert!(!status.success(), "helper must have been killed: {status}");
        let acks = reader.join().unwrap();
        eprintln!(
            "{mode}: round {round} killed after {delay} ms, {} acks",
            acks.len()
        );
        acked.extend(acks);
    }

    assert!(
        !acked.is_empty(),
        "{mode}: the helper never acknowledged anything"
    );
    let (journal, records) = Journal::open(path).unwrap();
    if let Some(torn) = journal.torn_tail() {
        eprintln!("{mode}: final open truncated a torn tail: {torn:?}");
    }
    // Open guarantees seqs 1..=n without gaps; check every ack is there, intact.
    let by_seq: HashMap<u64, &[u8]> = records
        .iter()
        .map(|r| (r.seq, r.payload.as_slice()))
        .collect();
    for (seq, payload) in &acked {
        assert_eq!(
            by_seq.get(seq).copied(),
            Some(payload.as_bytes()),
            "{mode}: acknowledged seq {seq} missing or changed"
        );
    }
    // Never duplicated.
    let distinct: HashSet<&[u8]> = records.iter().map(|r| r.payload.as_slice()).collect();
    assert_eq!(distinct.len(), records.len(), "{mode}: duplicated record");
    // Never reordered: each writer's counter only goes up along the journal.
    let mut last: HashMap<(String, u64), u64> = HashMap::new();
    for record in &records {
        let (run, worker, n) = parse_payload(&record.payload);
        if let Some(prev) = last.insert((run.clone(), worker), n) {
            assert!(
                n > prev,
                "{mode}: {run} w{worker} n{n} after n{prev} (seq {})",
                record.seq
            );
        }
    }
    assert!(records.len() >= acked.len());
    eprintln!(
        "{mode}: {} acked, {} in the journal after {rounds} kills",
        acked.len(),
        records.len()
    );
}

#[test]
fn kill_9_single_appends() {
    let dir = tempfile::tempdir().unwrap();
    crash_repeatedly(&dir.path().join("t.journal"), "single", 5);
}

#[test]
fn kill_9_batch_appends() {
    let dir = tempfile::tempdir().unwrap();
    crash_repeatedly(&dir.path().join("t.journal"), "batch:16", 5);
}

#[test]
fn kill_9_group_commit() {
    let dir = tempfile::tempdir().unwrap();
    crash_repeatedly(&dir.path().join("t.journal"), "group:8", 5);
}

/// Runs the helper on `path` in `mode` under a file-size limit of `blocks` × 512 bytes
/// until an append fails: the acks it printed (sorted by seq) and its stderr. A limit
/// makes a write fail part-way (EFBIG, like ENOSPC on a full disk). SIGXFSZ is ignored so
/// the write returns the error instead of killing the process; ignored signals stay
/// ignored across exec.
fn until_the_limit(path: &Path, blocks: u32, mode: &str) -> (Vec<(u64, String)>, String) {
    let mut child = Command::new("sh")
        .args([
            "-c",
            &format!(r#"trap "" XFSZ; ulimit -f {blocks} && exec "$0" "$@""#),
            HELPER,
            path.to_str().unwrap(),
            "0",
            mode,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = collect_acks(&mut child);
    let output = child.wait_with_output().unwrap();
    let mut acks = reader.join().unwrap();
    acks.sort_unstable();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(3), "stderr: {stderr}");
    assert!(stderr.contains("append failed"), "{stderr}");
    (acks, stderr)
}

/// The journal at `path` holds exactly the acknowledged records, and no torn tail.
fn holds_exactly(path: &Path, acks: &[(u64, String)]) -> Journal {
    let (journal, records) = Journal::open(path).unwrap();
    assert!(journal.torn_tail().is_none(), "{:?}", journal.torn_tail());
    assert_eq!(records.len(), acks.len());
    for ((seq, payload), record) in acks.iter().zip(&records) {
        assert_eq!(*seq, record.seq);
        assert_eq!(payload.as_bytes(), record.payload);
    }
    journal
}

#[test]
fn a_failed_write_is_rolled_back_and_further_appends_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.journal");
    let (acks, stderr) = until_the_limit(&path, 8, "single");
    assert!(stderr.contains("refusing appends"), "{stderr}");
    assert!(!acks.is_empty());

    // The partial record was truncated away by the journal itself: reopening finds
    // exactly the acknowledged records and no torn tail.
    let journal = holds_exactly(&path, &acks);
    eprintln!(
        "write failed after {} records ({} bytes)",
        acks.len(),
        journal.size_bytes()
    );
}

#[test]
fn a_failed_write_of_zeros_ahead_is_cut_off_and_commits_go_on() {
    // The group committer writes 256 KiB of zeros ahead after its first commit; under a
    // 32 KiB file-size limit that write fails part-way. Zeros only make commits cheaper:
    // they are cut off again, and records are appended until the limit stops them too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.journal");
    let (acks, _) = until_the_limit(&path, 64, "group:2");
    let journal = holds_exactly(&path, &acks);
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        journal.size_bytes(),
        "no zeros left"
    );
    assert!(
        journal.size_bytes() > 24 * 1024,
        "records stopped at {} bytes, long before the limit",
        journal.size_bytes()
    );
}
