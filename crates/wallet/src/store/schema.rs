//! The schema, as versioned migrations run at open, each applied once in one transaction
//! with the bump of `schema_version`. Both backends run the same text; `{seq}` is the
//! backend's auto-numbered key, and `{clustered}` makes a table stored in its key's order
//! on SQLite (`WITHOUT ROWID`; PostgreSQL has no such clause).

use super::{Store, StoreError, on_pool};

const MIGRATIONS: &[&str] = &[
    // 1: accounts, every decided request (the movements, and the refusals answered again
    // to a retry), their postings, and what became of each debit.
    "CREATE TABLE accounts (
        player TEXT NOT NULL,
        currency TEXT NOT NULL,
        balance BIGINT NOT NULL CHECK (balance >= 0),
        blocked BOOLEAN NOT NULL,
        max_bet BIGINT,
        pending BOOLEAN NOT NULL,
        pending_max_bet BIGINT,
        pending_at BIGINT,
        raise_asked_at BIGINT,
        PRIMARY KEY (player, currency)
    );
    CREATE TABLE movements (
        seq {seq},
        tx TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        player TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount BIGINT NOT NULL,
        table_id TEXT NOT NULL,
        round_id TEXT NOT NULL,
        bet TEXT NOT NULL,
        position_total BIGINT NOT NULL,
        credit_kind TEXT NOT NULL,
        refs TEXT NOT NULL,
        delta BIGINT NOT NULL,
        balance BIGINT,
        refusal TEXT,
        at_ms BIGINT NOT NULL
    );
    CREATE INDEX movements_player ON movements (player, currency, seq);
    CREATE INDEX movements_at ON movements (at_ms, seq);
    CREATE INDEX movements_table ON movements (table_id, at_ms, seq);
    CREATE TABLE postings (
        tx TEXT NOT NULL,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount BIGINT NOT NULL,
        PRIMARY KEY (tx, account)
    );
    CREATE TABLE debit_marks (
        debit TEXT PRIMARY KEY,
        state TEXT NOT NULL
    )",
    // 2: the accounts' versions, so a table can tell the newer of two balances it was told
    // (movements stored before: no version).
    "ALTER TABLE accounts ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE movements ADD COLUMN version BIGINT",
    // 3: postings keyed by their movement's place in the order, no longer by its id. Ids
    // are spread over the whole key range (by round, then player), so each movement's two
    // postings changed an index page of their own, written to the log at every commit and
    // again at checkpoint; numbered, the postings of a commit fill the last page or two.
    "CREATE TABLE postings_by_movement (
        movement BIGINT NOT NULL,
        account TEXT NOT NULL,
        currency TEXT NOT NULL,
        amount BIGINT NOT NULL,
        PRIMARY KEY (movement, account)
    ){clustered};
    INSERT INTO postings_by_movement (movement, account, currency, amount)
        SELECT m.seq, p.account, p.currency, p.amount
        FROM postings p JOIN movements m ON m.tx = p.tx;
    DROP TABLE postings;
    ALTER TABLE postings_by_movement RENAME TO postings",
    // 4: a player's movements as a chain, each accepted movement naming the account's one
    // before it and the account its newest, in place of the index over (player, currency,
    // seq). Players' movements interleave, so that index changed a page of its own for
    // nearly every movement, written at each commit and again at checkpoint; the account's
    // row is written anyway. The chain is built from that index before it goes.
    "ALTER TABLE movements ADD COLUMN prev BIGINT;
    ALTER TABLE accounts ADD COLUMN last_movement BIGINT;
    UPDATE movements SET prev = (
        SELECT MAX(earlier.seq) FROM movements earlier
        WHERE earlier.player = movements.player AND earlier.currency = movements.currency
            AND earlier.refusal IS NULL AND earlier.seq < movements.seq
    ) WHERE refusal IS NULL;
    UPDATE accounts SET last_movement = (
        SELECT MAX(m.seq) FROM movements m
        WHERE m.player = accounts.player AND m.currency = accounts.currency
            AND m.refusal IS NULL
    );
    DROP INDEX movements_player",
];

/// Applies every migration not yet applied.
pub(super) async fn migrate(store: &Store) -> Result<(), StoreError> {
    let (seq, clustered) = match store.db() {
        super::Db::Sqlite(_) => ("INTEGER PRIMARY KEY AUTOINCREMENT", " WITHOUT ROWID"),
        super::Db::Postgres(_) => ("BIGSERIAL PRIMARY KEY", ""),
    };
    on_pool!(store.shared, |pool| {
        sqlx::query("CREATE TABLE IF NOT EXISTS wallet_schema_version (version BIGINT NOT NULL)")
            .execute(pool)
            .await?;
        let mut tx = pool.begin().await?;
        let current: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM wallet_schema_version")
                .fetch_one(&mut *tx)
                .await?;
        let current = usize::try_from(current.unwrap_or(0)).unwrap_or(0);
        if current > MIGRATIONS.len() {
            return Err(StoreError::NewerSchema {
                found: current,
                known: MIGRATIONS.len(),
            });
        }
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(current) {
            let migration = migration
                .replace("{seq}", seq)
                .replace("{clustered}", clustered);
            for statement in migration.split(';') {
                if !statement.trim().is_empty() {
                    sqlx::query(statement).execute(&mut *tx).await?;
                }
            }
            let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
            sqlx::query("INSERT INTO wallet_schema_version (version) VALUES ($1)")
                .bind(version)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    })
}

/// Refuses a database whose schema is not the one this banco writes (for a reader, which
/// migrates nothing).
pub(super) async fn check(store: &Store) -> Result<(), StoreError> {
    let found: Option<i64> = on_pool!(store.shared, |pool| {
        sqlx::query_scalar("SELECT MAX(version) FROM wallet_schema_version")
            .fetch_one(pool)
            .await?
    });
    let found = usize::try_from(found.unwrap_or(0)).unwrap_or(0);
    let known = MIGRATIONS.len();
    match found.cmp(&known) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(StoreError::NewerSchema { found, known }),
        std::cmp::Ordering::Less => Err(StoreError::OlderSchema { found, known }),
    }
}
