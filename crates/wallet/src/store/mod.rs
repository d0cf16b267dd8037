//! The wallet's own store: one account per player and currency, in an SQLite file (the
//! default: WAL, `synchronous=FULL`, so nothing acknowledged is lost, even on power loss)
//! or PostgreSQL (several processes on one database). Both run the same SQL
//! text, written once and expanded for each pool by [`on_pool!`].
//!
//! Double entry: every movement is a row with its id, kind, player, currency, amount,
//! table, round, bet and time, and two postings that sum to zero, between the player's
//! account (`player:<id>`) and the table's clearing account of stakes and returns
//! (`bets:<table>`) or the `cashier`. A player's balance is never negative (checked as each
//! movement is decided, and by the database itself). Every request is decided by the
//! store's committer ([`commit`]), many in one transaction; reads go to the pool.
//!
//! [`Store`] implements [`Wallet`](crate::Wallet) and [`Cashier`](crate::Cashier).

use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use sqlx::QueryBuilder;
use sqlx::postgres::{PgConnectOptions, PgPool};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqliteSynchronous};
use tokio::sync::broadcast;

use crate::api::{
    AccountView, BoxFuture, Cancel, Cash, Cashier, Changes, Credit, Debit, LimitChange, Receipt,
    SelfLimit, TableRounds, TxId, Wallet, WalletError,
};

mod checkpoint;
mod clock;
mod commit;
mod decide;
mod fields;
mod metrics;
mod postgres;
mod schema;
mod sqlite;

pub use checkpoint::CheckpointStats;
use checkpoint::CheckpointStatsHandle;
pub use clock::{Clock, ManualClock, SystemClock};
pub use commit::CommitStats;
pub use decide::{Kind, LimitPolicy};
pub use metrics::StoreMetrics;

use commit::Committer;
use decide::{AccountRow, Answer, CashKind, Link, MovementRow, Op};
use fields::{Fields, Sqlx};

/// Why the store could not open or answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot start the wallet's committer: {0}")]
    Thread(std::io::Error),
    #[error("the wallet's database was opened to read only: it records no movement")]
    ReadOnly,
    #[error("`{0}` is neither sqlite://PATH nor postgres://…")]
    UnknownBackend(String),
    #[error(
        "`{0}`: a wallet in memory would lose every balance when it stops; give a file, sqlite://PATH"
    )]
    InMemory(String),
    #[error("the database's wallet schema is version {found}, newer than this banco's {known}")]
    NewerSchema { found: usize, known: usize },
    #[error(
        "the database's wallet schema is version {found}, older than this banco's {known}: open it once with `banco wallet` to bring it up to date"
    )]
    OlderSchema { found: usize, known: usize },
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    #[error(
        "page token {token} names no movement of {player} in {currency}: start again from the first page"
    )]
    UnknownPage {
        token: i64,
        player: String,
        currency: String,
    },
}

/// The pool of either backend.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A pool of `connections` on either backend; which one, the caller's `Db` variant says.
async fn pool<DB: sqlx::Database>(
    connect: <DB::Connection as sqlx::Connection>::Options,
    connections: u32,
) -> Result<sqlx::Pool<DB>, sqlx::Error> {
    sqlx::pool::PoolOptions::<DB>::new()
        .max_connections(connections)
        .connect_with(connect)
        .await
}

/// The database a store's URL names: both ways of opening one must read it alike.
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn of(url: &str) -> Result<Backend, StoreError> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Backend::Postgres)
        } else {
            Err(StoreError::UnknownBackend(url.to_owned()))
        }
    }
}

/// Runs `$body` with `$pool` bound to the concrete pool of either backend: the same code,
/// type-checked once per backend.
macro_rules! on_pool {
    ($shared:expr, |$pool:ident| $body:expr) => {
        match &$shared.db {
            $crate::store::Db::Sqlite($pool) => $body,
            $crate::store::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// How a store is opened.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    pub limits: LimitPolicy,
    pub clock: Arc<dyn Clock>,
    pub metrics: Option<StoreMetrics>,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            limits: LimitPolicy::default(),
            clock: Arc::new(SystemClock),
            metrics: None,
        }
    }
}

/// What writes a store's movements, moved into its committer as the store opens: on
/// SQLite the committer's own connection, on a thread of its own ([`sqlite`]), on
/// PostgreSQL a connection of the committer's own ([`postgres`]); nothing, for a store
/// opened to read.
#[derive(Debug)]
pub(crate) enum Writer {
    Sqlite(sqlite::SqliteWriter),
    Postgres(PgPool),
    ReadOnly,
}

/// What the store's handle and its committer share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// For reads.
    pub(crate) db: Db,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) policy: LimitPolicy,
    pub(crate) changes: broadcast::Sender<Changes>,
    pub(crate) metrics: Option<StoreMetrics>,
    /// The WAL copier's (SQLite).
    checkpoints: Option<CheckpointStatsHandle>,
}

/// An open wallet database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    shared: Arc<Shared>,
    commits: Arc<Committer>,
}

/// One movement of money, as a statement or a reconciliation lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Movement {
    /// Its place in the store's order of movements (the cursor of the next page).
    pub seq: i64,
    pub tx: TxId,
    pub kind: Kind,
    pub player: String,
    pub currency: String,
    /// As asked (a cancel: the debit's amount).
    pub amount: i64,
    /// Signed change of the player's balance (a cancel of a debit not taken: 0).
    pub delta: i64,
    /// The player's balance after it.
    pub balance: i64,
    /// Empty for the cashier.
    pub table: String,
    pub round: String,
    pub bet: String,
    /// Unix milliseconds.
    pub at_ms: u64,
}

/// A page of movements, and where the next one starts (`None`: this is the last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub movements: Vec<Movement>,
    pub next: Option<i64>,
}

/// Which movements a reconciliation lists: from `from_ms` (inclusive) to `to_ms`
/// (exclusive), of one table or all, oldest first, after the cursor `after`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MovementFilter {
    pub from_ms: Option<u64>,
    pub to_ms: Option<u64>,
    /// `Some("")`: the cashier's.
    pub table: Option<String>,
    pub after: Option<i64>,
}

/// The most a page holds.
pub const MAX_PAGE: u32 = 1_000;

/// Prepared statements each connection keeps: every shape of every multi-row statement
/// ([`pieces`]) and the queries, with room to spare.
const STATEMENT_CACHE: usize = 256;

/// The page size of a wallet file made new (one made before keeps its own: SQLite fixes it
/// at creation). A commit writes each page it changed to the WAL, as two writes; with 8 KiB
/// pages a commit of 30 debits writes 25 pages instead of 37, the scattered ones (the ids'
/// index, the accounts) as many but the appended ones half as many. Offered 20,000 bets a
/// second (`banco-bench bets --rate 20000`), p99 was 26.4–27.6 ms against 34.0–37.2 with
/// 4 KiB pages, in runs side by side; 16 KiB gave 24.9–25.6 ms for twice the bytes of 4.
/// (Measured while tables numbered debits by player, journal format 1, which scattered the
/// ids' index far more than format 2 does.)
pub const PAGE_BYTES: u32 = 8_192;

pub(crate) const SELECT_ACCOUNT: &str = "SELECT player, currency, balance, blocked, max_bet, \
    pending, pending_max_bet, pending_at, raise_asked_at, version, last_movement FROM accounts";

pub(crate) const SELECT_MOVEMENT: &str = "SELECT seq, tx, kind, player, currency, amount, \
    table_id, round_id, bet, position_total, credit_kind, refs, delta, balance, version, prev, \
    refusal, at_ms FROM movements";

impl Store {
    /// Opens (creating if need be) the database at `url`, `sqlite://PATH` or
    /// `postgres://…`, and brings its schema up to date.
    pub async fn open(url: &str, options: StoreOptions) -> Result<Store, StoreError> {
        // The committer writes through a connection of its own, always the same one: on
        // SQLite a connection's page cache is dropped whenever another one has written, so
        // a writer taken in turn from a pool read every page it touched from the file
        // again; and its statements are prepared once.
        let store = match Backend::of(url)? {
            Backend::Sqlite => {
                // (And the committer's own connection would open a database of its own.)
                if url.contains(":memory:") || url.contains("mode=memory") {
                    return Err(StoreError::InMemory(url.to_owned()));
                }
                let connect = SqliteConnectOptions::from_str(url)?
                    .create_if_missing(true)
                    // Before WAL: a file's page size is set as it is made.
                    .page_size(PAGE_BYTES)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(10))
                    .statement_cache_capacity(STATEMENT_CACHE);
                let path = connect.get_filename().to_owned();
                // The pool creates the file (and sets it to WAL) as it connects.
                let db = Db::Sqlite(pool(connect, 4).await?);
                let writer = Writer::Sqlite(sqlite::SqliteWriter::open(
                    &path,
                    checkpoint::Pace::default(),
                )?);
                Store::on(db, writer, options)?
            }
            Backend::Postgres => {
                // Every statement planned for the values it is given. A prepared statement
                // otherwise keeps, after its fifth use, one plan for any values, chosen from
                // the table as it was then: on a new wallet an empty one, so the look-up of
                // ids became a scan of every movement (20 ms a batch, 3.5 times fewer
                // debits a second) until the server next analysed the table.
                let connect = PgConnectOptions::from_str(url)?
                    .statement_cache_capacity(STATEMENT_CACHE)
                    .options([("plan_cache_mode", "force_custom_plan")]);
                let db = Db::Postgres(pool(connect.clone(), 8).await?);
                let writer = Writer::Postgres(pool(connect, 1).await?);
                Store::on(db, writer, options)?
            }
        };
        schema::migrate(&store).await?;
        Ok(store)
    }

    /// The store on these pools, its committer started (on SQLite a thread; else a task
    /// on the current runtime).
    fn on(db: Db, writer: Writer, options: StoreOptions) -> Result<Store, StoreError> {
        let checkpoints = match &writer {
            Writer::Sqlite(writer) => Some(writer.checkpoint_stats()),
            Writer::Postgres(_) | Writer::ReadOnly => None,
        };
        let shared = Arc::new(Shared {
            db,
            clock: options.clock,
            policy: options.limits,
            changes: broadcast::channel(4096).0,
            metrics: options.metrics,
            checkpoints,
        });
        let (commits, queue) = Committer::new(Arc::clone(&shared));
        match writer {
            Writer::Sqlite(writer) => writer.start(queue)?,
            Writer::Postgres(pool) => drop(tokio::spawn(commit::run(queue, pool))),
            Writer::ReadOnly => drop(tokio::spawn(commit::run(queue, commit::ReadOnly))),
        }
        Ok(Store {
            shared,
            commits: Arc::new(commits),
        })
    }

    /// Opens the database at `url` (`sqlite://PATH`, `postgres://…`) to read only: an
    /// auditor's reconciliation beside a running wallet. Nothing is created or migrated
    /// (an SQLite file must exist; a PostgreSQL session is read-only), and the schema must
    /// be the one this banco writes; any movement asked of it fails.
    pub async fn open_read_only(url: &str) -> Result<Store, StoreError> {
        let db = match Backend::of(url)? {
            Backend::Sqlite => {
                let connect = SqliteConnectOptions::from_str(url)?
                    .read_only(true)
                    .busy_timeout(Duration::from_secs(10));
                Db::Sqlite(pool(connect, 2).await?)
            }
            Backend::Postgres => {
                let connect = PgConnectOptions::from_str(url)?
                    .options([("default_transaction_read_only", "on")]);
                Db::Postgres(pool(connect, 2).await?)
            }
        };
        let store = Store::on(db, Writer::ReadOnly, StoreOptions::default())?;
        schema::check(&store).await?;
        Ok(store)
    }

    pub(crate) fn db(&self) -> &Db {
        &self.shared.db
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self.shared.db {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Closes every connection (an SQLite file is then complete without its WAL).
    pub async fn close(&self) {
        self.commits.close().await;
        on_pool!(self.shared, |pool| pool.close().await);
    }

    /// What group commit has done since the store was opened (its largest and longest
    /// commit since then, or since [`Store::restart_commit_maxima`]).
    pub fn commit_stats(&self) -> CommitStats {
        self.commits.stats()
    }

    /// What the copier of an SQLite store's WAL has done since the store was opened
    /// (`None` on PostgreSQL).
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.shared
            .checkpoints
            .as_ref()
            .map(CheckpointStatsHandle::stats)
    }

    /// The largest and the longest commit count from now on: counts and sums can be told
    /// apart between two readings, a maximum cannot, so a reader timing a stretch (a
    /// benchmark after its warm-up) restarts them as it starts.
    pub fn restart_commit_maxima(&self) {
        self.commits.restart_maxima();
    }

    async fn submit(&self, op: Op) -> Result<Answer, WalletError> {
        self.commits.submit(op).await
    }

    async fn movement(&self, op: Op) -> Result<Receipt, WalletError> {
        match self.submit(op).await? {
            Answer::Receipt(receipt) => Ok(receipt),
            other => Err(unexpected(&other)),
        }
    }

    /// The player's account now (an account never used reads empty).
    pub async fn account_view(
        &self,
        player: &str,
        currency: &str,
    ) -> Result<AccountView, WalletError> {
        decide::check_account(player, currency)?;
        let now_ms = self.shared.clock.now_ms();
        let row = on_pool!(self.shared, |pool| {
            let mut q = QueryBuilder::new(SELECT_ACCOUNT);
            q.push(" WHERE player = ")
                .push_bind(player)
                .push(" AND currency = ")
                .push_bind(currency);
            match q.build().fetch_optional(pool).await {
                Ok(Some(row)) => account_row(&Sqlx(&row)),
                Ok(None) => Ok(AccountRow::empty(player, currency)),
                Err(e) => Err(StoreError::from(e)),
            }
        })
        .map_err(|e| read_failed(&e))?;
        Ok(row.view(now_ms))
    }

    /// A cashier blocks (no more debits; credits, cancels and the cashier's movements
    /// still go through) or unblocks the account.
    pub async fn set_blocked(
        &self,
        player: &str,
        currency: &str,
        blocked: bool,
    ) -> Result<AccountView, WalletError> {
        match self
            .submit(Op::SetBlocked {
                player: player.to_owned(),
                currency: currency.to_owned(),
                blocked,
            })
            .await?
        {
            Answer::Account(view) => Ok(view),
            other => Err(unexpected(&other)),
        }
    }

    /// The player's movements in `currency`, newest first, `page_size` at most (up to
    /// [`MAX_PAGE`]), after the movement `before` (a page's `next`) in that order.
    ///
    /// Each accepted movement names the account's one before it, and the account its
    /// newest: the statement walks that chain back, so no index over every player's
    /// movements is kept up to date at each commit for it.
    pub async fn statement(
        &self,
        player: &str,
        currency: &str,
        before: Option<i64>,
        page_size: u32,
    ) -> Result<Page, StoreError> {
        let size = page_size.clamp(1, MAX_PAGE);
        let rows = on_pool!(self.shared, |pool| {
            let start: Option<i64> = match before {
                None => {
                    let last: Option<Option<i64>> = sqlx::query_scalar(
                        "SELECT last_movement FROM accounts WHERE player = $1 AND currency = $2",
                    )
                    .bind(player)
                    .bind(currency)
                    .fetch_optional(pool)
                    .await?;
                    last.flatten()
                }
                Some(token) => {
                    // Only a movement of this account leads on to its older ones.
                    let prev: Option<Option<i64>> = sqlx::query_scalar(
                        "SELECT prev FROM movements WHERE seq = $1 AND player = $2 \
                         AND currency = $3 AND refusal IS NULL",
                    )
                    .bind(token)
                    .bind(player)
                    .bind(currency)
                    .fetch_optional(pool)
                    .await?;
                    prev.ok_or_else(|| StoreError::UnknownPage {
                        token,
                        player: player.to_owned(),
                        currency: currency.to_owned(),
                    })?
                }
            };
            let Some(start) = start else {
                return Ok(page(Vec::new(), size));
            };
            let rows = sqlx::query(&format!(
                "WITH RECURSIVE chain (link, n) AS (
                    SELECT CAST($1 AS BIGINT), 1
                    UNION ALL
                    SELECT m.prev, chain.n + 1 FROM chain
                    JOIN movements m ON m.seq = chain.link
                    WHERE m.prev IS NOT NULL AND chain.n < $2
                )
                {SELECT_MOVEMENT} JOIN chain ON movements.seq = chain.link
                ORDER BY chain.n"
            ))
            .bind(start)
            .bind(i64::from(size) + 1)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| listed(&Sqlx(row)))
                .collect::<Result<Vec<_>, StoreError>>()?
        });
        Ok(page(rows, size))
    }

    /// The round of `table`'s newest movement (taken or refused), if it has any: read
    /// from the end of the index over (table, time), so at once however many it has.
    pub async fn newest_round_of_table(&self, table: &str) -> Result<Option<String>, StoreError> {
        Ok(on_pool!(self.shared, |pool| {
            sqlx::query_scalar::<_, String>(
                "SELECT round_id FROM movements WHERE table_id = $1 \
                 ORDER BY at_ms DESC, seq DESC LIMIT 1",
            )
            .bind(table)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Movements for a reconciliation, oldest first (see [`MovementFilter`]).
    pub async fn movements(
        &self,
        filter: &MovementFilter,
        page_size: u32,
    ) -> Result<Page, StoreError> {
        let size = page_size.clamp(1, MAX_PAGE);
        let ms = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
        let rows = on_pool!(self.shared, |pool| {
            let mut q = QueryBuilder::new(SELECT_MOVEMENT);
            q.push(" WHERE refusal IS NULL AND seq > ")
                .push_bind(filter.after.unwrap_or(0));
            if let Some(from) = filter.from_ms {
                q.push(" AND at_ms >= ").push_bind(ms(from));
            }
            if let Some(to) = filter.to_ms {
                q.push(" AND at_ms < ").push_bind(ms(to));
            }
            if let Some(table) = &filter.table {
                q.push(" AND table_id = ").push_bind(table.as_str());
            }
            q.push(" ORDER BY seq LIMIT ")
                .push_bind(i64::from(size) + 1);
            let rows = q.build().fetch_all(pool).await?;
            rows.iter()
                .map(|row| listed(&Sqlx(row)))
                .collect::<Result<Vec<_>, StoreError>>()?
        });
        Ok(page(rows, size))
    }

    /// Checks the books: every movement's postings sum to zero, every player's balance is
    /// the sum of that account's postings, and each account's movements are chained
    /// whole ([`Store::chain_faults`]). Each fault found, in words.
    pub async fn check_books(&self) -> Result<Vec<String>, StoreError> {
        let mut faults = on_pool!(self.shared, |pool| {
            let mut faults = Vec::new();
            let unbalanced: Vec<(i64, Option<String>, i64)> = sqlx::query_as(
                "SELECT p.movement, m.tx, CAST(SUM(p.amount) AS BIGINT)
                 FROM postings p LEFT JOIN movements m ON m.seq = p.movement
                 GROUP BY p.movement, m.tx HAVING SUM(p.amount) <> 0 OR m.tx IS NULL",
            )
            .fetch_all(pool)
            .await?;
            for (movement, tx, sum) in unbalanced {
                faults.push(match tx {
                    Some(tx) => format!("the postings of {tx} sum to {sum}, not 0"),
                    None => format!("postings of movement {movement}, which is not stored"),
                });
            }
            let wrong: Vec<(String, String, i64, Option<i64>)> = sqlx::query_as(
                // One pass over the postings, summed by account: postings are keyed by
                // movement, so a sum looked up per account would read them all each time.
                "SELECT a.player, a.currency, a.balance, s.posted
                 FROM accounts a LEFT JOIN (
                    SELECT account, currency, CAST(SUM(amount) AS BIGINT) AS posted
                    FROM postings GROUP BY account, currency
                 ) s ON s.account = 'player:' || a.player AND s.currency = a.currency",
            )
            .fetch_all(pool)
            .await?;
            for (player, currency, balance, posted) in wrong {
                let posted = posted.unwrap_or(0);
                if posted != balance {
                    faults.push(format!(
                        "{player}'s {currency} balance is {balance}, its postings sum to {posted}"
                    ));
                }
            }
            faults
        });
        faults.extend(self.chain_faults().await?);
        Ok(faults)
    }

    /// Checks that each account's movements form one chain from its newest back to its
    /// first, which is what its statement lists: every link is to an earlier accepted
    /// movement of the same account, no two movements follow the same one (nor more than
    /// one start), and the account names its newest.
    async fn chain_faults(&self) -> Result<Vec<String>, StoreError> {
        let faults = on_pool!(self.shared, |pool| {
            let mut faults = Vec::new();
            let astray: Vec<(String, i64)> = sqlx::query_as(
                "SELECT m.tx, m.prev FROM movements m LEFT JOIN movements p ON p.seq = m.prev
                 WHERE m.refusal IS NULL AND m.prev IS NOT NULL AND (p.seq IS NULL
                    OR p.player <> m.player OR p.currency <> m.currency
                    OR p.refusal IS NOT NULL OR p.seq >= m.seq)",
            )
            .fetch_all(pool)
            .await?;
            for (tx, prev) in astray {
                faults.push(format!(
                    "{tx} follows movement {prev}, which is not an earlier movement of its account"
                ));
            }
            let forks: Vec<(String, String, Option<i64>, i64)> = sqlx::query_as(
                "SELECT player, currency, prev, COUNT(*) FROM movements WHERE refusal IS NULL
                 GROUP BY player, currency, prev HAVING COUNT(*) > 1",
            )
            .fetch_all(pool)
            .await?;
            for (player, currency, prev, count) in forks {
                faults.push(match prev {
                    Some(prev) => format!(
                        "{count} movements of {player} in {currency} follow movement {prev}: its statement misses all but one"
                    ),
                    None => format!(
                        "{count} movements of {player} in {currency} are its first: its statement misses all but one"
                    ),
                });
            }
            let heads: Vec<(String, String, Option<i64>, Option<i64>)> = sqlx::query_as(
                "SELECT a.player, a.currency, a.last_movement, n.newest FROM accounts a
                 LEFT JOIN (
                    SELECT player, currency, MAX(seq) AS newest FROM movements
                    WHERE refusal IS NULL GROUP BY player, currency
                 ) n ON n.player = a.player AND n.currency = a.currency
                 WHERE (a.last_movement IS NULL AND n.newest IS NOT NULL)
                    OR (a.last_movement IS NOT NULL
                        AND (n.newest IS NULL OR n.newest <> a.last_movement))",
            )
            .fetch_all(pool)
            .await?;
            for (player, currency, last, newest) in heads {
                let account = format!("{player}'s {currency} account");
                faults.push(match (last, newest) {
                    (Some(last), Some(newest)) => {
                        format!("{account} names movement {last} as its newest, not {newest}")
                    }
                    (None, Some(newest)) => {
                        format!("{account} names no movement as its newest, not {newest}")
                    }
                    (Some(last), None) => {
                        format!("{account} names movement {last} as its newest, but has none")
                    }
                    (None, None) => continue,
                });
            }
            faults
        });
        Ok(faults)
    }
}

fn page(mut rows: Vec<(i64, Movement)>, size: u32) -> Page {
    let more = rows.len() > size as usize;
    rows.truncate(size as usize);
    Page {
        next: if more {
            rows.last().map(|(seq, _)| *seq)
        } else {
            None
        },
        movements: rows.into_iter().map(|(_, m)| m).collect(),
    }
}

fn unexpected(answer: &Answer) -> WalletError {
    WalletError::Unavailable(format!("the store answered {answer:?} to another request"))
}

fn read_failed(e: &StoreError) -> WalletError {
    WalletError::Unavailable(format!("the wallet's database failed: {e}"))
}

/// `items` in pieces whose sizes are powers of two, `max` at most (itself one): a
/// multi-row statement then has one of a few shapes, each prepared once per connection and
/// reused, where one of any length would be parsed anew each time.
pub(crate) fn pieces<T>(items: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    let mut rest = items;
    std::iter::from_fn(move || {
        let size = max.min(1 << rest.len().checked_ilog2()?);
        let (piece, after) = rest.split_at(size);
        rest = after;
        Some(piece)
    })
}

pub(crate) fn account_row(row: &impl Fields) -> Result<AccountRow, StoreError> {
    let pending = row.flag("pending")?;
    let pending_at = row.count("pending_at")?;
    Ok(AccountRow {
        player: row.text_of("player")?,
        currency: row.text_of("currency")?,
        balance: row.int_of("balance")?,
        blocked: row.flag("blocked")?,
        max_bet: row.int("max_bet")?,
        pending: match (pending, pending_at) {
            (true, Some(at)) => Some((row.int("pending_max_bet")?, at)),
            _ => None,
        },
        raise_asked_at: row.count("raise_asked_at")?,
        version: row.count("version")?.unwrap_or(0),
        last: row.int("last_movement")?.map(Link::Stored),
    })
}

/// A movement as listed, with its place in the order.
fn listed(row: &impl Fields) -> Result<(i64, Movement), StoreError> {
    let seq = row.int_of("seq")?;
    let movement = Movement {
        seq,
        ..Movement::from(movement_row(row)?)
    };
    Ok((seq, movement))
}

pub(crate) fn movement_row(row: &impl Fields) -> Result<MovementRow, StoreError> {
    let kind = row.text_of("kind")?;
    Ok(MovementRow {
        tx: commit::tx_id(row.text_of("tx")?)?,
        kind: Kind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown movement kind `{kind}`")))?,
        player: row.text_of("player")?,
        currency: row.text_of("currency")?,
        amount: row.int_of("amount")?,
        table: row.text_of("table_id")?,
        round: row.text_of("round_id")?,
        bet: row.text_of("bet")?,
        position_total: row.int_of("position_total")?,
        credit_kind: row.text_of("credit_kind")?,
        refs: row.text_of("refs")?,
        delta: row.int_of("delta")?,
        balance: row.int("balance")?,
        version: row.count("version")?,
        prev: row.int("prev")?.map(Link::Stored),
        refusal: row
            .text("refusal")?
            .map(|r| serde_json::from_str(&r).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()?,
        at_ms: row.int_of("at_ms")?,
    })
}

impl From<MovementRow> for Movement {
    fn from(row: MovementRow) -> Movement {
        Movement {
            seq: 0,
            tx: row.tx,
            kind: row.kind,
            player: row.player,
            currency: row.currency,
            amount: row.amount,
            delta: row.delta,
            balance: row.balance.unwrap_or(0),
            table: row.table,
            round: row.round,
            bet: row.bet,
            at_ms: u64::try_from(row.at_ms).unwrap_or(0),
        }
    }
}

/// Refuses a debit no state could take (its amount, its position total, its account's
/// names), as the store would refuse it, without asking the store.
pub(crate) fn check_debit(debit: &Debit) -> Result<(), WalletError> {
    Op::Debit(debit.clone()).check()
}

/// The metric label of an answer: `ok`, or the refusal's name.
pub(crate) fn result_label(answer: &Result<Answer, WalletError>) -> &'static str {
    match answer {
        Ok(Answer::Receipt(r)) if r.replayed => "replayed",
        Ok(_) => "ok",
        Err(e) => match e {
            WalletError::InsufficientFunds { .. } => "insufficient_funds",
            WalletError::SelfLimit { .. } => "self_limit",
            WalletError::AccountBlocked => "account_blocked",
            WalletError::InvalidSession(_) => "invalid_session",
            WalletError::Unavailable(_) => "unavailable",
            WalletError::Conflict { .. } => "conflict",
            WalletError::Cancelled { .. } => "cancelled",
            WalletError::AlreadySettled { .. } => "already_settled",
            WalletError::DebitDoesNotExist { .. } => "debit_does_not_exist",
            WalletError::Invalid(_) => "invalid",
        },
    }
}

impl Wallet for Store {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        Box::pin(self.account_view(player, currency))
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.movement(Op::Debit(debit.clone())))
    }

    /// In one transaction (with whatever else waits for the committer): one commit for
    /// them all. `timeout` bounds the wait for it.
    fn debit_many<'a>(
        &'a self,
        debits: &'a [Debit],
        timeout: Duration,
    ) -> BoxFuture<'a, Vec<Result<Receipt, WalletError>>> {
        Box::pin(async move {
            let ops = debits.iter().cloned().map(Op::Debit).collect();
            match tokio::time::timeout(timeout, self.commits.submit_many(ops)).await {
                Ok(answers) => answers
                    .into_iter()
                    .map(|answer| match answer? {
                        Answer::Receipt(receipt) => Ok(receipt),
                        other => Err(unexpected(&other)),
                    })
                    .collect(),
                Err(_) => debits
                    .iter()
                    .map(|debit| Err(crate::api::no_answer(debit, timeout)))
                    .collect(),
            }
        })
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.movement(Op::Credit(credit.clone())))
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.movement(Op::Cancel(cancel.clone())))
    }

    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        Box::pin(async move {
            match self.submit(Op::SetLimit(change.clone())).await? {
                Answer::Limit(limit) => Ok(limit),
                other => Err(unexpected(&other)),
            }
        })
    }

    fn changes(&self) -> Option<broadcast::Receiver<Changes>> {
        Some(self.shared.changes.subscribe())
    }

    fn table_rounds<'a>(
        &'a self,
        table: &'a str,
    ) -> BoxFuture<'a, Result<TableRounds, WalletError>> {
        Box::pin(async move {
            let newest = self
                .newest_round_of_table(table)
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(newest.into())
        })
    }
}

impl Cashier for Store {
    fn deposit<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.movement(Op::Cash(CashKind::Deposit, cash.clone())))
    }

    fn withdraw<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.movement(Op::Cash(CashKind::Withdrawal, cash.clone())))
    }
}
