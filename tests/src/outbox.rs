//! Reading a broadcaster's `outbox.jsonl` as an auditor would, and checking its hash chain
//! without the table's code: each line is `{"round":R,"seq":N,"prev_hash":P,"hash":H}`
//! where `H = SHA-256(32 bytes of P ‖ the bytes of R exactly as written)`, `P` of the
//! first line is 64 zeros and each `P` is the previous line's `H`.

use std::path::Path;
use std::time::Duration;

use banco_rules::{Card, Settlement};
use serde_json::Value;

use crate::model::Stakes;
use sha2::{Digest as _, Sha256};

/// The `prev_hash` of a table's first round.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One line of the outbox.
#[derive(Clone, Debug)]
pub struct SealedLine {
    pub seq: u64,
    pub prev_hash: String,
    pub hash: String,
    /// The finished round, parsed.
    pub round: Value,
    /// The finished round's JSON exactly as written (what the hash covers).
    pub round_json: String,
}

/// Every complete line of `path` (none if the file does not exist yet). A last line
/// without its newline is being written by the broadcaster right now (the file is read
/// while it runs): it is left for the next read, as the outbox itself would truncate it
/// after a crash.
pub fn read(path: &Path) -> Vec<SealedLine> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, line)| parse_line(line).unwrap_or_else(|e| panic!("outbox line {}: {e}", n + 1)))
        .collect()
}

/// Waits until the outbox holds at least `rounds` lines (delivery runs behind the table).
pub async fn wait_for(path: &Path, rounds: usize, timeout: Duration) -> Vec<SealedLine> {
    crate::poll(
        timeout,
        Duration::from_millis(50),
        async || read(path),
        |lines| lines.len() >= rounds,
    )
    .await
}

fn parse_line(line: &str) -> Result<SealedLine, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let body = line
        .strip_prefix("{\"round\":")
        .ok_or("does not start with the round")?;
    let end = body.rfind(",\"seq\":").ok_or("no seq after the round")?;
    let round_json = body[..end].to_owned();
    let field = |name: &str| {
        value
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(format!("no {name}"))
    };
    Ok(SealedLine {
        seq: value.get("seq").and_then(Value::as_u64).ok_or("no seq")?,
        prev_hash: field("prev_hash")?,
        hash: field("hash")?,
        round: value.get("round").cloned().ok_or("no round")?,
        round_json,
    })
}

/// Hex SHA-256 of the previous hash's 32 bytes followed by the round's JSON.
pub fn link_hash(prev_hash: &str, round_json: &str) -> Result<String, String> {
    if prev_hash.len() != 64 {
        return Err(format!("prev_hash `{prev_hash}` is not 64 hex digits"));
    }
    let mut prev = [0u8; 32];
    for (i, byte) in prev.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&prev_hash[2 * i..2 * i + 2], 16)
            .map_err(|e| format!("prev_hash `{prev_hash}`: {e}"))?;
    }
    let mut digest = Sha256::new();
    digest.update(prev);
    digest.update(round_json.as_bytes());
    Ok(banco_records::hex::to_hex(&digest.finalize()))
}

/// The chain: seq 1, 2, 3, … without gaps; each prev_hash the previous hash (genesis
/// first); each hash recomputed.
pub fn verify_chain(lines: &[SealedLine]) -> Result<(), String> {
    let mut prev = GENESIS.to_owned();
    for (i, line) in lines.iter().enumerate() {
        let want_seq = i as u64 + 1;
        if line.seq != want_seq {
            return Err(format!(
                "line {}: seq {} (expected {want_seq})",
                i + 1,
                line.seq
            ));
        }
        if line.prev_hash != prev {
            return Err(format!(
                "seq {}: prev_hash {} does not continue {prev}",
                line.seq, line.prev_hash
            ));
        }
        let hash = link_hash(&line.prev_hash, &line.round_json)?;
        if hash != line.hash {
            return Err(format!(
                "seq {}: hash {} but the round hashes to {hash}",
                line.seq, line.hash
            ));
        }
        prev.clone_from(&line.hash);
    }
    Ok(())
}

/// What a test compares of a finished round.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub round_id: String,
    /// In dealing order.
    pub cards: Vec<Card>,
    pub bets: std::collections::BTreeMap<String, Stakes>,
    pub settlements: std::collections::BTreeMap<String, Vec<Settlement>>,
    pub voided: bool,
}

impl SealedLine {
    pub fn recorded(&self) -> Recorded {
        let round = &self.round;
        let seq = self.seq;
        fn what<T>(seq: u64) -> impl FnOnce(serde_json::Error) -> T {
            move |e| panic!("seq {seq}: {e}")
        }
        let cards = round["cards"]
            .as_array()
            .unwrap_or_else(|| panic!("seq {}: no cards", self.seq))
            .iter()
            .map(|c| serde_json::from_value::<Card>(c["card"].clone()).unwrap_or_else(what(seq)))
            .collect();
        Recorded {
            round_id: round["round_id"].as_str().unwrap_or_default().to_owned(),
            cards,
            bets: serde_json::from_value(round["bets"].clone()).unwrap_or_else(what(seq)),
            settlements: serde_json::from_value(round["settlements"].clone())
                .unwrap_or_else(what(seq)),
            voided: !round["void"].is_null(),
        }
    }
}
