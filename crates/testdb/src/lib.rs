//! Databases for the tests of the stores that run on SQLite and PostgreSQL (the archive,
//! the wallet): SQLite always, PostgreSQL when `DATABASE_URL` is set (as `cargo xtask
//! test` sets it), each test in a schema of its own so that tests run in parallel.
#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use std::str::FromStr as _;
use std::sync::atomic::{AtomicU32, Ordering};

/// A test database: a temporary SQLite file or a fresh PostgreSQL schema, as a URL the
/// stores open.
#[derive(Debug)]
pub struct TestDb {
    pub url: String,
    /// The SQLite file's folder, removed with the database.
    pub dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// The SQLite file's path; `None` on PostgreSQL.
    pub fn sqlite_path(&self) -> Option<String> {
        self.url.strip_prefix("sqlite://").map(str::to_owned)
    }

    /// Runs `sql` (one statement or several) on the database itself, beside any store: a
    /// test loading a file that an older banco wrote, or tampering with what a store wrote.
    /// An SQLite file is created if need be.
    pub async fn execute(&self, sql: &str) {
        use sqlx::Connection as _;
        if self.sqlite_path().is_some() {
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(&self.url)
                .unwrap()
                .create_if_missing(true);
            let mut conn = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        } else {
            let mut conn = sqlx::PgConnection::connect(&self.url).await.unwrap();
            sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        }
    }
}

/// A fresh SQLite file `file` in a temporary folder.
pub fn sqlite(file: &str) -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join(file).display());
    TestDb {
        url,
        dir: Some(dir),
    }
}

pub use banco_testkit::skipped;

static SCHEMA: AtomicU32 = AtomicU32::new(0);

/// A fresh schema in `DATABASE_URL`'s database for the test `test`; `None` when it is not
/// set.
pub async fn postgres(test: &str) -> Option<TestDb> {
    let base = std::env::var("DATABASE_URL").ok()?;
    let schema = format!(
        "t_{}_{}_{}",
        test,
        std::process::id(),
        SCHEMA.fetch_add(1, Ordering::SeqCst)
    );
    let pool = sqlx::PgPool::connect(&base).await.unwrap();
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(TestDb {
        url: format!("{base}{sep}options=-c%20search_path%3D{schema}"),
        dir: None,
    })
}

/// Runs each named async test body (`async fn name(db: TestDb)`) on a fresh SQLite file
/// `file`, and again on PostgreSQL when `DATABASE_URL` is set.
#[macro_export]
macro_rules! both_backends {
    (file = $file:literal; $($name:ident),+ $(,)?) => {
        mod sqlite_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::sqlite($file)).await;
                }
            )+
        }
        mod postgres_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = $crate::postgres(stringify!($name)).await else {
                        $crate::skipped(
                            concat!(module_path!(), "::", stringify!($name)),
                            "DATABASE_URL is not set: no PostgreSQL to run on",
                        );
                        return;
                    };
                    super::$name(db).await;
                }
            )+
        }
    };
}
