//! Stores on either backend for the store's tests: SQLite always, PostgreSQL when
//! `DATABASE_URL` is set (each test in its own schema, so tests run in parallel), and the
//! requests the tests make.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use banco_wallet::store::{Clock, ManualClock, StoreOptions};
use banco_wallet::{Cancel, Credit, CreditKind, Debit, Store, TxId};

/// A test database: a temporary SQLite file or a fresh PostgreSQL schema.
pub struct TestDb {
    pub url: String,
    pub _dir: Option<tempfile::TempDir>,
}

pub fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("wallet.db").display());
    TestDb {
        url,
        _dir: Some(dir),
    }
}

static SCHEMA: AtomicU32 = AtomicU32::new(0);

/// A fresh schema in `DATABASE_URL`'s database; `None` when it is not set.
pub async fn postgres(test: &str) -> Option<TestDb> {
    let base = std::env::var("DATABASE_URL").ok()?;
    let schema = format!(
        "w_{}_{}_{}",
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
        _dir: None,
    })
}

/// Runs one async test body on SQLite, and again on PostgreSQL when configured.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),+ $(,)?) => {
        mod sqlite_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::store_support::sqlite()).await;
                }
            )+
        }
        mod postgres_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(db) = $crate::store_support::postgres(stringify!($name)).await else {
                        eprintln!("DATABASE_URL not set: PostgreSQL run skipped");
                        return;
                    };
                    super::$name(db).await;
                }
            )+
        }
    };
}

/// 2026-12-01 00:00 UTC.
pub const T0: u64 = 1_796_083_200_000;
pub const HOUR: u64 = 3_600_000;

pub async fn open(db: &TestDb) -> Store {
    Store::open(&db.url, StoreOptions::default()).await.unwrap()
}

pub async fn open_with_clock(db: &TestDb, clock: Arc<ManualClock>) -> Store {
    let clock: Arc<dyn Clock> = clock;
    Store::open(
        &db.url,
        StoreOptions {
            clock,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap()
}

pub fn tx(id: &str) -> TxId {
    TxId::new(id).unwrap()
}

pub fn debit(id: &str, player: &str, amount: i64) -> Debit {
    Debit {
        tx: tx(id),
        player: player.to_owned(),
        currency: "EUR".to_owned(),
        amount,
        table: "T01".to_owned(),
        round: "T01-S0001-H001".to_owned(),
        bet: "banker".to_owned(),
        position_total: amount,
    }
}

pub fn credit(id: &str, player: &str, amount: i64, debits: &[&str]) -> Credit {
    Credit {
        tx: tx(id),
        player: player.to_owned(),
        currency: "EUR".to_owned(),
        amount,
        kind: CreditKind::Settlement,
        table: "T01".to_owned(),
        round: "T01-S0001-H001".to_owned(),
        bet: "banker".to_owned(),
        debits: debits.iter().map(|d| tx(d)).collect(),
    }
}

pub fn cancel_of(d: &Debit) -> Cancel {
    Cancel {
        tx: tx(&format!("cancel:{}", d.tx)),
        debit: d.tx.clone(),
        player: d.player.clone(),
        currency: d.currency.clone(),
        amount: d.amount,
        table: d.table.clone(),
        round: d.round.clone(),
    }
}
