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
    // 3: the table's record moves to a table of its own, packed (see `crate::packed`),
    // so that a round's row is a few hundred bytes (lists and stats read rows by the
    // thousand); the hand's cards, totals and void reason join the row; what Export
    // writes for each round is rendered once, at append, and kept packed in chain order
    // (Export reads one value per round). Filled from the records already stored.
    "CREATE TABLE round_records (
        round_id TEXT PRIMARY KEY REFERENCES rounds (round_id),
        table_record {blob} NOT NULL
    );
    CREATE TABLE round_exports (
        table_id TEXT NOT NULL,
        chain_seq BIGINT NOT NULL,
        round_id TEXT NOT NULL REFERENCES rounds (round_id),
        bets BIGINT NOT NULL,
        jsonl {blob} NOT NULL,
        csv {blob} NOT NULL,
        PRIMARY KEY (table_id, chain_seq)
    ){clustered};
    ALTER TABLE rounds ADD COLUMN dealt TEXT NOT NULL DEFAULT '';
    ALTER TABLE rounds ADD COLUMN player_total BIGINT;
    ALTER TABLE rounds ADD COLUMN banker_total BIGINT;
    ALTER TABLE rounds ADD COLUMN void_reason TEXT",
    // 4: the record's old column goes; on SQLite the bets are stored in their key's order
    // (`{clustered}`), so that a round's bets are read together.
    "ALTER TABLE rounds DROP COLUMN table_record;
    CREATE TABLE bets_by_round (
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
    ){clustered};
    INSERT INTO bets_by_round SELECT round_id, player_id, position, stake, returned, refunded,
        won, rounding_remainder, rounding_denominator, finished_at FROM bets;
    DROP TABLE bets;
    ALTER TABLE bets_by_round RENAME TO bets;
    CREATE INDEX bets_player ON bets (player_id, finished_at, round_id)",
    // 5: each round's video clip: the file's name in the clip folder, its size and
    // SHA-256 (hex). Beside the round, not in it: the table's signed record does not
    // cover the clip.
    "CREATE TABLE clips (
        round_id TEXT PRIMARY KEY REFERENCES rounds (round_id),
        path TEXT NOT NULL,
        size_bytes BIGINT NOT NULL,
        sha256 TEXT NOT NULL
    )",
    // 6: why a round has no clip, as its broadcaster said (`no_video`, or how the clip was
    // lost), for rounds stored without one. Beside the round, like its clip.
    "CREATE TABLE clips_missing (
        round_id TEXT PRIMARY KEY REFERENCES rounds (round_id),
        reason TEXT NOT NULL,
        detail TEXT NOT NULL
    )",
    // 7: the table's seal of what a round's record says of its clip (the clip in `clips`,
    // or the reason in `clips_missing`), hex: see `RoundRecord.clip_signature`.
    "CREATE TABLE clip_seals (
        round_id TEXT PRIMARY KEY REFERENCES rounds (round_id),
        seal TEXT NOT NULL
    )",
    // 8: the newest signed checkpoint of each table's chain head (see
    // `TableCheckpoint`); hashes and signature in hex.
    "CREATE TABLE checkpoints (
        table_id TEXT PRIMARY KEY,
        chain_seq BIGINT NOT NULL,
        head_hash TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        signature TEXT NOT NULL,
        key_id TEXT NOT NULL
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
                    dealt: String::new(),
                    player_total: None,
                    banker_total: None,
                    void_reason: None,
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

/// Fills what migration 3 added from each stored round's record (still in the old
/// column until migration 4), through `$conn`.
macro_rules! fill_from_records {
    ($conn:expr) => {{
        use sqlx::Row as _;
        let mut after = String::new();
        loop {
            let rows = sqlx::query(
                "SELECT round_id, chain_seq, hash, table_record FROM rounds WHERE round_id > $1
                 ORDER BY round_id LIMIT $2",
            )
            .bind(after.clone())
            .bind(i64::from(REBUILD_PAGE))
            .fetch_all(&mut *$conn)
            .await?;
            if rows.is_empty() {
                break;
            }
            for r in &rows {
                after = r.try_get("round_id")?;
                let seq: i64 = r.try_get("chain_seq")?;
                let hash: String = r.try_get("hash")?;
                let bytes: Vec<u8> = r.try_get("table_record")?;
                let round = crate::record::parse_table_record(&bytes)?;
                let row = crate::record::round_row(&round);
                let lines = crate::export::lines(&round, u64::try_from(seq).unwrap_or(0), &hash);
                sqlx::query(
                    "UPDATE rounds SET dealt = $1, player_total = $2, banker_total = $3,
                        void_reason = $4 WHERE round_id = $5",
                )
                .bind(row.dealt.clone())
                .bind(row.player_total)
                .bind(row.banker_total)
                .bind(row.void_reason.clone())
                .bind(after.clone())
                .execute(&mut *$conn)
                .await?;
                sqlx::query("INSERT INTO round_records (round_id, table_record) VALUES ($1, $2)")
                    .bind(after.clone())
                    .bind(crate::packed::pack(&bytes))
                    .execute(&mut *$conn)
                    .await?;
                sqlx::query(
                    "INSERT INTO round_exports (table_id, chain_seq, round_id, bets, jsonl, csv)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(row.table_id.clone())
                .bind(seq)
                .bind(after.clone())
                .bind(row.bets)
                .bind(lines.jsonl)
                .bind(lines.csv)
                .execute(&mut *$conn)
                .await?;
            }
        }
    }};
}

/// Applies every migration not yet applied, up to `version`.
pub(super) async fn migrate(store: &Store, version: usize) -> Result<(), ArchiveError> {
    let (blob, clustered) = match store.db() {
        super::Db::Sqlite(_) => ("BLOB", " WITHOUT ROWID"),
        super::Db::Postgres(_) => ("BYTEA", ""),
    };
    on_pool!(store, |pool| {
        sqlx::query("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            .execute(pool)
            .await?;
        let current: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM schema_version")
            .fetch_one(pool)
            .await?;
        let current = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
        for (index, migration) in MIGRATIONS.iter().enumerate().take(version).skip(current) {
            let mut tx = pool.begin().await?;
            let migration = migration
                .replace("{blob}", blob)
                .replace("{clustered}", clustered);
            for statement in migration.split(';') {
                if !statement.trim().is_empty() {
                    sqlx::query(statement).execute(&mut *tx).await?;
                }
            }
            match index {
                1 => rebuild!(&mut *tx),
                2 => fill_from_records!(tx),
                _ => {}
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
