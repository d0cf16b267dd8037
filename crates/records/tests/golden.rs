//! Records of version 1 as the archive reads them, without the table: each line of
//! `golden/v1/rounds.jsonl` (written by the table, see `crates/table/tests/golden.rs`)
//! parses, encodes back to the very bytes (so its hash is over what this version would
//! write), hashes to its stored hash, chains to the line before it of its table, and
//! carries the table's signature; the checkpoint verifies and names the last round.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use banco_records::chain::{Checkpoint, GENESIS_HASH, SealedRound};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/v1")
        .join(name)
}

#[test]
fn version_1_records_read_encode_hash_and_verify_byte_for_byte() {
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
        assert!(fields.contains(field), "no golden record has `{field}`");
    }
    let checkpoint = Checkpoint::read(&golden("T01.checkpoint.json")).unwrap();
    checkpoint.verify(&key).unwrap();
    let (seq, hash) = &heads["T01"];
    assert_eq!((checkpoint.chain_seq, &checkpoint.head_hash), (*seq, hash));
}
