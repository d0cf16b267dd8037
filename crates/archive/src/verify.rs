//! Verify: walk a table's chain from its first stored round, in chain order, and name the
//! first record that breaks it: a gap in `chain_seq` (a deleted round), a `prev_hash`
//! that is not the previous hash, a hash that is not the hash of the stored record, a
//! signature that does not match, an indexed column that disagrees with the record
//! (an edited row), or what Export writes for a round (kept rendered) that is not what the
//! record says, or is kept for a round that is not stored. Then Stats' aggregates
//! (`stats_totals`, and `stats_positions` when every table is verified) must be what the
//! records fold to: an edited figure there would be served by Stats while every record
//! stays intact.

use std::collections::HashMap;

use banco_records::chain::{Checkpoint, GENESIS_HASH, SealedRound, verify_clip_seal};
use banco_wire::pb;

use crate::checkpoints;
use crate::error::ArchiveError;
use crate::hexbytes::hex_to_bytes_lossy;
use crate::ingest::{TrustedKeys, clip_statement_of};
use crate::record::{bet_rows, parse_table_record, round_row};
use crate::store::aggregate::{Folded, first_difference};
use crate::store::{ClipOf, RoundFilterSql, Store, StoredClip, StoredRound};

/// Rounds read per query while walking.
const BATCH: u32 = 1000;

/// A table's walk so far.
#[derive(Debug)]
struct Walk {
    checked: u64,
    head: Option<(String, String)>,
    last_seq: i64,
}

fn bad(round_id: &str, problem: String, expected: &str, found: &str) -> pb::BadRecord {
    pb::BadRecord {
        round_id: round_id.to_owned(),
        problem,
        expected_hash: hex_to_bytes_lossy(expected),
        found_hash: hex_to_bytes_lossy(found),
    }
}

/// What Export keeps for a round: its round id, JSON line and CSV rows (packed).
type ExportKept = (String, Vec<u8>, Vec<u8>);

/// What is wrong with `stored`, the round after `walk`'s head, if anything.
fn check_one(
    walk: &Walk,
    stored: &StoredRound,
    stored_bets: &[crate::record::BetRow],
    export: Option<&ExportKept>,
    clip: Option<&StoredClip>,
    keys: &TrustedKeys,
) -> Option<pb::BadRecord> {
    let id = &stored.row.round_id;
    let seq = i64::try_from(stored.chain.chain_seq).unwrap_or(i64::MAX);
    let (prev_id, prev_hash) = walk
        .head
        .clone()
        .unwrap_or_else(|| ("(start of the chain)".to_owned(), GENESIS_HASH.to_owned()));
    if seq != walk.last_seq + 1 {
        return Some(bad(
            id,
            format!(
                "gap: chain_seq {seq} follows {} ({prev_id}); round(s) {} to {} are missing",
                walk.last_seq,
                walk.last_seq + 1,
                seq - 1
            ),
            &prev_hash,
            &stored.chain.prev_hash,
        ));
    }
    if stored.chain.prev_hash != prev_hash {
        return Some(bad(
            id,
            format!("prev_hash does not match {prev_id}"),
            &prev_hash,
            &stored.chain.prev_hash,
        ));
    }
    let record = match stored.table_record() {
        Ok(record) => record,
        Err(e) => return Some(bad(id, format!("table_record unreadable: {e}"), "", "")),
    };
    let round = match parse_table_record(&record) {
        Ok(round) => round,
        Err(e) => return Some(bad(id, format!("table_record unreadable: {e}"), "", "")),
    };
    // The stored bytes are hashed as they are, and must be the canonical encoding of the
    // round they parse to (so that the columns derived below describe what was hashed).
    let computed = match SealedRound::hash_encoded(&stored.chain.prev_hash, &record) {
        Ok(hash) => hash,
        Err(e) => return Some(bad(id, format!("hash cannot be computed: {e}"), "", "")),
    };
    let canonical = serde_json::to_vec(&round).unwrap_or_default();
    if computed != stored.chain.hash || canonical != record {
        return Some(bad(
            id,
            "hash mismatch".to_owned(),
            &computed,
            &stored.chain.hash,
        ));
    }
    let derived = round_row(&round);
    if derived != stored.row {
        return Some(bad(
            id,
            format!(
                "stored columns disagree with the table's record: {}",
                row_diff(&derived, &stored.row)
            ),
            &computed,
            &stored.chain.hash,
        ));
    }
    // Compared as sets: the store returns rows in its own order (positions by name), the
    // record in the rules' order.
    let by_key = |rows: &mut Vec<crate::record::BetRow>| {
        rows.sort_by(|a, b| (&a.player_id, &a.position).cmp(&(&b.player_id, &b.position)));
    };
    let record_bets = bet_rows(&round);
    let mut derived_bets = record_bets.clone();
    let mut stored_sorted = stored_bets.to_vec();
    by_key(&mut derived_bets);
    by_key(&mut stored_sorted);
    if derived_bets != stored_sorted {
        return Some(bad(
            id,
            "stored bets disagree with the table's record".to_owned(),
            &computed,
            &stored.chain.hash,
        ));
    }
    let (jsonl, csv) =
        crate::export::render(&derived, &record_bets, stored.chain.chain_seq, &computed);
    let kept_right = export.is_some_and(|(round_id, kept_jsonl, kept_csv)| {
        *round_id == stored.row.round_id
            && crate::packed::unpack(kept_jsonl, "").is_ok_and(|kept| kept == jsonl)
            && crate::packed::unpack(kept_csv, "").is_ok_and(|kept| kept == csv)
    });
    if !kept_right {
        return Some(bad(
            id,
            "what Export writes for this round disagrees with the table's record".to_owned(),
            &computed,
            &stored.chain.hash,
        ));
    }
    if !keys.is_empty() {
        let sealed = SealedRound {
            round,
            seq: stored.chain.chain_seq,
            prev_hash: stored.chain.prev_hash.clone(),
            hash: stored.chain.hash.clone(),
            signature: stored.chain.signature.clone(),
            key_id: stored.chain.key_id.clone(),
        };
        if let Err(e) = keys.check(&sealed) {
            let problem = match e {
                ArchiveError::UnknownKey { .. } => format!("unknown key id `{}`", sealed.key_id),
                other => format!("bad signature: {other}"),
            };
            return Some(bad(id, problem, &computed, &stored.chain.hash));
        }
        if let Some(problem) = clip.and_then(|clip| clip_problem(keys, &sealed, clip)) {
            return Some(bad(id, problem, &computed, &stored.chain.hash));
        }
    }
    None
}

/// What is wrong with the stored clip (or reason) of a signed round: not sealed by the
/// table, or not what the table sealed.
fn clip_problem(keys: &TrustedKeys, sealed: &SealedRound, stored: &StoredClip) -> Option<String> {
    let clip = match (&stored.clip, &stored.missing) {
        (Some(clip), _) => ClipOf::Clip(clip.clone()),
        (None, Some(missing)) => ClipOf::Missing(missing.clone()),
        (None, None) => return None,
    };
    let Some(seal) = &stored.seal else {
        return Some(
            "its clip (or why it has none) is not sealed by the table: archived before clips \
             were sealed, or the seal was removed; the clip could have been swapped unseen"
                .to_owned(),
        );
    };
    let key = keys.key(&sealed.key_id)?;
    let statement = clip_statement_of(sealed.round.round_id.as_str(), &sealed.hash, &clip);
    verify_clip_seal(&statement, seal, key)
        .err()
        .map(|why| format!("clip: {why} (what is stored: {})", clip_said(&clip)))
}

fn clip_said(clip: &ClipOf) -> String {
    match clip {
        ClipOf::Clip(clip) => format!("{} bytes, sha256 {}", clip.size_bytes, clip.sha256),
        ClipOf::Missing(missing) => format!("no clip: {}", missing.reason),
        ClipOf::Unsaid => "nothing".to_owned(),
    }
}

/// A round kept for Export between the previous stored round (`after`) and this one
/// (`seq`), that is not stored: its row was deleted and its rendering left behind.
fn orphan(kept: &HashMap<i64, ExportKept>, after: i64, seq: i64) -> Option<pb::BadRecord> {
    kept.iter()
        .filter(|(s, _)| **s > after && **s < seq)
        .min_by_key(|(s, _)| **s)
        .map(|(s, (round_id, _, _))| orphan_bad(round_id, *s))
}

fn orphan_bad(round_id: &str, seq: i64) -> pb::BadRecord {
    bad(
        round_id,
        format!("gap: chain_seq {seq} is kept for Export but its round is not stored"),
        "",
        "",
    )
}

/// The first column that differs, for the problem text.
fn row_diff(derived: &crate::record::RoundRow, stored: &crate::record::RoundRow) -> String {
    let d = format!("{derived:?}");
    let s = format!("{stored:?}");
    let dp: Vec<&str> = d.split(", ").collect();
    let sp: Vec<&str> = s.split(", ").collect();
    dp.iter()
        .zip(&sp)
        .find(|(a, b)| a != b)
        .map(|(a, b)| format!("record says {a}, row says {b}"))
        .unwrap_or_else(|| "rows differ".to_owned())
}

/// Walks one table's chain (or every table's, when `table_id` is empty, table by table).
pub async fn verify(
    store: &Store,
    keys: &TrustedKeys,
    table_id: &str,
) -> Result<pb::VerifyResponse, ArchiveError> {
    verify_with_heads(store, keys, table_id, &[]).await
}

/// [`verify`], then the heads: the newest checkpoint the archive keeps of each table
/// walked, and `given` (an auditor's, from outside the archive), which the chain must
/// each reach with the hash they name.
pub async fn verify_with_heads(
    store: &Store,
    keys: &TrustedKeys,
    table_id: &str,
    given: &[Checkpoint],
) -> Result<pb::VerifyResponse, ArchiveError> {
    let mut answer = walk_every_table(store, keys, table_id).await?;
    if !answer.ok {
        return Ok(answer);
    }
    let walked = if table_id.is_empty() {
        store.tables().await?
    } else {
        vec![table_id.to_owned()]
    };
    let mut heads = Vec::new();
    for table in &walked {
        if let Some(row) = store.checkpoint(table).await? {
            heads.push((
                checkpoints::from_row(&row),
                "the newest checkpoint the archive keeps",
            ));
        }
    }
    heads.extend(
        given
            .iter()
            .map(|head| (head.clone(), "the head given by the auditor")),
    );
    for (head, whose) in heads {
        let signed = !head.signature.is_empty();
        let problem = match checkpoints::check_signature(keys, &head) {
            Err(e) if signed => Some(e.to_string()),
            _ => checkpoints::mismatch(store, &head).await?,
        };
        if let Some(problem) = problem {
            answer.ok = false;
            answer.first_bad = Some(bad(
                "",
                format!(
                    "table {}: {whose} ({}, round {} at {}) is not in the chain: {problem}; \
                     rounds were removed from the archive, or never reached it",
                    head.table,
                    if signed {
                        "signed by the table"
                    } else {
                        "unsigned"
                    },
                    head.chain_seq,
                    crate::record::timestamp(head.at),
                ),
                &head.head_hash,
                "",
            ));
            return Ok(answer);
        }
        answer.heads_checked.push(checkpoints::to_pb(&head));
    }
    Ok(answer)
}

/// Walks one table's chain (or every table's, when `table_id` is empty, table by table).
async fn walk_every_table(
    store: &Store,
    keys: &TrustedKeys,
    table_id: &str,
) -> Result<pb::VerifyResponse, ArchiveError> {
    let every_table = table_id.is_empty();
    // The aggregates and each table's head in one snapshot, first: the walk stops at these
    // heads, so that rounds appended meanwhile are neither walked nor folded.
    let (stored, heads) = store
        .stored_aggregates((!every_table).then_some(table_id))
        .await?;
    let mut tables: Vec<String> = heads.keys().cloned().collect();
    tables.sort();
    let mut checked = 0;
    let mut clip_seals = 0;
    let mut head = None;
    // What the verified records fold to, compared with the stored aggregates at the end.
    let mut folded = Folded::default();
    for table in tables {
        let mut filter = RoundFilterSql::default();
        filter.table(&table);
        let mut walk = Walk {
            checked: 0,
            head: None,
            last_seq: 0,
        };
        let bound = heads.get(&table).copied().unwrap_or(0);
        while walk.last_seq < bound {
            let after = walk.head.as_ref().map(|_| (table.as_str(), walk.last_seq));
            let mut batch = store.rounds_in_chain_order(&filter, after, BATCH).await?;
            batch.retain(|r| i64::try_from(r.chain.chain_seq).is_ok_and(|seq| seq <= bound));
            if batch.is_empty() {
                break;
            }
            let ids: Vec<String> = batch.iter().map(|r| r.row.round_id.clone()).collect();
            let mut bets: HashMap<String, Vec<crate::record::BetRow>> = HashMap::new();
            for (id, bet) in store.bets_of_rounds(&ids).await? {
                bets.entry(id).or_default().push(bet);
            }
            let clips = store.clips_of_rounds(&ids).await?;
            let upto = batch.last().map_or(walk.last_seq, |r| {
                i64::try_from(r.chain.chain_seq).unwrap_or(i64::MAX)
            });
            let mut kept: HashMap<i64, ExportKept> = store
                .export_rows(&table, walk.last_seq, upto)
                .await?
                .into_iter()
                .map(|(seq, id, jsonl, csv)| (seq, (id, jsonl, csv)))
                .collect();
            for stored in &batch {
                let seq = i64::try_from(stored.chain.chain_seq).unwrap_or(i64::MAX);
                let mine = bets.remove(&stored.row.round_id).unwrap_or_default();
                let export = kept.remove(&seq);
                let clip = clips.get(&stored.row.round_id);
                let problem = check_one(&walk, stored, &mine, export.as_ref(), clip, keys)
                    .or_else(|| orphan(&kept, walk.last_seq, seq));
                if let Some(first_bad) = problem {
                    let (head_id, head_hash) = walk.head.unwrap_or_default();
                    return Ok(pb::VerifyResponse {
                        ok: false,
                        records_checked: checked + walk.checked + 1,
                        first_bad: Some(first_bad),
                        head_round_id: head_id,
                        head_hash: hex_to_bytes_lossy(&head_hash),
                        signatures_checked: signed(keys, checked + walk.checked),
                        clip_seals_checked: clip_seals,
                        heads_checked: Vec::new(),
                    });
                }
                if !keys.is_empty() && clip.is_some_and(|c| c.clip.is_some() || c.missing.is_some())
                {
                    clip_seals += 1;
                }
                // Checked equal to what the record derives.
                folded.touch(&stored.row, &mine);
                folded.add(&stored.row, &mine);
                walk.checked += 1;
                walk.last_seq = i64::try_from(stored.chain.chain_seq).unwrap_or(i64::MAX);
                walk.head = Some((stored.row.round_id.clone(), stored.chain.hash.clone()));
            }
        }
        // Rendered rounds past the table's last stored round. Rounds appended while the
        // walk ran are stored with their rendering in one transaction: a rendering whose
        // round is stored by now is such a round, not one left behind by a deletion.
        let beyond = store.export_rows(&table, walk.last_seq, i64::MAX).await?;
        let orphaned = match beyond.first() {
            Some((seq, ..)) => {
                let next = store
                    .rounds_in_chain_order(&filter, Some((table.as_str(), walk.last_seq)), 1)
                    .await?;
                next.first()
                    .is_none_or(|r| i64::try_from(r.chain.chain_seq).unwrap_or(i64::MAX) != *seq)
            }
            None => false,
        };
        if let (true, Some((seq, round_id, _, _))) = (orphaned, beyond.first()) {
            let (head_id, head_hash) = walk.head.unwrap_or_default();
            return Ok(pb::VerifyResponse {
                ok: false,
                records_checked: checked + walk.checked,
                first_bad: Some(orphan_bad(round_id, *seq)),
                head_round_id: head_id,
                head_hash: hex_to_bytes_lossy(&head_hash),
                signatures_checked: signed(keys, checked + walk.checked),
                clip_seals_checked: clip_seals,
                heads_checked: Vec::new(),
            });
        }
        checked += walk.checked;
        if walk.head.is_some() {
            head = walk.head;
        }
    }
    let (head_id, head_hash) = head.unwrap_or_default();
    if let Some(problem) = first_difference(&folded, &stored, every_table) {
        return Ok(pb::VerifyResponse {
            ok: false,
            records_checked: checked,
            // No one record is at fault: a table derived from all of them is.
            first_bad: Some(bad("", problem, "", "")),
            head_round_id: head_id,
            head_hash: hex_to_bytes_lossy(&head_hash),
            signatures_checked: signed(keys, checked),
            clip_seals_checked: clip_seals,
            heads_checked: Vec::new(),
        });
    }
    Ok(pb::VerifyResponse {
        ok: true,
        records_checked: checked,
        first_bad: None,
        head_round_id: head_id,
        head_hash: hex_to_bytes_lossy(&head_hash),
        signatures_checked: signed(keys, checked),
        clip_seals_checked: clip_seals,
        heads_checked: Vec::new(),
    })
}

/// Verify's answer for a client that did not accept unsigned records: one whose records
/// were checked but not their signatures is not ok, since a re-hashed, edited chain would
/// pass the hashes alone. A broken chain keeps the first fault it names.
pub fn require_signatures(mut v: pb::VerifyResponse) -> pb::VerifyResponse {
    if v.ok && v.signatures_checked < v.records_checked {
        v.ok = false;
        v.first_bad = Some(bad(
            "",
            format!(
                "{} of {} records' table signatures were not checked: the archive was started \
                 without the tables' public keys, so the hashes prove the chain whole but \
                 not who wrote it; ask with accept_unsigned to accept that",
                v.records_checked - v.signatures_checked,
                v.records_checked
            ),
            "",
            "",
        ));
    }
    v
}

/// How many of `checked` records had their signature checked: all of them, or none
/// without a trusted key.
fn signed(keys: &TrustedKeys, checked: u64) -> u64 {
    if keys.is_empty() { 0 } else { checked }
}
