//! Append: checks each round against the stored chain and stores it with its bets and
//! its share of the Stats aggregates, or changes nothing for it. Rounds that arrive
//! together are written in one transaction (see [`super::group`]); each is still checked
//! on its own, in arrival order, against the chain as the rounds before it left it.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Row as _};

use super::aggregate::Folded;
use super::known::Known;
use super::{ClipRow, Db, MissingClipRow, Store, on_pool};
use crate::error::ArchiveError;
use crate::record::{BetRow, RoundRow};

/// A round ready to store: its columns, bets, chain fields, the table's record, and what
/// Export writes for it (rendered before the commit, off the store's one writer).
#[derive(Clone, Debug)]
pub struct OwnedRound {
    pub row: RoundRow,
    pub bets: Vec<BetRow>,
    pub chain_seq: i64,
    pub prev_hash: String,
    pub hash: String,
    pub signature: String,
    pub key_id: String,
    /// The table's record, packed ([`crate::packed`]).
    pub table_record: Vec<u8>,
    pub export: ExportLines,
    /// What the record says of the round's clip: where it is, or why there is none
    /// (stored with the round, so that nobody reads the round without it).
    pub clip: ClipOf,
    /// The table's seal of `clip` (hex), when the record carries one.
    pub clip_seal: Option<String>,
}

/// What a record says of its round's clip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClipOf {
    Clip(ClipRow),
    Missing(MissingClipRow),
    /// Nothing (a broadcaster that records no clips).
    #[default]
    Unsaid,
}

/// A round as Export writes it, packed ([`crate::packed`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportLines {
    /// Its JSON line, newline included.
    pub jsonl: Vec<u8>,
    /// Its CSV rows (one per bet), newlines included.
    pub csv: Vec<u8>,
}

/// A table's last stored round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastLink {
    pub round_id: String,
    pub chain_seq: i64,
    pub hash: String,
}

/// What an append did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Appended {
    Stored {
        hash: String,
    },
    /// The same record was already stored.
    Duplicate {
        hash: String,
    },
    /// A different record is stored under this round id.
    Conflict {
        stored_hash: String,
    },
    /// The record does not continue its table's chain. `last` is `None` for a table
    /// with no stored round (the record should then start from genesis, seq 1).
    Gap {
        last: Option<LastLink>,
        expected_prev_hash: String,
        expected_seq: i64,
    },
}

// Rows per multi-row statement at most, powers of two (see `shaped_chunks`), each under
// SQLite's 32,766 parameters.
/// Rounds per multi-row INSERT (30 parameters each).
const ROUNDS_PER_INSERT: usize = 1024;
/// Records per multi-row INSERT (2 parameters each), rendered rounds (6 each).
const RECORDS_PER_INSERT: usize = 4096;
/// Bets per multi-row INSERT (10 parameters each).
const BETS_PER_INSERT: usize = 2048;
/// Ids per `IN (…)` list.
const IDS_PER_SELECT: usize = 4096;

const INSERT_ROUNDS: &str =
    "INSERT INTO rounds (round_id, table_id, chain_seq, shoe_id, shoe, hand, croupier,
    betting_opened_at, betting_closed_at, finished_at, day, winner, is_natural, player_pair,
    banker_pair, voided, corrections, cards, bets, total_stake, total_returned, total_refunded,
    prev_hash, hash, signature, key_id, dealt, player_total, banker_total, void_reason) ";

const INSERT_RECORDS: &str = "INSERT INTO round_records (round_id, table_record) ";

const INSERT_EXPORTS: &str =
    "INSERT INTO round_exports (table_id, chain_seq, round_id, bets, jsonl, csv) ";

const INSERT_CLIPS: &str = "INSERT INTO clips (round_id, path, size_bytes, sha256) ";

const INSERT_CLIPS_MISSING: &str = "INSERT INTO clips_missing (round_id, reason, detail) ";
const INSERT_CLIP_SEALS: &str = "INSERT INTO clip_seals (round_id, seal) ";

const INSERT_BETS: &str = "INSERT INTO bets (round_id, player_id, position, stake, returned,
    refunded, won, rounding_remainder, rounding_denominator, finished_at) ";

/// Decides each round in arrival order against what is stored (`stored`: hash by round
/// id; `heads`: each table's last link) as updated by the rounds accepted before it.
/// Returns each round's answer and the indexes of those to insert.
fn decide(
    rounds: &[&OwnedRound],
    mut stored: HashMap<String, String>,
    heads: &mut HashMap<String, LastLink>,
) -> (Vec<Appended>, Vec<usize>) {
    let mut answers = Vec::with_capacity(rounds.len());
    let mut accepted = Vec::with_capacity(rounds.len());
    for (index, round) in rounds.iter().enumerate() {
        if let Some(hash) = stored.get(&round.row.round_id) {
            answers.push(if *hash == round.hash {
                Appended::Duplicate { hash: hash.clone() }
            } else {
                Appended::Conflict {
                    stored_hash: hash.clone(),
                }
            });
            continue;
        }
        let last = heads.get(&round.row.table_id).cloned();
        let (expected_prev_hash, expected_seq) = match &last {
            Some(l) => (l.hash.clone(), l.chain_seq + 1),
            None => (banco_records::chain::GENESIS_HASH.to_owned(), 1),
        };
        if round.prev_hash != expected_prev_hash || round.chain_seq != expected_seq {
            answers.push(Appended::Gap {
                last,
                expected_prev_hash,
                expected_seq,
            });
            continue;
        }
        stored.insert(round.row.round_id.clone(), round.hash.clone());
        heads.insert(
            round.row.table_id.clone(),
            LastLink {
                round_id: round.row.round_id.clone(),
                chain_seq: round.chain_seq,
                hash: round.hash.clone(),
            },
        );
        answers.push(Appended::Stored {
            hash: round.hash.clone(),
        });
        accepted.push(index);
    }
    (answers, accepted)
}

/// Deduplicated, in first-seen order.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    items.filter(|s| seen.insert(*s)).collect()
}

/// Checks and stores `rounds` in ONE transaction: each gets its own answer (stored,
/// duplicate, conflict, gap); a refused round changes nothing and does not stop the
/// others. Fails as a whole only when the database does (then nothing was stored, and
/// `known` must be forgotten). What it commits is added to `known`.
pub(super) async fn write_batch(
    db: &Db,
    known: &mut Known,
    rounds: &[&OwnedRound],
) -> Result<Vec<Appended>, ArchiveError> {
    on_pool!(db, |pool| {
        let mut tx = pool.begin().await?;
        // What is already stored under these round ids.
        let ids = distinct(rounds.iter().map(|r| r.row.round_id.as_str()));
        let mut stored = HashMap::new();
        for chunk in super::shaped_chunks(&ids, IDS_PER_SELECT) {
            let mut q = QueryBuilder::new("SELECT round_id, hash FROM rounds WHERE round_id IN (");
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(*id);
            }
            q.push(")");
            for row in q.build().fetch_all(&mut *tx).await? {
                stored.insert(row.try_get::<String, _>(0)?, row.try_get::<String, _>(1)?);
            }
        }
        // The head of each table's chain.
        let tables = distinct(rounds.iter().map(|r| r.row.table_id.as_str()));
        let mut heads = HashMap::new();
        for table in tables {
            if let Some(head) = known.heads.get(table) {
                heads.insert(table.to_owned(), head.clone());
                continue;
            }
            // One index seek per table (a MAX per group would read every round of it).
            let head: Option<(String, i64, String)> = sqlx::query_as(
                "SELECT round_id, chain_seq, hash FROM rounds WHERE table_id = $1
                 ORDER BY chain_seq DESC LIMIT 1",
            )
            .bind(table)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((round_id, chain_seq, hash)) = head {
                heads.insert(
                    table.to_owned(),
                    LastLink {
                        round_id,
                        chain_seq,
                        hash,
                    },
                );
            }
        }
        let (answers, accepted) = decide(rounds, stored, &mut heads);
        if accepted.is_empty() {
            // Nothing to write: refusals and duplicates change nothing.
            tx.rollback().await?;
            return Ok(answers);
        }
        let accepted: Vec<&OwnedRound> = accepted.iter().map(|&i| rounds[i]).collect();
        for chunk in super::shaped_chunks(&accepted, ROUNDS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_ROUNDS);
            q.push_values(chunk, |mut b, round| {
                let r = &round.row;
                b.push_bind(r.round_id.as_str())
                    .push_bind(r.table_id.as_str())
                    .push_bind(round.chain_seq)
                    .push_bind(r.shoe_id.as_str())
                    .push_bind(r.shoe)
                    .push_bind(r.hand)
                    .push_bind(r.croupier.as_str())
                    .push_bind(r.betting_opened_at)
                    .push_bind(r.betting_closed_at)
                    .push_bind(r.finished_at)
                    .push_bind(r.day.as_str())
                    .push_bind(r.winner.as_deref())
                    .push_bind(r.natural)
                    .push_bind(r.player_pair)
                    .push_bind(r.banker_pair)
                    .push_bind(r.voided)
                    .push_bind(r.corrections)
                    .push_bind(r.cards)
                    .push_bind(r.bets)
                    .push_bind(r.total_stake)
                    .push_bind(r.total_returned)
                    .push_bind(r.total_refunded)
                    .push_bind(round.prev_hash.as_str())
                    .push_bind(round.hash.as_str())
                    .push_bind(round.signature.as_str())
                    .push_bind(round.key_id.as_str())
                    .push_bind(r.dealt.as_str())
                    .push_bind(r.player_total)
                    .push_bind(r.banker_total)
                    .push_bind(r.void_reason.as_deref());
            });
            q.build().execute(&mut *tx).await?;
        }
        for chunk in super::shaped_chunks(&accepted, RECORDS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_RECORDS);
            q.push_values(chunk, |mut b, round| {
                b.push_bind(round.row.round_id.as_str())
                    .push_bind(round.table_record.as_slice());
            });
            q.build().execute(&mut *tx).await?;
            let mut q = QueryBuilder::new(INSERT_EXPORTS);
            q.push_values(chunk, |mut b, round| {
                b.push_bind(round.row.table_id.as_str())
                    .push_bind(round.chain_seq)
                    .push_bind(round.row.round_id.as_str())
                    .push_bind(round.row.bets)
                    .push_bind(round.export.jsonl.as_slice())
                    .push_bind(round.export.csv.as_slice());
            });
            q.build().execute(&mut *tx).await?;
        }
        let clips: Vec<(&str, &ClipRow)> = accepted
            .iter()
            .filter_map(|round| match &round.clip {
                ClipOf::Clip(clip) => Some((round.row.round_id.as_str(), clip)),
                _ => None,
            })
            .collect();
        for chunk in super::shaped_chunks(&clips, RECORDS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_CLIPS);
            q.push_values(chunk, |mut b, (round_id, clip)| {
                b.push_bind(*round_id)
                    .push_bind(clip.path.as_str())
                    .push_bind(clip.size_bytes)
                    .push_bind(clip.sha256.as_str());
            });
            q.build().execute(&mut *tx).await?;
        }
        let missing: Vec<(&str, &MissingClipRow)> = accepted
            .iter()
            .filter_map(|round| match &round.clip {
                ClipOf::Missing(missing) => Some((round.row.round_id.as_str(), missing)),
                _ => None,
            })
            .collect();
        for chunk in super::shaped_chunks(&missing, RECORDS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_CLIPS_MISSING);
            q.push_values(chunk, |mut b, (round_id, missing)| {
                b.push_bind(*round_id)
                    .push_bind(missing.reason.as_str())
                    .push_bind(missing.detail.as_str());
            });
            q.build().execute(&mut *tx).await?;
        }
        let seals: Vec<(&str, &str)> = accepted
            .iter()
            .filter_map(|round| {
                let seal = round.clip_seal.as_deref()?;
                Some((round.row.round_id.as_str(), seal))
            })
            .collect();
        for chunk in super::shaped_chunks(&seals, RECORDS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_CLIP_SEALS);
            q.push_values(chunk, |mut b, (round_id, seal)| {
                b.push_bind(*round_id).push_bind(*seal);
            });
            q.build().execute(&mut *tx).await?;
        }
        let bets: Vec<(&RoundRow, &BetRow)> = accepted
            .iter()
            .flat_map(|round| round.bets.iter().map(|b| (&round.row, b)))
            .collect();
        for chunk in super::shaped_chunks(&bets, BETS_PER_INSERT) {
            let mut q = QueryBuilder::new(INSERT_BETS);
            q.push_values(chunk, |mut b, (r, bet)| {
                b.push_bind(r.round_id.as_str())
                    .push_bind(bet.player_id.as_str())
                    .push_bind(bet.position.as_str())
                    .push_bind(bet.stake)
                    .push_bind(bet.returned)
                    .push_bind(bet.refunded)
                    .push_bind(bet.won)
                    .push_bind(bet.rounding_remainder)
                    .push_bind(bet.rounding_denominator)
                    .push_bind(r.finished_at);
            });
            q.build().execute(&mut *tx).await?;
        }
        // Stats aggregates: read the touched rows, fold the rounds in, write them back.
        let mut folded = Folded::default();
        for round in &accepted {
            folded.touch(&round.row, &round.bets);
        }
        let (totals, positions) = known.fill(&mut folded);
        super::aggregate::load!(folded, &totals, &positions, &mut *tx);
        for round in &accepted {
            folded.add(&round.row, &round.bets);
        }
        super::aggregate::save!(folded, &mut *tx);
        tx.commit().await?;
        known.committed(heads, &folded);
        Ok(answers)
    })
}

impl Store {
    /// Checks `round` against the stored chain and stores it, in the next group commit
    /// (one transaction with the rounds that arrive while the previous one commits);
    /// answers once that transaction has committed.
    pub async fn append_owned(&self, round: OwnedRound) -> Result<Appended, ArchiveError> {
        let mut answers = self.commits.submit(vec![round]).await?;
        answers
            .pop()
            .ok_or_else(|| ArchiveError::Corrupt("the append gave no answer".to_owned()))
    }

    /// [`Store::append_owned`] of several rounds, in order, in one transaction: an answer
    /// for each.
    pub async fn append_many(
        &self,
        rounds: Vec<OwnedRound>,
    ) -> Result<Vec<Appended>, ArchiveError> {
        if rounds.is_empty() {
            return Ok(Vec::new());
        }
        self.commits.submit(rounds).await
    }
}
