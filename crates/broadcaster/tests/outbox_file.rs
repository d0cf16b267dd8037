//! OutboxFile after a crash: a torn last line is truncated, damage before it is refused.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::Write as _;

use banco_broadcaster::OutboxFile;
use banco_table::actor::{ArchiveSink, GENESIS_HASH, SealedRound};
use banco_table::{FinishedRound, RoundId};

fn round(seq: u64, prev_hash: &str) -> SealedRound {
    let round = FinishedRound {
        round_id: RoundId::new("T01", 1, u32::try_from(seq).unwrap()),
        table: "T01".to_owned(),
        shoe: 1,
        hand: u32::try_from(seq).unwrap(),
        betting_opened_at: 1_000 * seq,
        betting_closed_at: None,
        cards: Vec::new(),
        corrections: Vec::new(),
        void: None,
        result: None,
        bets: BTreeMap::new(),
        settlements: BTreeMap::new(),
        entries: Vec::new(),
        finished_at: 1_000 * seq + 1,
        opened_by: None,
        confirmed_by: None,
        cut_card: false,
        shoe_opening: None,
        revealed: None,
        placements: BTreeMap::new(),
    };
    let hash = SealedRound::compute_hash(prev_hash, &round).unwrap();
    SealedRound {
        round,
        seq,
        prev_hash: prev_hash.to_owned(),
        hash,
        signature: String::new(),
        key_id: String::new(),
    }
}

fn rounds(n: u64) -> Vec<SealedRound> {
    let mut prev = GENESIS_HASH.to_owned();
    (1..=n)
        .map(|seq| {
            let r = round(seq, &prev);
            prev.clone_from(&r.hash);
            r
        })
        .collect()
}

fn lines(path: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<SealedRound>(l).unwrap().seq)
        .collect()
}

#[tokio::test]
async fn a_torn_last_line_is_truncated_and_the_round_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.jsonl");
    let all = rounds(3);
    let outbox = OutboxFile::open(&path).unwrap();
    for r in &all[..2] {
        outbox.append(r).await.unwrap();
    }
    drop(outbox);

    // The crash cut the third line half-way.
    let third = serde_json::to_string(&all[2]).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&third.as_bytes()[..third.len() / 2])
        .unwrap();
    drop(file);

    let outbox = OutboxFile::open(&path).unwrap();
    assert_eq!(outbox.last_seq(), 2);
    assert_eq!(lines(&path), [1, 2], "the torn line is gone");
    // The actor sends round 3 again: written once, after round 2.
    outbox.append(&all[2]).await.unwrap();
    outbox.append(&all[2]).await.unwrap();
    assert_eq!(lines(&path), [1, 2, 3]);

    // A whole line whose newline was not written yet is torn too (never acknowledged).
    let fourth = serde_json::to_string(&round(4, &all[2].hash)).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(fourth.as_bytes()).unwrap();
    drop(file);
    let outbox = OutboxFile::open(&path).unwrap();
    assert_eq!(outbox.last_seq(), 3);
    assert_eq!(lines(&path), [1, 2, 3]);
}

#[tokio::test]
async fn damage_before_the_last_line_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.jsonl");
    let all = rounds(3);
    let mut text: Vec<String> = all
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    text[1] = text[1][..20].to_owned();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = OutboxFile::open(&path).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(err.to_string().contains("not a sealed round"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "left untouched");

    // Rounds out of order are refused too.
    let swapped = [&all[0], &all[2], &all[1]]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect::<String>();
    std::fs::write(&path, swapped).unwrap();
    let err = OutboxFile::open(&path).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(err.to_string().contains("seq 3 after 1"), "{err}");
}

/// An `outbox.jsonl` of format version 1 (T01's lines of the golden records in
/// `crates/records/tests/golden/v1`) opens where it ended, and a round written after it
/// goes after its last line.
#[tokio::test]
async fn a_version_1_outbox_opens_and_goes_on() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../records/tests/golden/v1/rounds.jsonl");
    let t01: String = std::fs::read_to_string(golden)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"table\":\"T01\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.jsonl");
    std::fs::write(&path, &t01).unwrap();
    let outbox = OutboxFile::open(&path).unwrap();
    assert_eq!(outbox.last_seq(), 4);
    assert_eq!(lines(&path), [1, 2, 3, 4]);
    let last: SealedRound = serde_json::from_str(t01.lines().last().unwrap()).unwrap();
    outbox.append(&round(5, &last.hash)).await.unwrap();
    assert_eq!(lines(&path), [1, 2, 3, 4, 5]);
    assert!(std::fs::read_to_string(&path).unwrap().starts_with(&t01));
}
