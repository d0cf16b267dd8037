//! The table's hash chain and what it signs: each finished round sealed into the chain
//! (its hash over the previous one and the round's canonical record), the seal of a
//! round's clip, and checkpoints of the chain's head. Each signed statement's bytes are
//! written out in its doc, and `archive.proto` states them for clients in other languages.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::hex::{to_hex as hex, unhex_n};
use crate::round::FinishedRound;

fn unhex(text: &str) -> Result<[u8; 32], String> {
    unhex_n(text)
}

/// The `prev_hash` of a table's first round.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A finished round with its place in the table's hash chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedRound {
    pub round: FinishedRound,
    /// 1, 2, 3, … per table, without gaps.
    pub seq: u64,
    /// Hex SHA-256 of the previous round ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// Hex SHA-256 over the 32 bytes of `prev_hash` followed by the canonical JSON of
    /// `round` (serde_json of [`FinishedRound`]: fields in declaration order, maps sorted).
    pub hash: String,
    /// Hex Ed25519 signature of the 32 bytes of `hash` by the table's key; empty when the
    /// table has no key (tests, demos without an archive).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// The id of the key that signed (`banco_auth::key_id` of its public key).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_id: String,
}

/// The table's signing key: it signs the hash of every round it seals, so that the chain
/// an auditor checks is the table's own, end to end.
#[derive(Clone)]
pub struct TableSigner {
    key: ed25519_dalek::SigningKey,
    key_id: String,
}

impl std::fmt::Debug for TableSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSigner")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl TableSigner {
    pub fn new(key: ed25519_dalek::SigningKey) -> TableSigner {
        let key_id = banco_auth::key_id(&key.verifying_key());
        TableSigner { key, key_id }
    }

    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    fn sign(&self, hash: &str) -> Result<String, String> {
        use ed25519_dalek::Signer as _;
        Ok(hex(&self.key.sign(&unhex(hash)?).to_bytes()))
    }

    /// The table's seal of what a round's clip is ([`clip_statement`]): its Ed25519
    /// signature of the statement's SHA-256, in hex.
    pub fn seal_clip(&self, statement: &[u8]) -> String {
        use ed25519_dalek::Signer as _;
        hex(&self.key.sign(&Sha256::digest(statement)).to_bytes())
    }

    /// Signs that table `table`'s chain ended at round `chain_seq`, of hash `head_hash`,
    /// at `at` (unix ms).
    pub fn checkpoint(&self, table: &str, chain_seq: u64, head_hash: &str, at: u64) -> Checkpoint {
        use ed25519_dalek::Signer as _;
        let statement = Checkpoint::statement(table, chain_seq, head_hash, at);
        Checkpoint {
            table: table.to_owned(),
            chain_seq,
            head_hash: head_hash.to_owned(),
            at,
            signature: hex(&self.key.sign(&Sha256::digest(statement)).to_bytes()),
            key_id: self.key_id.clone(),
        }
    }
}

/// A table's signed word of where its chain stood: its last round (`chain_seq`, 0 before
/// the first) and that round's hash, at an instant. The archive keeps the newest one, and
/// an auditor may keep their own copy (the table writes the newest to a file beside its
/// outbox): an archive whose chain stops short of a checkpoint has lost rounds, even if
/// every record left is intact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub table: String,
    pub chain_seq: u64,
    /// Lowercase hex; [`GENESIS_HASH`] at `chain_seq` 0.
    pub head_hash: String,
    /// Unix milliseconds.
    pub at: u64,
    /// Ed25519 of the SHA-256 of [`Checkpoint::statement`], hex.
    pub signature: String,
    pub key_id: String,
}

impl Checkpoint {
    /// What a checkpoint signs:
    /// `banco-head-v1\n<table>\n<chain_seq>\n<head hash>\n<at, unix ms>\n`.
    pub fn statement(table: &str, chain_seq: u64, head_hash: &str, at: u64) -> Vec<u8> {
        format!("banco-head-v1\n{table}\n{chain_seq}\n{head_hash}\n{at}\n").into_bytes()
    }

    /// Checks the signature against the table's public `key`.
    pub fn verify(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), String> {
        let bytes: [u8; 64] =
            unhex_n(&self.signature).map_err(|e| format!("checkpoint signature: {e}"))?;
        let statement =
            Checkpoint::statement(&self.table, self.chain_seq, &self.head_hash, self.at);
        key.verify_strict(
            &Sha256::digest(statement),
            &ed25519_dalek::Signature::from_bytes(&bytes),
        )
        .map_err(|_| {
            format!(
                "the checkpoint of table {} at round {} is not signed by key {}",
                self.table, self.chain_seq, self.key_id
            )
        })
    }

    /// Reads a checkpoint file as the outbox writes it.
    pub fn read(path: &Path) -> Result<Checkpoint, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a table checkpoint: {e}", path.display()))
    }
}

/// What a table seals of a round's video.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClipFacts<'a> {
    /// The clip file: its SHA-256 in lowercase hex and its size.
    Clip { sha256: &'a str, size_bytes: u64 },
    /// No clip, and why (`no_video`, `recorder_failed`, …: archive.proto's
    /// ClipMissingReason without its prefix, in lower case).
    Missing { reason: &'a str },
}

/// The bytes a table seals to bind a round's clip (or its absence) to the round: the
/// clip is finished after the round is sealed, so it cannot be in the round's own
/// record; this statement names the round's hash instead, so it is chained after it.
///
/// ```text
/// banco-clip-v1\n<round id>\n<round hash, lowercase hex>\nclip <sha256 hex> <size>\n
/// banco-clip-v1\n<round id>\n<round hash, lowercase hex>\nmissing <reason>\n
/// ```
pub fn clip_statement(round_id: &str, round_hash: &str, facts: ClipFacts<'_>) -> Vec<u8> {
    let last = match facts {
        ClipFacts::Clip { sha256, size_bytes } => format!("clip {sha256} {size_bytes}"),
        ClipFacts::Missing { reason } => format!("missing {reason}"),
    };
    format!("banco-clip-v1\n{round_id}\n{round_hash}\n{last}\n").into_bytes()
}

/// Checks a clip seal (hex) over `statement` against the table's public `key`.
pub fn verify_clip_seal(
    statement: &[u8],
    seal: &str,
    key: &ed25519_dalek::VerifyingKey,
) -> Result<(), String> {
    let bytes: [u8; 64] = unhex_n(seal).map_err(|e| format!("clip seal: {e}"))?;
    key.verify_strict(
        &Sha256::digest(statement),
        &ed25519_dalek::Signature::from_bytes(&bytes),
    )
    .map_err(|_| "the clip seal does not match what the record says of the clip".to_owned())
}

impl SealedRound {
    /// Checks `signature` against `key`: the table that holds its private half sealed this
    /// round with this hash.
    pub fn verify_signature(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), String> {
        let bytes: [u8; 64] = unhex_n(&self.signature)
            .map_err(|e| format!("round {}: signature: {e}", self.round.round_id))?;
        let hash = unhex(&self.hash)?;
        key.verify_strict(&hash, &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| {
                format!(
                    "round {}: the signature does not match its hash",
                    self.round.round_id
                )
            })
    }

    /// Recomputes the hash from `prev_hash` and `round` (for checks by receivers).
    pub fn compute_hash(prev_hash: &str, round: &FinishedRound) -> Result<String, String> {
        let json = serde_json::to_vec(round)
            .map_err(|e| format!("round {}: cannot encode: {e}", round.round_id))?;
        SealedRound::hash_encoded(prev_hash, &json)
    }

    /// The hash of a round already in its canonical encoding `json` (what
    /// [`SealedRound::compute_hash`] hashes), without encoding it again.
    pub fn hash_encoded(prev_hash: &str, json: &[u8]) -> Result<String, String> {
        let prev = unhex(prev_hash)?;
        let mut digest = Sha256::new();
        digest.update(prev);
        digest.update(json);
        Ok(hex(&digest.finalize()))
    }
}

/// The head of a table's chain: what the next sealed round continues. The actor keeps
/// one per table; tests and benchmarks use it to seal rounds exactly as a table does.
#[derive(Clone, Debug)]
pub struct Chain {
    last_seq: u64,
    last_hash: String,
    signer: Option<Arc<TableSigner>>,
}

impl Chain {
    /// An empty chain whose rounds `signer` signs (if any).
    pub fn new(signer: Option<Arc<TableSigner>>) -> Chain {
        Chain {
            last_seq: 0,
            last_hash: GENESIS_HASH.to_owned(),
            signer,
        }
    }

    /// Rounds sealed so far.
    pub const fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The hash of the last round sealed ([`GENESIS_HASH`] before the first).
    pub fn last_hash(&self) -> &str {
        &self.last_hash
    }

    /// Seals `round` as the next link. Changes nothing on error.
    pub fn seal(&mut self, round: FinishedRound) -> Result<SealedRound, String> {
        let hash = SealedRound::compute_hash(&self.last_hash, &round)?;
        let (signature, key_id) = match &self.signer {
            Some(signer) => (signer.sign(&hash)?, signer.key_id().to_owned()),
            None => (String::new(), String::new()),
        };
        let sealed = SealedRound {
            round,
            seq: self.last_seq + 1,
            prev_hash: std::mem::replace(&mut self.last_hash, hash.clone()),
            hash,
            signature,
            key_id,
        };
        self.last_seq = sealed.seq;
        Ok(sealed)
    }
}
