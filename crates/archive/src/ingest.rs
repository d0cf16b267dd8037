//! Append's checks before anything is stored: the record is the table's own round
//! (parsed, fields agree), its hash is right, and a trusted table key signed it.

use std::collections::BTreeMap;
use std::sync::Arc;

use banco_records::chain::{ClipFacts, SealedRound, clip_statement, verify_clip_seal};
use banco_wire::pb;
use ed25519_dalek::VerifyingKey;

use crate::error::ArchiveError;
use crate::record::{bet_rows, parse_table_record, round_row};
use crate::store::{Appended, ClipOf, OwnedRound, Store};
use banco_records::hex::to_hex;

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

    /// The trusted key `key_id` names.
    pub fn key(&self, key_id: &str) -> Option<&VerifyingKey> {
        self.keys.get(key_id)
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

impl TrustedKeys {
    /// The table's seal of what `record` says of its clip (`clip`), hex, checked under the
    /// key that signed the round; refuses a signed round's clip without one. With no
    /// trusted key a seal is kept unchecked.
    pub fn check_clip_seal(
        &self,
        sealed: &SealedRound,
        record: &pb::RoundRecord,
        clip: &ClipOf,
    ) -> Result<Option<String>, ArchiveError> {
        let bad = |why: String| ArchiveError::BadRecord {
            field: "record.clip_signature".to_owned(),
            why,
        };
        let given = &record.clip_signature;
        if matches!(clip, ClipOf::Unsaid) {
            if given.is_empty() {
                return Ok(None);
            }
            return Err(bad(
                "set without `clip` or `clip_missing`: there is nothing it seals".to_owned(),
            ));
        }
        if given.is_empty() {
            if self.is_empty() {
                return Ok(None);
            }
            return Err(bad(format!(
                "missing: round {} is signed, and what it says of its clip must be sealed by \
                 the same table key",
                record.round_id
            )));
        }
        if given.len() != 64 {
            return Err(bad(format!(
                "{} bytes: an Ed25519 signature has 64",
                given.len()
            )));
        }
        let seal = to_hex(given);
        if let Some(key) = self.keys.get(&sealed.key_id) {
            verify_clip_seal(
                &clip_statement_of(&record.round_id, &sealed.hash, clip),
                &seal,
                key,
            )
            .map_err(|why| bad(format!("round {}: {why}", record.round_id)))?;
        } else if !self.is_empty() {
            return Err(ArchiveError::UnknownKey {
                round_id: record.round_id.clone(),
                key_id: sealed.key_id.clone(),
            });
        }
        Ok(Some(seal))
    }
}

/// The statement a table seals of a round's clip (`banco_records::chain::clip_statement`),
/// from what the archive stores of it.
pub fn clip_statement_of(round_id: &str, round_hash: &str, clip: &ClipOf) -> Vec<u8> {
    let facts = match clip {
        ClipOf::Clip(clip) => ClipFacts::Clip {
            sha256: &clip.sha256,
            size_bytes: u64::try_from(clip.size_bytes).unwrap_or(0),
        },
        ClipOf::Missing(missing) => ClipFacts::Missing {
            reason: &missing.reason,
        },
        ClipOf::Unsaid => ClipFacts::Missing { reason: "" },
    };
    clip_statement(round_id, round_hash, facts)
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

/// Recomputes the hash of `sealed` from its prev_hash and the bytes received; refuses a
/// mismatch.
pub fn check_hash(sealed: &SealedRound, table_record: &[u8]) -> Result<(), ArchiveError> {
    let computed = SealedRound::hash_encoded(&sealed.prev_hash, table_record).map_err(|why| {
        ArchiveError::BadRecord {
            field: "record.prev_hash".to_owned(),
            why,
        }
    })?;
    if computed != sealed.hash {
        return Err(ArchiveError::HashMismatch {
            round_id: sealed.round.round_id.to_string(),
            given: sealed.hash.clone(),
            computed,
        });
    }
    Ok(())
}

/// Refuses bytes that parse to the round but are not the table's canonical encoding of
/// it: they would hash differently from what the table hashed, and two encodings of one
/// round must not both be storable. Needed only for records no trusted key signed: a
/// valid signature already shows that the bytes are the table's own (it signs the hash
/// of its canonical encoding and nothing else), and re-encoding a 6 kB round is about a
/// fifth of the checks. Verify re-encodes every stored record all the same.
pub fn check_canonical(sealed: &SealedRound, table_record: &[u8]) -> Result<(), ArchiveError> {
    let canonical = serde_json::to_vec(&sealed.round).unwrap_or_default();
    if canonical != table_record {
        return Err(ArchiveError::BadRecord {
            field: "record.table_record".to_owned(),
            why: format!(
                "round {}: not the table's canonical encoding of the round",
                sealed.round.round_id
            ),
        });
    }
    Ok(())
}

/// Every check of the record itself (fields, hash, signature), and the rows to store:
/// what [`append`] does before the store's group commit. Pure CPU, no I/O.
pub fn checked(keys: &TrustedKeys, record: &pb::RoundRecord) -> Result<OwnedRound, ArchiveError> {
    checked_with(record, Signature::Now(keys))
}

/// How [`checked_with`] makes sure the bytes are the table's own.
#[derive(Clone, Copy)]
enum Signature<'a> {
    /// By the signature under these keys; with none, by the canonical encoding.
    Now(&'a TrustedKeys),
    /// The caller verifies the round's signature afterwards, under these keys (which
    /// check the clip's seal now).
    Later(&'a TrustedKeys),
}

fn checked_with(
    record: &pb::RoundRecord,
    signature: Signature<'_>,
) -> Result<OwnedRound, ArchiveError> {
    let sealed = sealed_from_pb(record)?;
    check_hash(&sealed, &record.table_record)?;
    let keys = match signature {
        Signature::Now(keys) if keys.is_empty() => {
            check_canonical(&sealed, &record.table_record)?;
            keys
        }
        Signature::Now(keys) => {
            keys.check(&sealed)?;
            keys
        }
        Signature::Later(keys) => keys,
    };
    let chain_seq = i64::try_from(sealed.seq).map_err(|_| ArchiveError::BadRecord {
        field: "record.chain_seq".to_owned(),
        why: format!("{} is too large", sealed.seq),
    })?;
    let row = round_row(&sealed.round);
    let bets = bet_rows(&sealed.round);
    let export = crate::export::lines_of(&row, &bets, sealed.seq, &sealed.hash);
    let clip = crate::clips::clip_of(record)?;
    let clip_seal = keys.check_clip_seal(&sealed, record, &clip)?;
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
        clip,
        clip_seal,
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

/// Records one AppendBatch takes at most.
pub const MAX_BATCH_RECORDS: usize = 1000;

/// [`append`] of several records, in order, in one transaction: the checks of every
/// record first, spread over the cores; any record failing them refuses the whole batch
/// (its error names it) and nothing is stored. Then an answer for each, in order.
pub async fn append_batch(
    store: &Store,
    keys: &Arc<TrustedKeys>,
    records: Vec<pb::RoundRecord>,
) -> Result<Vec<Appended>, ArchiveError> {
    if records.len() > MAX_BATCH_RECORDS {
        return Err(ArchiveError::BadRecord {
            field: "records".to_owned(),
            why: format!(
                "{} records; a batch holds at most {MAX_BATCH_RECORDS}",
                records.len()
            ),
        });
    }
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    let per_worker = records.len().div_ceil(workers).max(1);
    let records = Arc::new(records);
    let mut checking = Vec::new();
    for start in (0..records.len()).step_by(per_worker) {
        let (keys, records) = (Arc::clone(keys), Arc::clone(&records));
        checking.push(tokio::task::spawn_blocking(move || {
            let part = start..(start + per_worker).min(records.len());
            check_part(&keys, &records, part)
        }));
    }
    let mut rounds = Vec::with_capacity(records.len());
    for part in checking {
        let part = part
            .await
            .map_err(|e| ArchiveError::Corrupt(format!("a check task failed: {e}")))??;
        rounds.extend(part);
    }
    store.append_many(rounds).await
}

/// [`checked`] of `records[part]`, the signatures verified together (about twice as fast
/// as one by one); when that fails, one by one, to name the first bad record.
fn check_part(
    keys: &TrustedKeys,
    records: &[pb::RoundRecord],
    part: std::ops::Range<usize>,
) -> Result<Vec<OwnedRound>, ArchiveError> {
    let in_batch = |index: usize| {
        move |source: ArchiveError| ArchiveError::InBatch {
            index,
            round_id: records[index].round_id.clone(),
            source: Box::new(source),
        }
    };
    let one_by_one = || {
        part.clone()
            .map(|index| checked(keys, &records[index]).map_err(in_batch(index)))
            .collect::<Result<Vec<_>, _>>()
    };
    if keys.is_empty() {
        return one_by_one();
    }
    let rounds = part
        .clone()
        .map(|index| checked_with(&records[index], Signature::Later(keys)).map_err(in_batch(index)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut messages = Vec::with_capacity(rounds.len());
    let mut signatures = Vec::with_capacity(rounds.len());
    let mut verifying = Vec::with_capacity(rounds.len());
    for record in &records[part.clone()] {
        let signature = <[u8; 64]>::try_from(record.signature.as_slice()).ok();
        match (signature, keys.keys.get(&record.key_id)) {
            (Some(signature), Some(key)) => {
                messages.push(record.hash.as_slice());
                signatures.push(ed25519_dalek::Signature::from_bytes(&signature));
                verifying.push(*key);
            }
            // Unsigned, or an unknown key: the one-by-one checks name it.
            _ => return one_by_one(),
        }
    }
    match ed25519_dalek::verify_batch(&messages, &signatures, &verifying) {
        Ok(()) => Ok(rounds),
        Err(_) => one_by_one(),
    }
}
