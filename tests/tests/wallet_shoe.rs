//! Issue 17, end to end: the same 20 bots at two tables on two broadcasters (T01 and
//! T02), a whole 1-deck shoe at each, every stake and return through one `banco wallet`
//! that the cashier funded; then `banco audit reconcile` must match every movement with
//! the archived rounds of both tables, and the bots' balances must add up to what was
//! deposited less the house's result. Once with the wallet and the archive on SQLite, once
//! on PostgreSQL (when `DATABASE_URL` is set, as `cargo xtask test` sets it).
#![allow(clippy::unwrap_used)]

use std::process::{Child, Stdio};
use std::time::Duration;

use banco_e2e::archive::{ArchiveDb, Auditor};
use banco_e2e::clients::{Croupier, play_the_shoe};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, SignedArchive, bearer, cashier_deposit, channel, start_validator,
    start_wallet,
};
use banco_e2e::{banco_sim, output_text, poll_blocking};
use banco_rules::shoe::{Shoe, ShoeConfig};
use banco_wire::pb;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use serde_json::Value;

const BOTS: usize = 20;
/// Each bot's deposit at the cashier: €300.00.
const DEPOSIT_MINOR: i64 = 30_000;

/// A child that is killed and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `banco-sim bots` for `table` at `server`: bot-001 to bot-020 at either table.
fn bots(keys: &Keys, server: &str, table: &str, seed: &str) -> Proc {
    let child = banco_sim()
        .args([
            "bots",
            "--server",
            server,
            "--table",
            table,
            "--signing-key",
        ])
        .arg(keys.signing_key())
        .args(["--players", &BOTS.to_string(), "--seed", seed])
        .args(["--watchers-share", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Proc(child)
}

async fn two_tables_one_wallet(archive_db: &ArchiveDb, wallet_db: &ArchiveDb) {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let archive = SignedArchive::start(&keys, &archive_db.url(), dir.path());
    let wallet = start_wallet(&keys, &wallet_db.url());
    let names: Vec<String> = (1..=BOTS).map(|i| format!("bot-{i:03}")).collect();
    for name in &names {
        cashier_deposit(&keys, dir.path(), &wallet, name, "300.00");
    }
    let broadcaster = |table: &str| {
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join(table))
            .with_wallet(&archive, &format!("grpc://{}", wallet.addr()));
        setup.table = table.to_owned();
        setup.decks = 1;
        setup.betting_seconds = Some(2);
        setup.start()
    };
    let (t01, t02) = (broadcaster("T01"), broadcaster("T02"));
    let bots_t01 = bots(&keys, &t01.url(), "T01", "1");
    let bots_t02 = bots(&keys, &t02.url(), "T02", "2");

    // A croupier at each table deals a shuffled 1-deck shoe to its end, at once.
    let croupier_token = keys.issue("croupier", "dealer1", "1h");
    let mut shoes = Vec::new();
    for (i, (table, server)) in [("T01", &t01), ("T02", &t02)].into_iter().enumerate() {
        let mut croupier =
            Croupier::new(channel(&server.url()).await, &croupier_token, table, table);
        let config = ShoeConfig {
            decks: 1,
            ..ShoeConfig::default()
        };
        let mut rng = ChaCha20Rng::seed_from_u64(2026 + i as u64);
        let order = Shoe::shuffled(config, &mut rng).unwrap().order().to_vec();
        shoes.push(tokio::spawn(async move {
            play_the_shoe(&mut croupier, &order).await.len()
        }));
    }
    let mut rounds = 0;
    for shoe in shoes {
        rounds += shoe.await.unwrap();
    }
    drop((bots_t01, bots_t02));

    let auditor = Auditor::new(&keys, &archive.service.url(), dir.path());
    let wallet_url = format!("grpc://{}", wallet.addr());
    let out = poll_blocking(
        Duration::from_secs(120),
        Duration::from_millis(500),
        || auditor.run(&["reconcile", "--wallet", &wallet_url, "--json"]),
        |out| out.status.code() == Some(0),
    );
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &report["report"]["total"];
    assert_eq!(total["rounds"], rounds, "{total}");
    let bets = total["bets"].as_u64().unwrap();
    assert!(bets >= rounds as u64, "the bots hardly bet: {total}");
    let house = total["house_result"].as_i64().unwrap();
    assert_eq!(total["wallet_result"], house, "{total}");

    // The players' side of the same money, from the wallet's own balances.
    let token = keys.issue("cashier", "desk-1", "1h");
    let mut client =
        WalletServiceClient::with_interceptor(channel(&wallet.url()).await, bearer(&token));
    let mut balances = 0;
    for name in &names {
        let account = client
            .balance(pb::BalanceRequest {
                player_id: name.clone(),
                currency: "EUR".to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(account.balance_minor >= 0, "{account:?}");
        balances += account.balance_minor;
    }
    assert_eq!(
        balances,
        DEPOSIT_MINOR * BOTS as i64 - house,
        "deposits less the house's result: {total}"
    );
    eprintln!(
        "{}: {rounds} rounds at two tables, {bets} bets, house {house} (minor units)",
        wallet_db.backend()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_bots_at_two_tables_reconcile_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let archive = ArchiveDb::sqlite(&dir.path().join("archive.db"));
    let wallet = ArchiveDb::sqlite(&dir.path().join("wallet.db"));
    two_tables_one_wallet(&archive, &wallet).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_bots_at_two_tables_reconcile_on_postgresql() {
    let (archive, wallet) = match (
        ArchiveDb::postgres("shoe_archive"),
        ArchiveDb::postgres("shoe_wallet"),
    ) {
        (Ok(archive), Ok(wallet)) => (archive, wallet),
        (Err(why), _) | (_, Err(why)) => {
            banco_testkit::skipped("twenty_bots_at_two_tables_reconcile_on_postgresql", &why);
            return;
        }
    };
    two_tables_one_wallet(&archive, &wallet).await;
}
