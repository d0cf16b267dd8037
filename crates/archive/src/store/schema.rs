//! The schema, as versioned migrations run at open. Each is applied once, in one
//! transaction with the bump of `schema_version`.

use super::{Store, on_pool};
use crate::error::ArchiveError;

/// Migrations in order; `{blob}` is the backend's byte-string type.
const MIGRATIONS: &[&str] = &[
    // 1: rounds and bets.
    "CREATE TABLE rounds (
        round_id TEXT PRIMARY KEY,
        table_id TEXT NOT NULL,
        chain_seq BIGINT NOT NULL,
        shoe_id TEXT NOT NULL,
        shoe BIGINT NOT NULL,
        hand BIGINT NOT NULL,
        croupier TEXT NOT NULL,
        betting_opened_at BIGINT NOT NULL,
        betting_closed_at BIGINT,
        finished_at BIGINT NOT NULL,
        day TEXT NOT NULL,
        winner TEXT,
        is_natural BOOLEAN NOT NULL,
        player_pair BOOLEAN NOT NULL,
        banker_pair BOOLEAN NOT NULL,
        voided BOOLEAN NOT NULL,
        corrections BIGINT NOT NULL,
        cards BIGINT NOT NULL,
        bets BIGINT NOT NULL,
        total_stake BIGINT NOT NULL,
        total_returned BIGINT NOT NULL,
        total_refunded BIGINT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        signature TEXT NOT NULL,
        key_id TEXT NOT NULL,
        table_record {blob} NOT NULL,
        UNIQUE (table_id, chain_seq)
    );
    CREATE INDEX rounds_shoe ON rounds (shoe_id, chain_seq);
    CREATE INDEX rounds_finished ON rounds (finished_at, round_id);
    CREATE INDEX rounds_croupier ON rounds (croupier);
    CREATE INDEX rounds_day ON rounds (day);
    CREATE TABLE bets (
        round_id TEXT NOT NULL REFERENCES rounds (round_id),
        player_id TEXT NOT NULL,
        position TEXT NOT NULL,
        stake BIGINT NOT NULL,
        returned BIGINT NOT NULL,
        refunded BIGINT NOT NULL,
        won BOOLEAN NOT NULL,
        rounding_remainder BIGINT NOT NULL,
        rounding_denominator BIGINT NOT NULL,
        finished_at BIGINT NOT NULL,
        PRIMARY KEY (round_id, player_id, position)
    );
    CREATE INDEX bets_player ON bets (player_id, finished_at, round_id)",
    // 2: the Stats aggregates, kept by every append (see `store::aggregate`); filled from
    // the rounds already stored when this migration runs.
    "CREATE TABLE stats_totals (
        id TEXT PRIMARY KEY,
        scope TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        table_id TEXT NOT NULL,
        rounds BIGINT NOT NULL,
        voided BIGINT NOT NULL,
        corrections BIGINT NOT NULL,
        banker BIGINT NOT NULL,
        player BIGINT NOT NULL,
        tie BIGINT NOT NULL,
        naturals BIGINT NOT NULL,
        player_pairs BIGINT NOT NULL,
        banker_pairs BIGINT NOT NULL,
        house BIGINT NOT NULL,
        run_winner TEXT NOT NULL,
        run_length BIGINT NOT NULL,
        longest_banker BIGINT NOT NULL,
        longest_player BIGINT NOT NULL
    );
    CREATE INDEX stats_totals_scope ON stats_totals (scope, scope_key);
    CREATE TABLE stats_positions (
        id TEXT PRIMARY KEY,
        scope TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        position TEXT NOT NULL,
        bets BIGINT NOT NULL,
        wins BIGINT NOT NULL,
        staked BIGINT NOT NULL,
        returned BIGINT NOT NULL
    );
    CREATE INDEX stats_positions_scope ON stats_positions (scope, scope_key)",
    // 3: each round's video clip: the file's name in the clip folder, its size and
    // SHA-256 (hex). Beside the round, not in it: the table's signed record does not
    // cover the clip.
    "CREATE TABLE clips (
        round_id TEXT PRIMARY KEY REFERENCES rounds (round_id),
        path TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        sha256 TEXT NOT NULL
    )",
];

/// Rounds read at a time when the aggregates are filled from stored rounds.
const REBUILD_PAGE: u32 = 5000;

/// Fills the Stats aggregates from every stored round, in chain order, through `$conn`.
macro_rules! rebuild {
    ($conn:expr) => {{
        use sqlx::Row as _;
        let mut folded = super::aggregate::Folded::default();
        let mut after = (String::new(), 0i64);
        loop {
            let rows = sqlx::query(
                "SELECT round_id, table_id, chain_seq, shoe_id, croupier, day, winner,
                    is_natural, player_pair, banker_pair, voided, corrections, total_stake,
                    total_returned, total_refunded
                 FROM rounds WHERE table_id > $1 OR (table_id = $2 AND chain_seq > $3)
                 ORDER BY table_id, chain_seq LIMIT $4",
            )
            .bind(after.0.clone())
            .bind(after.0.clone())
            .bind(after.1)
            .bind(i64::from(REBUILD_PAGE))
            .fetch_all($conn)
            .await?;
            if rows.is_empty() {
                break;
            }
            let mut page = Vec::with_capacity(rows.len());
            for r in &rows {
                after = (r.try_get("table_id")?, r.try_get("chain_seq")?);
                page.push(crate::record::RoundRow {
                    round_id: r.try_get("round_id")?,
                    table_id: r.try_get("table_id")?,
                    shoe_id: r.try_get("shoe_id")?,
                    shoe: 0,
                    hand: 0,
                    croupier: r.try_get("croupier")?,
                    betting_opened_at: 0,
                    betting_closed_at: None,
                    finished_at: 0,
                    day: r.try_get("day")?,
                    winner: r.try_get("winner")?,
                    natural: r.try_get("is_natural")?,
                    player_pair: r.try_get("player_pair")?,
                    banker_pair: r.try_get("banker_pair")?,
                    voided: r.try_get("voided")?,
                    corrections: r.try_get("corrections")?,
                    cards: 0,
                    bets: 0,
                    total_stake: r.try_get("total_stake")?,
                    total_returned: r.try_get("total_returned")?,
                    total_refunded: r.try_get("total_refunded")?,
                });
            }
            let mut bets: std::collections::HashMap<String, Vec<crate::record::BetRow>> =
                std::collections::HashMap::new();
            let mut q = sqlx::QueryBuilder::new(
                "SELECT round_id, position, stake, returned, won FROM bets WHERE round_id IN (",
            );
            let mut list = q.separated(", ");
            for r in &page {
                list.push_bind(r.round_id.as_str());
            }
            q.push(")");
            for b in q.build().persistent(false).fetch_all($conn).await? {
                bets.entry(b.try_get("round_id")?)
                    .or_default()
                    .push(crate::record::BetRow {
                        player_id: String::new(),
                        position: b.try_get("position")?,
                        stake: b.try_get("stake")?,
                        returned: b.try_get("returned")?,
                        refunded: 0,
                        won: b.try_get("won")?,
                        rounding_remainder: 0,
                        rounding_denominator: 1,
                    });
            }
            for r in &page {
                let b = bets.get(&r.round_id).map_or(&[][..], Vec::as_slice);
                folded.touch(r, b);
                folded.add(r, b);
            }
        }
        super::aggregate::save!(folded, $conn);
    }};
}

/// Applies every migration not yet applied.
pub(super) async fn migrate(store: &Store) -> Result<(), ArchiveError> {
    let blob = match store.db() {
        super::Db::Sqlite(_) => "BLOB",
        super::Db::Postgres(_) => "BYTEA",
    };
    on_pool!(store, |pool| {
        sqlx::query("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            .execute(pool)
            .await?;
        let current: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM schema_version")
            .fetch_one(pool)
            .await?;
        let current = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(current) {
            let mut tx = pool.begin().await?;
            for statement in migration.replace("{blob}", blob).split(';') {
                if !statement.trim().is_empty() {
                    sqlx::query(statement).execute(&mut *tx).await?;
                }
            }
            if index == 1 {
                rebuild!(&mut *tx);
            }
            let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
            sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
                .bind(version)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        }
        Ok(())
    })
}
