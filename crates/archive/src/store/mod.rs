//! Storage behind one type with two backends: an SQLite file (the default) and
//! PostgreSQL. Both run the SAME SQL text (`$1` parameters, `BIGINT`, standard
//! aggregates): each query is written once and expanded for each pool by [`on_pool!`].

use std::str::FromStr as _;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::error::ArchiveError;

pub(crate) mod aggregate;
mod append;
mod checkpoints;
mod clips;
mod group;
mod known;
mod schema;
mod select;

pub use aggregate::{PositionTotals, ScopeTotals};
pub use append::{Appended, ClipOf, ExportLines, LastLink, OwnedRound};
pub use checkpoints::CheckpointRow;
pub use clips::{ClipPut, ClipRow, MissingClipRow, StoredClip};
pub use select::{ChainRow, ExportRow, Page, RoundFilterSql, StoredRound, SummaryRow};

/// The pool of either backend.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Db {
    /// Itself (so that [`on_pool!`] takes a [`Db`] as it takes a [`Store`]).
    pub const fn db(&self) -> &Db {
        self
    }
}

/// An open archive database, and the group commit of its appends (see [`group`]).
#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
    commits: std::sync::Arc<group::GroupCommit>,
}

/// Runs `$body` with `$pool` bound to the concrete pool of either backend: the same
/// code, type-checked once per backend.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match $store.db() {
            $crate::store::Db::Sqlite($pool) => $body,
            $crate::store::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// A bound query parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Text(String),
    Int(i64),
    Bool(bool),
}

/// Binds `$params` in order to the query `$q`.
macro_rules! bind_all {
    ($q:expr, $params:expr) => {{
        let mut q = $q;
        for p in $params {
            q = match p {
                $crate::store::Param::Text(s) => q.bind(s.clone()),
                $crate::store::Param::Int(i) => q.bind(*i),
                $crate::store::Param::Bool(b) => q.bind(*b),
            };
        }
        q
    }};
}
pub(crate) use bind_all;

/// `items` in chunks of `max` (a power of two), then the rest in falling powers of two
/// (1,387 with `max` 1,024: 1,024, 256, 64, 32, 8, 2, 1). A multi-row statement built from
/// a chunk then has one of a few shapes, each parsed once per connection and reused from
/// its statement cache; a statement of any length would be parsed anew every time
/// (measured: parsing was about 15 % of SQLite's single writer at 10,000 rounds a second).
pub(crate) fn shaped_chunks<T>(items: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    debug_assert!(max.is_power_of_two(), "{max} is not a power of two");
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = if rest.len() >= max {
            max
        } else {
            1 << (usize::BITS - 1 - rest.len().leading_zeros())
        };
        let (chunk, after) = rest.split_at(size);
        rest = after;
        Some(chunk)
    })
}

/// Prepared statements each connection keeps: every shape of every multi-row statement
/// ([`shaped_chunks`]) and the queries, with room to spare.
const STATEMENT_CACHE: usize = 512;

impl Store {
    /// Opens (creating if need be) the database at `url` and brings its schema up to
    /// date. `sqlite://PATH` (WAL, `synchronous=FULL`: an audit store loses nothing it
    /// acknowledged, even on power loss) or `postgres://…`.
    pub async fn open(url: &str) -> Result<Store, ArchiveError> {
        Store::open_at_version(url, usize::MAX).await
    }

    /// [`Store::open`], applying the migrations up to `version` only: for tests of the
    /// migrations over data an older banco stored.
    #[doc(hidden)]
    pub async fn open_at_version(url: &str, version: usize) -> Result<Store, ArchiveError> {
        let store = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10))
                // 64 MiB of page cache per connection (the default 2 MiB re-reads the
                // indexes from the OS at every append), and checkpoints every ~40 MiB.
                .pragma("cache_size", "-65536")
                .pragma("wal_autocheckpoint", "10000")
                .statement_cache_capacity(STATEMENT_CACHE);
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .connect_with(options)
                .await?;
            Db::Sqlite(pool)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = sqlx::postgres::PgConnectOptions::from_str(url)?
                .statement_cache_capacity(STATEMENT_CACHE);
            let pool = PgPoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await?;
            Db::Postgres(pool)
        } else {
            return Err(ArchiveError::UnknownBackend(url.to_owned()));
        };
        let store = Store {
            commits: std::sync::Arc::new(group::GroupCommit::start(store.clone())),
            db: store,
        };
        schema::migrate(&store, version).await?;
        Ok(store)
    }

    /// The pool of either backend (for tools that run their own SQL: benchmarks, tests).
    pub const fn db(&self) -> &Db {
        &self.db
    }

    /// `sqlite` or `postgres`.
    pub const fn backend(&self) -> &'static str {
        match self.db {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Closes every connection (a SQLite file is then complete without its WAL).
    /// How many rounds are stored.
    pub async fn round_count(&self) -> Result<i64, ArchiveError> {
        let count: i64 = on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT COUNT(*) FROM rounds")
                .fetch_one(pool)
                .await?
        });
        Ok(count)
    }

    pub async fn close(&self) {
        on_pool!(self, |pool| pool.close().await);
    }
}

#[cfg(test)]
mod tests {
    use super::shaped_chunks;

    #[test]
    fn chunks_are_the_maximum_then_falling_powers_of_two_and_cover_everything() {
        let items: Vec<u32> = (0..1_387).collect();
        let sizes: Vec<usize> = shaped_chunks(&items, 1_024).map(<[u32]>::len).collect();
        assert_eq!(sizes, [1_024, 256, 64, 32, 8, 2, 1]);
        let joined: Vec<u32> = shaped_chunks(&items, 1_024).flatten().copied().collect();
        assert_eq!(joined, items);
        let sizes: Vec<usize> = shaped_chunks(&items, 256).map(<[u32]>::len).collect();
        assert_eq!(sizes, [256, 256, 256, 256, 256, 64, 32, 8, 2, 1]);
        assert_eq!(shaped_chunks::<u32>(&[], 8).count(), 0);
        assert_eq!(shaped_chunks(&[7], 8).collect::<Vec<_>>(), [&[7][..]]);
    }
}
