//! Reads: rounds by filter (newest first, paged), one round, a table's chain in order,
//! and the aggregates of Stats and PlayerBets.

use sqlx::Row as _;

use super::{Param, Store, bind_all, on_pool};
use crate::error::ArchiveError;
use crate::record::{BetRow, ChainFields, RoundRow};

/// A stored round: its columns, chain fields and the table's record.
#[derive(Clone, Debug)]
pub struct StoredRound {
    pub row: RoundRow,
    pub chain: ChainFields,
    /// The table's record, packed: see [`StoredRound::table_record`].
    pub packed_record: Vec<u8>,
}

impl StoredRound {
    /// The table's record as the table sealed it; an error names a record that cannot be
    /// unpacked (a damaged store).
    pub fn table_record(&self) -> Result<Vec<u8>, ArchiveError> {
        crate::packed::unpack(
            &self.packed_record,
            &format!("the record of round {}", self.row.round_id),
        )
    }
}

/// What ListRounds needs of a round.
pub type SummaryRow = StoredRound;
/// What Verify needs of a round.
pub type ChainRow = StoredRound;

/// One page of rounds and the token of the next (empty when none).
#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_page_token: String,
}

const COLUMNS: &str = "round_id, table_id, chain_seq, shoe_id, shoe, hand, croupier,
    betting_opened_at, betting_closed_at, finished_at, day, winner, is_natural, player_pair,
    banker_pair, voided, corrections, cards, bets, total_stake, total_returned, total_refunded,
    prev_hash, hash, signature, key_id, dealt, player_total, banker_total, void_reason,
    (SELECT table_record FROM round_records rr WHERE rr.round_id = rounds.round_id)
        AS table_record";

/// Reads the [`RoundRow`] of a row of [`COLUMNS`] (a macro: the row type differs by
/// backend).
macro_rules! round_row {
    ($row:expr) => {{
        let r = $row;
        RoundRow {
            round_id: r.try_get("round_id")?,
            table_id: r.try_get("table_id")?,
            shoe_id: r.try_get("shoe_id")?,
            shoe: r.try_get("shoe")?,
            hand: r.try_get("hand")?,
            croupier: r.try_get("croupier")?,
            betting_opened_at: r.try_get("betting_opened_at")?,
            betting_closed_at: r.try_get("betting_closed_at")?,
            finished_at: r.try_get("finished_at")?,
            day: r.try_get("day")?,
            winner: r.try_get("winner")?,
            natural: r.try_get("is_natural")?,
            player_pair: r.try_get("player_pair")?,
            banker_pair: r.try_get("banker_pair")?,
            voided: r.try_get("voided")?,
            corrections: r.try_get("corrections")?,
            cards: r.try_get("cards")?,
            bets: r.try_get("bets")?,
            total_stake: r.try_get("total_stake")?,
            total_returned: r.try_get("total_returned")?,
            total_refunded: r.try_get("total_refunded")?,
            dealt: r.try_get("dealt")?,
            player_total: r.try_get("player_total")?,
            banker_total: r.try_get("banker_total")?,
            void_reason: r.try_get("void_reason")?,
        }
    }};
}

/// Reads a row of [`COLUMNS`] into a [`StoredRound`].
macro_rules! stored_round {
    ($row:expr) => {{
        let r = $row;
        let chain_seq: i64 = r.try_get("chain_seq")?;
        StoredRound {
            row: round_row!(r),
            chain: ChainFields {
                chain_seq: u64::try_from(chain_seq).unwrap_or(0),
                prev_hash: r.try_get("prev_hash")?,
                hash: r.try_get("hash")?,
                signature: r.try_get("signature")?,
                key_id: r.try_get("key_id")?,
            },
            packed_record: r.try_get("table_record")?,
        }
    }};
}

/// A `RoundFilter` as an SQL condition on `rounds` and its parameters.
#[derive(Clone, Debug, Default)]
pub struct RoundFilterSql {
    conditions: Vec<String>,
    params: Vec<Param>,
    /// A condition is on a column of `rounds` other than the chain's (table, seq).
    beyond_chain: bool,
}

impl RoundFilterSql {
    /// Adds `column op $n` with `value`.
    fn push(&mut self, template: &str, value: Param) {
        self.beyond_chain = true;
        self.push_chain(template, value);
    }

    /// [`Self::push`] of a condition on `table_id` or `chain_seq` only.
    fn push_chain(&mut self, template: &str, value: Param) {
        self.params.push(value);
        let n = self.params.len();
        self.conditions
            .push(template.replace("$?", &format!("${n}")));
    }

    pub fn table(&mut self, table_id: &str) {
        self.push_chain("table_id = $?", Param::Text(table_id.to_owned()));
    }
    pub fn shoe(&mut self, shoe_id: &str) {
        self.push("shoe_id = $?", Param::Text(shoe_id.to_owned()));
    }
    pub fn croupier(&mut self, croupier: &str) {
        self.push("croupier = $?", Param::Text(croupier.to_owned()));
    }
    pub fn day(&mut self, day: &str) {
        self.push("day = $?", Param::Text(day.to_owned()));
    }
    /// Finished at or after `ms`.
    pub fn from_ms(&mut self, ms: i64) {
        self.push("finished_at >= $?", Param::Int(ms));
    }
    /// Finished before `ms`.
    pub fn to_ms(&mut self, ms: i64) {
        self.push("finished_at < $?", Param::Int(ms));
    }
    pub fn player(&mut self, player: &str) {
        self.push(
            "EXISTS (SELECT 1 FROM bets b WHERE b.round_id = rounds.round_id AND b.player_id = $?)",
            Param::Text(player.to_owned()),
        );
    }
    pub fn winner(&mut self, winner: &str) {
        self.push("winner = $?", Param::Text(winner.to_owned()));
    }
    pub fn voided_only(&mut self) {
        self.push("voided = $?", Param::Bool(true));
    }
    /// Settled rounds only: voided ones left out.
    pub fn settled_only(&mut self) {
        self.push("voided = $?", Param::Bool(false));
    }
    pub fn corrected_only(&mut self) {
        self.push("corrections > $?", Param::Int(0));
    }
    /// Rounds after `(table_id, chain_seq)` in chain order (a row-value comparison, which
    /// both backends answer from the `(table_id, chain_seq)` index).
    fn after_link(&mut self, table_id: &str, chain_seq: i64) {
        self.params.push(Param::Text(table_id.to_owned()));
        let n_table = self.params.len();
        self.params.push(Param::Int(chain_seq));
        let n_seq = self.params.len();
        self.conditions
            .push(format!("(table_id, chain_seq) > (${n_table}, ${n_seq})"));
    }
    /// Rounds before `(finished_at, round_id)` in newest-first order.
    fn before_time(&mut self, finished_at: i64, round_id: &str) {
        self.params.push(Param::Int(finished_at));
        let a = self.params.len();
        self.params.push(Param::Int(finished_at));
        let b = self.params.len();
        self.params.push(Param::Text(round_id.to_owned()));
        let c = self.params.len();
        self.conditions.push(format!(
            "(finished_at < ${a} OR (finished_at = ${b} AND round_id < ${c}))"
        ));
    }

    fn where_clause(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.conditions.join(" AND "))
        }
    }

    /// The `WHERE …` clause (empty for no condition) and its parameters.
    pub fn parts(&self) -> (String, &[Param]) {
        (self.where_clause(), &self.params)
    }

    fn next_param(&self) -> usize {
        self.params.len() + 1
    }
}

/// What Export writes for a round, and where the round is in its chain.
#[derive(Clone, Debug)]
pub struct ExportRow {
    pub table_id: String,
    pub chain_seq: i64,
    /// Its JSON line, or its CSV rows, packed ([`crate::packed`]).
    pub text: Vec<u8>,
    /// Records in `text`: 1 JSON line, or a CSV row per bet.
    pub records: u64,
}

/// `finished_at|round_id` of the last round of a page.
fn token_after(row: &RoundRow) -> String {
    format!("{}|{}", row.finished_at, row.round_id)
}

fn parse_page_token(token: &str) -> Result<(i64, String), ArchiveError> {
    let bad = || {
        ArchiveError::bad_request(
            "page_token",
            format!("`{token}` is not a page token this archive issued"),
        )
    };
    let (at, id) = token.split_once('|').ok_or_else(bad)?;
    Ok((at.parse().map_err(|_| bad())?, id.to_owned()))
}

impl Store {
    /// Rounds matching `filter`, newest first; `page_token` continues a previous page.
    pub async fn list_rounds(
        &self,
        filter: &RoundFilterSql,
        page_size: u32,
        page_token: &str,
    ) -> Result<Page<StoredRound>, ArchiveError> {
        let mut filter = filter.clone();
        if !page_token.is_empty() {
            let (at, id) = parse_page_token(page_token)?;
            filter.before_time(at, &id);
        }
        let limit = i64::from(page_size) + 1;
        let sql = format!(
            "SELECT {COLUMNS} FROM rounds {} ORDER BY finished_at DESC, round_id DESC LIMIT ${}",
            filter.where_clause(),
            filter.next_param()
        );
        let mut items = on_pool!(self, |pool| {
            let rows = bind_all!(sqlx::query(&sql), &filter.params)
                .bind(limit)
                .fetch_all(pool)
                .await?;
            let mut items = Vec::with_capacity(rows.len());
            for row in &rows {
                items.push(stored_round!(row));
            }
            items
        });
        let mut next_page_token = String::new();
        if items.len() > page_size as usize {
            items.truncate(page_size as usize);
            if let Some(last) = items.last() {
                next_page_token = token_after(&last.row);
            }
        }
        Ok(Page {
            items,
            next_page_token,
        })
    }

    /// Rounds matching `filter` in chain order (table, then chain_seq) after `after`, at
    /// most `limit`: what Export, ShoeReport and Verify walk.
    pub async fn rounds_in_chain_order(
        &self,
        filter: &RoundFilterSql,
        after: Option<(&str, i64)>,
        limit: u32,
    ) -> Result<Vec<StoredRound>, ArchiveError> {
        let mut filter = filter.clone();
        if let Some((table, seq)) = after {
            filter.after_link(table, seq);
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM rounds {} ORDER BY table_id, chain_seq LIMIT ${}",
            filter.where_clause(),
            filter.next_param()
        );
        Ok(on_pool!(self, |pool| {
            let rows = bind_all!(sqlx::query(&sql), &filter.params)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?;
            let mut items = Vec::with_capacity(rows.len());
            for row in &rows {
                items.push(stored_round!(row));
            }
            items
        }))
    }

    /// [`Store::rounds_in_chain_order`], only what Export writes for each round: its JSON
    /// line, or its CSV rows when `csv`.
    pub async fn export_page(
        &self,
        filter: &RoundFilterSql,
        after: Option<(&str, i64)>,
        csv: bool,
        limit: u32,
    ) -> Result<Vec<ExportRow>, ArchiveError> {
        let mut filter = filter.clone();
        if let Some((table, seq)) = after {
            filter.after_link(table, seq);
        }
        let column = if csv { "csv" } else { "jsonl" };
        // Filtered on the chain alone (every round, or a table's), the rendered rounds are
        // read in their own key's order, with no round row.
        let from = if filter.beyond_chain {
            format!(
                "SELECT table_id, chain_seq, bets,
                    (SELECT {column} FROM round_exports e
                     WHERE e.table_id = rounds.table_id AND e.chain_seq = rounds.chain_seq)
                 FROM rounds"
            )
        } else {
            format!("SELECT table_id, chain_seq, bets, {column} FROM round_exports")
        };
        let sql = format!(
            "{from} {} ORDER BY table_id, chain_seq LIMIT ${}",
            filter.where_clause(),
            filter.next_param()
        );
        Ok(on_pool!(self, |pool| {
            let rows = bind_all!(sqlx::query(&sql), &filter.params)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?;
            let mut items = Vec::with_capacity(rows.len());
            for r in &rows {
                let bets: i64 = r.try_get(2)?;
                items.push(ExportRow {
                    table_id: r.try_get(0)?,
                    chain_seq: r.try_get(1)?,
                    text: r.try_get(3)?,
                    records: if csv {
                        u64::try_from(bets).unwrap_or(0)
                    } else {
                        1
                    },
                });
            }
            items
        }))
    }

    /// What Export writes for a table's rounds with `chain_seq` in `(after, upto]`, in
    /// chain order: `(chain_seq, round_id, jsonl, csv)`, packed.
    pub async fn export_rows(
        &self,
        table_id: &str,
        after: i64,
        upto: i64,
    ) -> Result<Vec<(i64, String, Vec<u8>, Vec<u8>)>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT chain_seq, round_id, jsonl, csv FROM round_exports
                 WHERE table_id = $1 AND chain_seq > $2 AND chain_seq <= $3 ORDER BY chain_seq",
            )
            .bind(table_id)
            .bind(after)
            .bind(upto)
            .fetch_all(pool)
            .await?
        }))
    }

    /// One round by id.
    pub async fn get_round(&self, round_id: &str) -> Result<Option<StoredRound>, ArchiveError> {
        let sql = format!("SELECT {COLUMNS} FROM rounds WHERE round_id = $1");
        Ok(on_pool!(self, |pool| {
            match sqlx::query(&sql)
                .bind(round_id)
                .fetch_optional(pool)
                .await?
            {
                Some(row) => Some(stored_round!(&row)),
                None => None,
            }
        }))
    }

    /// Every table with a stored round, in order.
    pub async fn tables(&self) -> Result<Vec<String>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT DISTINCT table_id FROM rounds ORDER BY table_id")
                .fetch_all(pool)
                .await?
        }))
    }

    /// The stored bets of the given rounds, by round id then player then position.
    pub async fn bets_of_rounds(
        &self,
        round_ids: &[String],
    ) -> Result<Vec<(String, BetRow)>, ArchiveError> {
        if round_ids.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (1..=round_ids.len()).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT round_id, player_id, position, stake, returned, refunded, won,
                rounding_remainder, rounding_denominator
             FROM bets WHERE round_id IN ({}) ORDER BY round_id, player_id, position",
            marks.join(", ")
        );
        let params: Vec<Param> = round_ids.iter().map(|id| Param::Text(id.clone())).collect();
        Ok(on_pool!(self, |pool| {
            let rows = bind_all!(sqlx::query(&sql), &params)
                .fetch_all(pool)
                .await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                out.push((
                    r.try_get("round_id")?,
                    BetRow {
                        player_id: r.try_get("player_id")?,
                        position: r.try_get("position")?,
                        stake: r.try_get("stake")?,
                        returned: r.try_get("returned")?,
                        refunded: r.try_get("refunded")?,
                        won: r.try_get("won")?,
                        rounding_remainder: r.try_get("rounding_remainder")?,
                        rounding_denominator: r.try_get("rounding_denominator")?,
                    },
                ));
            }
            out
        }))
    }
}
