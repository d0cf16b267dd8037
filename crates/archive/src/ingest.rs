//! Append's checks before anything is stored: the record is the table's own round
//! (parsed, fields agree), its hash is right, and a trusted table key signed it.

use std::collections::BTreeMap;

use banco_table::actor::SealedRound;
use banco_wire::pb;
use ed25519_dalek::VerifyingKey;

use crate::error::ArchiveError;
use crate::hexbytes::to_hex;
use crate::record::{bet_rows, parse_table_record, round_row};
use crate::store::{Appended, OwnedRound, Store};

/// The table public keys this archive trusts, by key id. Empty: unsigned records are
/// accepted (and signatures are not checked).
#[derive(Clone, Debug, Default)]
pub struct TrustedKeys {
    keys: BTreeMap<String, VerifyingKey>,
}

impl TrustedKeys {
    pub fn new(keys: impl IntoIterator<Item = VerifyingKey>) -> TrustedKeys {
        TrustedKeys {
            keys: keys
                .into_iter()
                .map(|k| (banco_auth::key_id(&k), k))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks the signature of `sealed` under the key it names. With no trusted key, an
    /// unsigned record passes; a signed one is not checked (there is nothing to check it
    /// against).
    pub fn check(&self, sealed: &SealedRound) -> Result<(), ArchiveError> {
        let round_id = sealed.round.round_id.to_string();
        if self.keys.is_empty() {
            return Ok(());
        }
        if sealed.signature.is_empty() {
            return Err(ArchiveError::BadSignature {
                round_id,
                why: "the record is unsigned and this archive requires table signatures".to_owned(),
            });
        }
        let key = self
            .keys
            .get(&sealed.key_id)
            .ok_or_else(|| ArchiveError::UnknownKey {
                round_id: round_id.clone(),
                key_id: sealed.key_id.clone(),
            })?;
        sealed
            .verify_signature(key)
            .map_err(|why| ArchiveError::BadSignature { round_id, why })
    }
}

/// A record as the table sealed it, from the wire; refuses what cannot be read.
pub fn sealed_from_pb(record: &pb::RoundRecord) -> Result<SealedRound, ArchiveError> {
    let round = parse_table_record(&record.table_record)?;
    let bad = |field: &str, why: String| ArchiveError::BadRecord {
        field: format!("record.{field}"),
        why,
    };
    if record.round_id != round.round_id.as_str() {
        return Err(bad(
            "round_id",
            format!(
                "`{}` but the table's record is round `{}`",
                record.round_id, round.round_id
            ),
        ));
    }
    if record.table_id != round.table {
        return Err(bad(
            "table_id",
            format!(
                "`{}` but the table's record is of table `{}`",
                record.table_id, round.table
            ),
        ));
    }
    if record.chain_seq == 0 {
        return Err(bad("chain_seq", "0: a chain starts at 1".to_owned()));
    }
    if record.prev_hash.len() != 32 {
        return Err(bad(
            "prev_hash",
            format!("{} bytes, expected 32", record.prev_hash.len()),
        ));
    }
    if record.hash.len() != 32 {
        return Err(bad(
            "hash",
            format!("{} bytes, expected 32", record.hash.len()),
        ));
    }
    if !record.signature.is_empty() && record.signature.len() != 64 {
        return Err(bad(
            "signature",
            format!("{} bytes, expected 64 (or none)", record.signature.len()),
        ));
    }
    Ok(SealedRound {
        round,
        seq: record.chain_seq,
        prev_hash: to_hex(&record.prev_hash),
        hash: to_hex(&record.hash),
        signature: to_hex(&record.signature),
        key_id: record.key_id.clone(),
    })
}

/// Recomputes the hash of `sealed` from its prev_hash and round; refuses a mismatch.
pub fn check_hash(sealed: &SealedRound, table_record: &[u8]) -> Result<(), ArchiveError> {
    let round_id = sealed.round.round_id.to_string();
    // The table hashes its canonical encoding; bytes that parse to the same round but
    // are not that encoding would hash differently, so they are refused here too. Once
    // they are shown canonical, the bytes themselves are hashed (no second encoding).
    let canonical = serde_json::to_vec(&sealed.round).unwrap_or_default();
    if canonical != table_record {
        return Err(ArchiveError::BadRecord {
            field: "record.table_record".to_owned(),
            why: format!("round {round_id}: not the table's canonical encoding of the round"),
        });
    }
    let computed = SealedRound::hash_encoded(&sealed.prev_hash, table_record).map_err(|why| {
        ArchiveError::BadRecord {
            field: "record.prev_hash".to_owned(),
            why,
        }
    })?;
    if computed != sealed.hash {
        return Err(ArchiveError::HashMismatch {
            round_id,
            given: sealed.hash.clone(),
            computed,
        });
    }
    Ok(())
}

/// Every check of the record itself (fields, hash, signature), and the rows to store:
/// what [`append`] does before the store's group commit. Pure CPU, no I/O.
pub fn checked(keys: &TrustedKeys, record: &pb::RoundRecord) -> Result<OwnedRound, ArchiveError> {
    let sealed = sealed_from_pb(record)?;
    check_hash(&sealed, &record.table_record)?;
    keys.check(&sealed)?;
    let chain_seq = i64::try_from(sealed.seq).map_err(|_| ArchiveError::BadRecord {
        field: "record.chain_seq".to_owned(),
        why: format!("{} is too large", sealed.seq),
    })?;
    let row = round_row(&sealed.round);
    let bets = bet_rows(&sealed.round);
    let export = crate::export::lines_of(&row, &bets, sealed.seq, &sealed.hash);
    Ok(OwnedRound {
        row,
        bets,
        chain_seq,
        prev_hash: sealed.prev_hash,
        hash: sealed.hash,
        signature: sealed.signature,
        key_id: sealed.key_id,
        table_record: crate::packed::pack(&record.table_record),
        export,
    })
}

/// Every check, then the store's group commit: answers once the transaction holding this
/// round has committed. The checks of the record itself ([`checked`]) run here,
/// concurrently for concurrent callers; the chain checks run in the commit.
pub async fn append(
    store: &Store,
    keys: &TrustedKeys,
    record: &pb::RoundRecord,
) -> Result<Appended, ArchiveError> {
    store.append_owned(checked(keys, record)?).await
}
