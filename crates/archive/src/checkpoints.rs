//! Table checkpoints: a table's signed word of where its chain stands (see
//! `TableCheckpoint` in archive.proto and `banco_records::chain::Checkpoint`). PutCheckpoint
//! keeps the newest of each table; Verify checks that the chain reaches it, and reaches
//! any head an auditor brings from outside the archive.

use banco_records::chain::{Checkpoint, GENESIS_HASH};
use banco_wire::pb;

use crate::error::ArchiveError;
use banco_records::hex::to_hex;

use crate::hexbytes::hex_to_bytes_lossy;
use crate::ingest::TrustedKeys;
use crate::store::{CheckpointRow, Store};

/// A wire checkpoint read strictly; `field` names it in errors. `signed`: a signature is
/// required (else an empty one is the auditor's own word).
pub fn from_pb(
    checkpoint: &pb::TableCheckpoint,
    field: &str,
    signed: bool,
) -> Result<Checkpoint, ArchiveError> {
    let bad = |name: &str, why: String| ArchiveError::bad_request(&format!("{field}.{name}"), why);
    if checkpoint.table_id.is_empty() {
        return Err(bad("table_id", "empty".to_owned()));
    }
    if i64::try_from(checkpoint.chain_seq).is_err() {
        return Err(bad(
            "chain_seq",
            format!("{} is too large", checkpoint.chain_seq),
        ));
    }
    if checkpoint.head_hash.len() != 32 {
        return Err(bad(
            "head_hash",
            format!("{} bytes: a SHA-256 has 32", checkpoint.head_hash.len()),
        ));
    }
    match checkpoint.signature.len() {
        64 => {}
        0 if !signed => {}
        n => {
            return Err(bad(
                "signature",
                format!("{n} bytes: an Ed25519 signature has 64"),
            ));
        }
    }
    if i64::try_from(checkpoint.at_unix_ms).is_err() {
        return Err(bad(
            "at_unix_ms",
            format!("{} is too large", checkpoint.at_unix_ms),
        ));
    }
    Ok(Checkpoint {
        table: checkpoint.table_id.clone(),
        chain_seq: checkpoint.chain_seq,
        head_hash: to_hex(&checkpoint.head_hash),
        at: checkpoint.at_unix_ms,
        signature: to_hex(&checkpoint.signature),
        key_id: checkpoint.key_id.clone(),
    })
}

pub fn to_pb(checkpoint: &Checkpoint) -> pb::TableCheckpoint {
    pb::TableCheckpoint {
        table_id: checkpoint.table.clone(),
        chain_seq: checkpoint.chain_seq,
        head_hash: hex_to_bytes_lossy(&checkpoint.head_hash),
        at_unix_ms: checkpoint.at,
        signature: hex_to_bytes_lossy(&checkpoint.signature),
        key_id: checkpoint.key_id.clone(),
    }
}

fn to_row(checkpoint: &Checkpoint) -> CheckpointRow {
    CheckpointRow {
        table_id: checkpoint.table.clone(),
        chain_seq: i64::try_from(checkpoint.chain_seq).unwrap_or(i64::MAX),
        head_hash: checkpoint.head_hash.clone(),
        at_ms: i64::try_from(checkpoint.at).unwrap_or(i64::MAX),
        signature: checkpoint.signature.clone(),
        key_id: checkpoint.key_id.clone(),
    }
}

pub fn from_row(row: &CheckpointRow) -> Checkpoint {
    Checkpoint {
        table: row.table_id.clone(),
        chain_seq: u64::try_from(row.chain_seq).unwrap_or(0),
        head_hash: row.head_hash.clone(),
        at: u64::try_from(row.at_ms).unwrap_or(0),
        signature: row.signature.clone(),
        key_id: row.key_id.clone(),
    }
}

/// Checks a signed checkpoint under the trusted keys (none trusted: not checked).
pub fn check_signature(keys: &TrustedKeys, checkpoint: &Checkpoint) -> Result<(), ArchiveError> {
    if keys.is_empty() {
        return Ok(());
    }
    let key = keys.key(&checkpoint.key_id).ok_or_else(|| {
        ArchiveError::BadCheckpoint(format!(
            "the checkpoint of table {} is signed by key `{}`, which this archive does not trust",
            checkpoint.table, checkpoint.key_id
        ))
    })?;
    checkpoint.verify(key).map_err(ArchiveError::BadCheckpoint)
}

/// Where `checkpoint`'s round stands in the stored chain: `None` when the chain reaches it
/// with that hash, else what is wrong.
pub async fn mismatch(
    store: &Store,
    checkpoint: &Checkpoint,
) -> Result<Option<String>, ArchiveError> {
    if checkpoint.chain_seq == 0 {
        return Ok((checkpoint.head_hash != GENESIS_HASH)
            .then(|| "at round 0 the head is the all-zero hash".to_owned()));
    }
    let seq = i64::try_from(checkpoint.chain_seq).unwrap_or(i64::MAX);
    Ok(match store.hash_at(&checkpoint.table, seq).await? {
        Some(hash) if hash == checkpoint.head_hash => None,
        Some(hash) => Some(format!(
            "round {seq} of table {} is stored with hash {hash}, not {}",
            checkpoint.table, checkpoint.head_hash
        )),
        None => Some(format!(
            "round {seq} of table {} (hash {}) is not in the archive",
            checkpoint.table, checkpoint.head_hash
        )),
    })
}

/// PutCheckpoint: checks the signature and that the archive holds the round with that
/// hash, then keeps it if it is the newest of its table.
pub async fn put(
    store: &Store,
    keys: &TrustedKeys,
    checkpoint: &pb::TableCheckpoint,
) -> Result<bool, ArchiveError> {
    let checkpoint = from_pb(checkpoint, "checkpoint", true)?;
    check_signature(keys, &checkpoint)?;
    if let Some(why) = mismatch(store, &checkpoint).await? {
        return Err(ArchiveError::NotInChain(format!(
            "checkpoint of table {} at round {} refused: {why}",
            checkpoint.table, checkpoint.chain_seq
        )));
    }
    store.put_checkpoint(&to_row(&checkpoint)).await
}
