//! The Stats aggregates, kept up to date by every append in the same transaction: per
//! scope (table, shoe, croupier, UTC day) and key, the counts and sums of Stats and the
//! state of the Banker / Player runs per table, so Stats reads a few rows instead of
//! every round of its scope.
//!
//! `stats_totals` has one row per (scope, key, table): counts and sums add up across
//! tables, and a run never crosses tables (as [`crate::stats::longest_streaks`] counts
//! them), so each table keeps its own current run (`run_winner`, `run_length`) and its
//! longest. Rounds of a table arrive in chain order, so the runs of any scope (its rounds
//! of that table, in play order) grow at their end. `stats_positions` has one row per
//! (scope, key, position) over the bets of rounds not voided.

use std::collections::HashMap;

use crate::record::{BetRow, RoundRow};

/// The scopes kept, as stored in the `scope` column.
pub(crate) const SCOPE_TABLE: &str = "table";
pub(crate) const SCOPE_SHOE: &str = "shoe";
pub(crate) const SCOPE_CROUPIER: &str = "croupier";
pub(crate) const SCOPE_DAY: &str = "day";

/// One (scope, key, table) row of `stats_totals`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeTotals {
    pub rounds: i64,
    pub voided: i64,
    pub corrections: i64,
    pub banker: i64,
    pub player: i64,
    pub tie: i64,
    pub naturals: i64,
    pub player_pairs: i64,
    pub banker_pairs: i64,
    pub house: i64,
    /// `banker`, `player`, or "" before the first.
    pub run_winner: String,
    pub run_length: i64,
    pub longest_banker: i64,
    pub longest_player: i64,
}

impl ScopeTotals {
    fn add(&mut self, r: &RoundRow) {
        self.rounds += 1;
        self.voided += i64::from(r.voided);
        self.corrections += r.corrections;
        self.house += r.total_stake - r.total_returned - r.total_refunded;
        if r.voided {
            return;
        }
        self.naturals += i64::from(r.natural);
        self.player_pairs += i64::from(r.player_pair);
        self.banker_pairs += i64::from(r.banker_pair);
        match r.winner.as_deref() {
            Some("tie") => self.tie += 1,
            Some(w @ ("banker" | "player")) => {
                if w == "banker" {
                    self.banker += 1;
                } else {
                    self.player += 1;
                }
                if self.run_winner == w {
                    self.run_length += 1;
                } else {
                    w.clone_into(&mut self.run_winner);
                    self.run_length = 1;
                }
                if w == "banker" {
                    self.longest_banker = self.longest_banker.max(self.run_length);
                } else {
                    self.longest_player = self.longest_player.max(self.run_length);
                }
            }
            _ => {}
        }
    }
}

/// One (scope, key, position) row of `stats_positions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PositionTotals {
    pub bets: i64,
    pub wins: i64,
    pub staked: i64,
    pub returned: i64,
}

/// The row id of (scope, key, rest): the parts joined by U+001F (which no id contains).
pub(crate) fn row_id(scope: &str, key: &str, rest: &str) -> String {
    format!("{scope}\u{1f}{key}\u{1f}{rest}")
}

/// The (scope, key) pairs a round counts in; a round credited to nobody has no croupier
/// scope.
fn scopes(r: &RoundRow) -> impl Iterator<Item = (&'static str, &str)> {
    [
        (SCOPE_TABLE, r.table_id.as_str()),
        (SCOPE_SHOE, r.shoe_id.as_str()),
        (SCOPE_CROUPIER, r.croupier.as_str()),
        (SCOPE_DAY, r.day.as_str()),
    ]
    .into_iter()
    .filter(|(_, key)| !key.is_empty())
}

/// The rows a set of rounds changes: loaded, then folded, then saved.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    /// id → (scope, key, table, totals).
    pub(crate) totals: HashMap<String, (&'static str, String, String, ScopeTotals)>,
    /// id → (scope, key, position, totals).
    pub(crate) positions: HashMap<String, (&'static str, String, String, PositionTotals)>,
}

impl Folded {
    /// Makes room for the rows `round` changes (zero until loaded).
    pub(crate) fn touch(&mut self, r: &RoundRow, bets: &[BetRow]) {
        for (scope, key) in scopes(r) {
            self.totals
                .entry(row_id(scope, key, &r.table_id))
                .or_insert_with(|| {
                    (
                        scope,
                        key.to_owned(),
                        r.table_id.clone(),
                        ScopeTotals::default(),
                    )
                });
            if r.voided {
                continue;
            }
            for b in bets {
                self.positions
                    .entry(row_id(scope, key, &b.position))
                    .or_insert_with(|| {
                        (
                            scope,
                            key.to_owned(),
                            b.position.clone(),
                            PositionTotals::default(),
                        )
                    });
            }
        }
    }

    /// Adds `round` (touched first) to its rows.
    pub(crate) fn add(&mut self, r: &RoundRow, bets: &[BetRow]) {
        for (scope, key) in scopes(r) {
            if let Some(t) = self.totals.get_mut(&row_id(scope, key, &r.table_id)) {
                t.3.add(r);
            }
            if r.voided {
                continue;
            }
            for b in bets {
                if let Some(p) = self.positions.get_mut(&row_id(scope, key, &b.position)) {
                    p.3.bets += 1;
                    p.3.wins += i64::from(b.won);
                    p.3.staked += b.stake;
                    p.3.returned += b.returned;
                }
            }
        }
    }
}

/// Rows per multi-row upsert (18 parameters each), a power of two (see `shaped_chunks`).
pub(crate) const ROWS_PER_UPSERT: usize = 1024;

/// Ids per `IN (…)` list of the loads.
pub(crate) const IDS_PER_LOAD: usize = 4096;

/// Loads the stored values of the rows `$totals` and `$positions` (ids of touched rows
/// of `$folded`) through `$conn`.
macro_rules! load {
    ($folded:expr, $totals:expr, $positions:expr, $conn:expr) => {{
        use sqlx::Row as _;
        let ids: &[String] = $totals;
        for chunk in $crate::store::shaped_chunks(ids, $crate::store::aggregate::IDS_PER_LOAD) {
            let mut q = sqlx::QueryBuilder::new(
                "SELECT id, rounds, voided, corrections, banker, player, tie, naturals,
                    player_pairs, banker_pairs, house, run_winner, run_length, longest_banker,
                    longest_player FROM stats_totals WHERE id IN (",
            );
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            q.push(")");
            for row in q.build().fetch_all($conn).await? {
                let id: String = row.try_get(0)?;
                if let Some(t) = $folded.totals.get_mut(&id) {
                    t.3 = $crate::store::ScopeTotals {
                        rounds: row.try_get(1)?,
                        voided: row.try_get(2)?,
                        corrections: row.try_get(3)?,
                        banker: row.try_get(4)?,
                        player: row.try_get(5)?,
                        tie: row.try_get(6)?,
                        naturals: row.try_get(7)?,
                        player_pairs: row.try_get(8)?,
                        banker_pairs: row.try_get(9)?,
                        house: row.try_get(10)?,
                        run_winner: row.try_get(11)?,
                        run_length: row.try_get(12)?,
                        longest_banker: row.try_get(13)?,
                        longest_player: row.try_get(14)?,
                    };
                }
            }
        }
        let ids: &[String] = $positions;
        for chunk in $crate::store::shaped_chunks(ids, $crate::store::aggregate::IDS_PER_LOAD) {
            let mut q = sqlx::QueryBuilder::new(
                "SELECT id, bets, wins, staked, returned FROM stats_positions WHERE id IN (",
            );
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id.as_str());
            }
            q.push(")");
            for row in q.build().fetch_all($conn).await? {
                let id: String = row.try_get(0)?;
                if let Some(p) = $folded.positions.get_mut(&id) {
                    p.3 = $crate::store::PositionTotals {
                        bets: row.try_get(1)?,
                        wins: row.try_get(2)?,
                        staked: row.try_get(3)?,
                        returned: row.try_get(4)?,
                    };
                }
            }
        }
    }};
}
pub(crate) use load;

/// Writes every row of `$folded` through `$conn` (insert or replace).
macro_rules! save {
    ($folded:expr, $conn:expr) => {{
        let totals: Vec<_> = $folded.totals.iter().collect();
        for chunk in
            $crate::store::shaped_chunks(&totals, $crate::store::aggregate::ROWS_PER_UPSERT)
        {
            let mut q = sqlx::QueryBuilder::new(
                "INSERT INTO stats_totals (id, scope, scope_key, table_id, rounds, voided,
                    corrections, banker, player, tie, naturals, player_pairs, banker_pairs,
                    house, run_winner, run_length, longest_banker, longest_player) ",
            );
            q.push_values(chunk, |mut b, (id, (scope, key, table, t))| {
                b.push_bind(id.as_str())
                    .push_bind(*scope)
                    .push_bind(key.as_str())
                    .push_bind(table.as_str())
                    .push_bind(t.rounds)
                    .push_bind(t.voided)
                    .push_bind(t.corrections)
                    .push_bind(t.banker)
                    .push_bind(t.player)
                    .push_bind(t.tie)
                    .push_bind(t.naturals)
                    .push_bind(t.player_pairs)
                    .push_bind(t.banker_pairs)
                    .push_bind(t.house)
                    .push_bind(t.run_winner.as_str())
                    .push_bind(t.run_length)
                    .push_bind(t.longest_banker)
                    .push_bind(t.longest_player);
            });
            q.push(
                " ON CONFLICT (id) DO UPDATE SET rounds = excluded.rounds,
                voided = excluded.voided, corrections = excluded.corrections,
                banker = excluded.banker, player = excluded.player, tie = excluded.tie,
                naturals = excluded.naturals, player_pairs = excluded.player_pairs,
                banker_pairs = excluded.banker_pairs, house = excluded.house,
                run_winner = excluded.run_winner, run_length = excluded.run_length,
                longest_banker = excluded.longest_banker,
                longest_player = excluded.longest_player",
            );
            q.build().execute($conn).await?;
        }
        let positions: Vec<_> = $folded.positions.iter().collect();
        for chunk in
            $crate::store::shaped_chunks(&positions, $crate::store::aggregate::ROWS_PER_UPSERT)
        {
            let mut q = sqlx::QueryBuilder::new(
                "INSERT INTO stats_positions (id, scope, scope_key, position, bets, wins,
                    staked, returned) ",
            );
            q.push_values(chunk, |mut b, (id, (scope, key, position, p))| {
                b.push_bind(id.as_str())
                    .push_bind(*scope)
                    .push_bind(key.as_str())
                    .push_bind(position.as_str())
                    .push_bind(p.bets)
                    .push_bind(p.wins)
                    .push_bind(p.staked)
                    .push_bind(p.returned);
            });
            q.push(
                " ON CONFLICT (id) DO UPDATE SET bets = excluded.bets, wins = excluded.wins,
                staked = excluded.staked, returned = excluded.returned",
            );
            q.build().execute($conn).await?;
        }
    }};
}
pub(crate) use save;

/// The `scope` column's value as one of the scopes kept; `None` for any other.
fn known_scope(scope: &str) -> Option<&'static str> {
    [SCOPE_TABLE, SCOPE_SHOE, SCOPE_CROUPIER, SCOPE_DAY]
        .into_iter()
        .find(|s| *s == scope)
}

/// What a stored row of a scope banco does not keep is filed under, so that it differs.
const UNKNOWN_SCOPE: &str = "(unknown scope)";

/// A stored aggregate row as [`Folded`] keeps it: its id, then (scope, key, its third key
/// part, `$value`), from columns 0 to 3 of `$row`.
macro_rules! keyed {
    ($row:expr, $value:expr) => {{
        let scope: String = $row.try_get(1)?;
        (
            $row.try_get::<String, _>(0)?,
            (
                known_scope(&scope).unwrap_or(UNKNOWN_SCOPE),
                $row.try_get::<String, _>(2)?,
                $row.try_get::<String, _>(3)?,
                $value,
            ),
        )
    }};
}

impl crate::store::Store {
    /// Every stored row of `stats_totals` (of `table` only, if given) and, when no table is
    /// given, of `stats_positions` (whose rows add up over tables): what Verify compares with
    /// the rows the records fold to. With them, the newest `chain_seq` of each table, read
    /// in the same snapshot: appends go on while Verify walks, and the aggregates are what
    /// the rounds up to these heads fold to, not what the rounds stored later do.
    pub(crate) async fn stored_aggregates(
        &self,
        table: Option<&str>,
    ) -> Result<(Folded, HashMap<String, i64>), crate::error::ArchiveError> {
        use sqlx::Row as _;
        let mut folded = Folded::default();
        let (totals, positions, heads) = crate::store::on_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            if matches!(self.db(), crate::store::Db::Postgres(_)) {
                // READ COMMITTED (the default) takes a snapshot per statement.
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    .execute(&mut *tx)
                    .await?;
            }
            // SQLite (WAL) holds one read snapshot from a transaction's first read to its end.
            let mut q = sqlx::QueryBuilder::new("SELECT table_id, MAX(chain_seq) FROM rounds");
            if let Some(table) = table {
                q.push(" WHERE table_id = ").push_bind(table);
            }
            q.push(" GROUP BY table_id");
            let mut heads = HashMap::new();
            for row in q.build().fetch_all(&mut *tx).await? {
                heads.insert(row.try_get::<String, _>(0)?, row.try_get::<i64, _>(1)?);
            }
            let mut q = sqlx::QueryBuilder::new(
                "SELECT id, scope, scope_key, table_id, rounds, voided, corrections, banker,
                    player, tie, naturals, player_pairs, banker_pairs, house, run_winner,
                    run_length, longest_banker, longest_player FROM stats_totals",
            );
            if let Some(table) = table {
                q.push(" WHERE table_id = ").push_bind(table);
            }
            let mut totals = Vec::new();
            for row in q.build().fetch_all(&mut *tx).await? {
                totals.push(keyed!(
                    row,
                    ScopeTotals {
                        rounds: row.try_get(4)?,
                        voided: row.try_get(5)?,
                        corrections: row.try_get(6)?,
                        banker: row.try_get(7)?,
                        player: row.try_get(8)?,
                        tie: row.try_get(9)?,
                        naturals: row.try_get(10)?,
                        player_pairs: row.try_get(11)?,
                        banker_pairs: row.try_get(12)?,
                        house: row.try_get(13)?,
                        run_winner: row.try_get(14)?,
                        run_length: row.try_get(15)?,
                        longest_banker: row.try_get(16)?,
                        longest_player: row.try_get(17)?,
                    }
                ));
            }
            let mut positions = Vec::new();
            if table.is_none() {
                let q = sqlx::query(
                    "SELECT id, scope, scope_key, position, bets, wins, staked, returned
                        FROM stats_positions",
                );
                for row in q.fetch_all(&mut *tx).await? {
                    positions.push(keyed!(
                        row,
                        PositionTotals {
                            bets: row.try_get(4)?,
                            wins: row.try_get(5)?,
                            staked: row.try_get(6)?,
                            returned: row.try_get(7)?,
                        }
                    ));
                }
            }
            tx.rollback().await?;
            (totals, positions, heads)
        });
        folded.totals = totals.into_iter().collect();
        folded.positions = positions.into_iter().collect();
        Ok((folded, heads))
    }
}

/// The first way the stored aggregates differ from those the records fold to, in words;
/// positions compared only when `positions` (they add up over every table). Rows are
/// taken in id order, so the same edit is always named the same way.
pub(crate) fn first_difference(
    records: &Folded,
    stored: &Folded,
    positions: bool,
) -> Option<String> {
    let totals = Rows {
        name: "stats_totals",
        part: "table",
        counts: "rounds",
    };
    let by_position = Rows {
        name: "stats_positions",
        part: "position",
        counts: "bets",
    };
    totals
        .first_difference(&records.totals, &stored.totals)
        .or_else(|| {
            positions
                .then(|| by_position.first_difference(&records.positions, &stored.positions))
                .flatten()
        })
}

/// One aggregate table, as its differences are named.
struct Rows {
    name: &'static str,
    /// What the third part of a row's key is.
    part: &'static str,
    /// What its rows count.
    counts: &'static str,
}

impl Rows {
    fn first_difference<T: PartialEq + std::fmt::Debug>(
        &self,
        records: &HashMap<String, (&'static str, String, String, T)>,
        stored: &HashMap<String, (&'static str, String, String, T)>,
    ) -> Option<String> {
        let Rows { name, part, counts } = self;
        let row = |(scope, key, third, _): &(&str, String, String, T)| {
            format!("({scope} {key}, {part} {third})")
        };
        let mut ids: Vec<&String> = records.keys().chain(stored.keys()).collect();
        ids.sort();
        ids.dedup();
        ids.into_iter()
            .find_map(|id| match (records.get(id), stored.get(id)) {
                (Some(want), Some(got)) if want != got => Some(format!(
                    "{name} {} disagrees with the records: {}",
                    row(want),
                    field_diff(&format!("{:?}", want.3), &format!("{:?}", got.3))
                )),
                (Some(want), None) => Some(format!(
                    "{name} has no row {} that the records count",
                    row(want)
                )),
                (None, Some(got)) => Some(format!(
                    "{name} row {} counts {counts} that no record has",
                    row(got)
                )),
                _ => None,
            })
    }
}

/// The first field that differs between two `Debug` renderings of one struct.
fn field_diff(records: &str, stored: &str) -> String {
    let fields = |text: &str| -> Vec<String> {
        let inner = text
            .split_once(" { ")
            .map_or(text, |(_, rest)| rest.trim_end_matches(" }"));
        inner.split(", ").map(str::to_owned).collect()
    };
    // The money fields, which the archive keeps in minor units of the table's currency.
    let unit = |field: &str| {
        let name = field.split(':').next().unwrap_or_default();
        if ["house", "staked", "returned"].contains(&name) {
            " minor units"
        } else {
            ""
        }
    };
    fields(records)
        .into_iter()
        .zip(fields(stored))
        .find(|(a, b)| a != b)
        .map(|(a, b)| format!("records say {a}{}, the row says {b}{}", unit(&a), unit(&b)))
        .unwrap_or_else(|| "the rows differ".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(table: &str, winner: &str, voided: bool) -> RoundRow {
        RoundRow {
            round_id: String::new(),
            table_id: table.to_owned(),
            shoe_id: banco_records::ShoeId::new(table, 1).to_string(),
            shoe: 1,
            hand: 1,
            croupier: String::new(),
            betting_opened_at: 0,
            betting_closed_at: None,
            finished_at: 0,
            day: "2024-01-01".to_owned(),
            winner: Some(winner.to_owned()),
            natural: false,
            player_pair: false,
            banker_pair: false,
            voided,
            corrections: 0,
            cards: 4,
            bets: 0,
            total_stake: 0,
            total_returned: 0,
            total_refunded: 0,
            dealt: String::new(),
            player_total: None,
            banker_total: None,
            void_reason: None,
        }
    }

    #[test]
    fn runs_match_longest_streaks() {
        let plays = [
            ("T1", "banker", false),
            ("T1", "tie", false),
            ("T1", "banker", false),
            ("T1", "banker", true),
            ("T1", "player", false),
            ("T2", "player", false),
            ("T2", "player", false),
            ("T2", "player", false),
            ("T1", "player", false),
        ];
        let mut folded = Folded::default();
        for (t, w, v) in plays {
            let r = round(t, w, v);
            folded.touch(&r, &[]);
            folded.add(&r, &[]);
        }
        let day: Vec<_> = folded
            .totals
            .values()
            .filter(|t| t.0 == SCOPE_DAY)
            .collect();
        let banker = day.iter().map(|t| t.3.longest_banker).max();
        let player = day.iter().map(|t| t.3.longest_player).max();
        let mut winners: Vec<(String, String)> = plays
            .iter()
            .filter(|p| !p.2)
            .map(|p| (p.0.to_owned(), p.1.to_owned()))
            .collect();
        winners.sort_by(|a, b| a.0.cmp(&b.0));
        let (b, p) = crate::stats::longest_streaks(&winners);
        assert_eq!(banker, Some(i64::from(b)));
        assert_eq!(player, Some(i64::from(p)));
    }
}
