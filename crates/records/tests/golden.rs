//! The golden records of each journal format (`golden/v1`, `golden/v2`) as the archive
//! reads them, without the table: each line of `rounds.jsonl` (written by the table, see
//! `crates/table/tests/golden.rs`) parses, encodes back to the very bytes (so its hash is
//! over what this version would write), hashes to its stored hash, chains to the line
//! before it of its table, and carries the table's signature; the checkpoint verifies and
//! names the last round. Every record of the golden journals parses as a journal record
//! and encodes back to its very bytes, and each journal says its folder's format.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use banco_records::chain::{Checkpoint, GENESIS_HASH, SealedRound};
use banco_records::journal::{self, ConfigRecord, Entry, JOURNAL_FORMAT};

/// Every format that has golden files: each up to the one this version writes.
const FORMATS: [u32; 2] = [1, 2];

fn golden(format: u32, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/golden/v{format}"))
        .join(name)
}

#[test]
fn every_format_up_to_this_one_has_golden_files() {
    assert_eq!(FORMATS.last(), Some(&JOURNAL_FORMAT));
}

#[test]
fn golden_records_read_encode_hash_and_verify_byte_for_byte() {
    for format in FORMATS {
        records_read_encode_hash_and_verify(format);
    }
}

fn records_read_encode_hash_and_verify(format: u32) {
    let golden = |name| golden(format, name);
    let key = banco_auth::keys::signing_key_from_seed(&[42; 32]).verifying_key();
    let text = std::fs::read_to_string(golden("rounds.jsonl")).unwrap();
    let mut heads: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut fields = std::collections::BTreeSet::new();
    for (n, line) in text.lines().enumerate() {
        let sealed: SealedRound =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        assert_eq!(
            serde_json::to_string(&sealed).unwrap(),
            line,
            "line {}",
            n + 1
        );
        assert_eq!(
            SealedRound::compute_hash(&sealed.prev_hash, &sealed.round).unwrap(),
            sealed.hash,
            "line {}",
            n + 1
        );
        sealed.verify_signature(&key).unwrap();
        let (seq, prev) = heads
            .entry(sealed.round.table.clone())
            .or_insert((0, GENESIS_HASH.to_owned()));
        assert_eq!(
            (sealed.seq, &sealed.prev_hash),
            (*seq + 1, &*prev),
            "line {}",
            n + 1
        );
        *seq = sealed.seq;
        prev.clone_from(&sealed.hash);
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        fields.extend(value["round"].as_object().unwrap().keys().cloned());
    }
    // The fixtures hold every optional part of a record at least once.
    for field in [
        "corrections",
        "void",
        "shoe_opening",
        "revealed",
        "placements",
        "cut_card",
        "opened_by",
        "confirmed_by",
    ] {
        assert!(
            fields.contains(field),
            "no golden record of format {format} has `{field}`"
        );
    }
    let checkpoint = Checkpoint::read(&golden("T01.checkpoint.json")).unwrap();
    checkpoint.verify(&key).unwrap();
    let (seq, hash) = &heads["T01"];
    assert_eq!((checkpoint.chain_seq, &checkpoint.head_hash), (*seq, hash));
}

/// The payloads of a journal file, by seq: a 12-byte header (`BANCOJNL`, version 1 LE),
/// then frames of length (u32 LE), crc (u32 LE), seq (u64 LE) and payload, then perhaps
/// zeros written ahead (never a frame: its seq is at least 1). The checksums are the
/// table's to check (its golden test opens these files as journals).
fn journal_payloads(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    assert_eq!(&bytes[..8], b"BANCOJNL");
    assert_eq!(bytes[8..12], 1u32.to_le_bytes());
    let mut payloads = Vec::new();
    let end = bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1);
    let mut at = 12;
    while at < end {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let seq = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        payloads.push((seq, &bytes[at + 16..at + 16 + len]));
        at += 16 + len;
    }
    payloads
}

#[test]
fn golden_journals_read_and_encode_byte_for_byte() {
    for format in FORMATS {
        journals_read_and_encode(format);
    }
}

fn journals_read_and_encode(format: u32) {
    let mut commands = std::collections::BTreeSet::new();
    for table in ["T01", "T02"] {
        let bytes = std::fs::read(golden(format, &format!("{table}.journal"))).unwrap();
        let payloads = journal_payloads(&bytes);
        let seqs: Vec<u64> = payloads.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{table}");
        let (first, entries) = payloads.split_first().unwrap();
        let config: ConfigRecord =
            serde_json::from_slice(first.1).unwrap_or_else(|e| panic!("{table} record 1: {e}"));
        assert_eq!(config.format, format, "{table}");
        assert_eq!(config.table.table_id, table);
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&config).unwrap()).unwrap(),
            std::str::from_utf8(first.1).unwrap(),
            "{table} record 1 re-encodes to other bytes"
        );
        for (seq, payload) in entries {
            let entry: Entry = serde_json::from_slice(payload)
                .unwrap_or_else(|e| panic!("{table} record {seq}: {e}"));
            assert_eq!(
                String::from_utf8(serde_json::to_vec(&entry).unwrap()).unwrap(),
                std::str::from_utf8(payload).unwrap(),
                "{table} record {seq} re-encodes to other bytes"
            );
            let value: serde_json::Value = serde_json::from_slice(payload).unwrap();
            commands.insert(value["command"]["command"].as_str().unwrap().to_owned());
            let refused = |outcome: &journal::DebitOutcome| {
                matches!(outcome, journal::DebitOutcome::Refused { .. })
            };
            match &entry.command {
                journal::Command::WalletDebited { outcome, .. } if refused(outcome) => {
                    commands.insert("a refused debit".to_owned());
                }
                journal::Command::WalletDebitedMany { answers, .. }
                    if answers.iter().any(|a| refused(&a.outcome)) =>
                {
                    commands.insert("a refused debit".to_owned());
                }
                _ => {}
            }
            if entry.shuffle_key.is_some() {
                commands.insert("a shuffle key".to_owned());
            }
        }
    }
    // The fixtures hold each of these at least once.
    for command in [
        "open_shoe",
        "burn",
        "end_shoe",
        "open_betting",
        "close_betting",
        "deal",
        "deal_card",
        "undo_last_card",
        "confirm_result",
        "void_round",
        "place_bets",
        "clear_bets",
        // Format 1's script ran before the table journaled the wallet's answers together.
        if format == 1 {
            "wallet_debited"
        } else {
            "wallet_debited_many"
        },
        "wallet_acked",
        "wallet_changed",
        "a refused debit",
        "a shuffle key",
    ] {
        assert!(
            commands.contains(command),
            "no golden record of format {format} has {command}"
        );
    }
}
