//! Stores on either backend for the store's tests: SQLite always, PostgreSQL when
//! `DATABASE_URL` is set (each test in its own schema, so tests run in parallel), and the
//! requests the tests make.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::Arc;

use banco_wallet::store::{Clock, ManualClock, StoreOptions};
use banco_wallet::{Cancel, Credit, CreditKind, Debit, Store};

pub use banco_testdb::TestDb;

/// A fresh SQLite wallet file.
pub fn sqlite() -> TestDb {
    banco_testdb::sqlite("wallet.db")
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

#[path = "../movements/mod.rs"]
mod movements;
pub use movements::{debit, tx};

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
    d.cancel_as(tx(&format!("cancel:{}", d.tx)))
}
