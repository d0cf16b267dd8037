//! `banco wallet` and `banco cashier` as real processes: deposits, withdrawals, balance and
//! statement in euros, a retry with the same key moving money once, a wrong role refused;
//! a SIGKILL during a burst of debits losing nothing acknowledged; `banco wallet
//! --seamless-listen` passing `banco wallet conformance`. SQLite always, PostgreSQL too
//! when `DATABASE_URL` is set.
//!
//! And `banco wallet conformance` as a casino's developer runs it: against banco's own
//! seamless server it passes every check; against one that forgets early cancels it fails,
//! naming that check, with exit status 1; bad arguments are refused before any request.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use banco_auth::Role;
use banco_e2e::archive::ArchiveDb;
use banco_e2e::banco;
use banco_e2e::procs::{
    Keys, SEAMLESS_SECRET, Service, bearer, seamless_secret_file, start_seamless_wallet,
    start_wallet,
};
use banco_wallet::MemoryWallet;
use banco_wallet::Wallet;
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions};
use banco_wallet::seamless::SeamlessSecret;
use banco_wallet::seamless::memory::ForgetsEarlyCancels;
use banco_wallet::{Cash, Cashier as _, Debit, TxId, WalletError};
use tokio::sync::oneshot;

/// `wallet` served on a loopback port until the sender is dropped; its URL.
async fn serve(wallet: Arc<dyn Wallet>) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let secret = SeamlessSecret::new(SEAMLESS_SECRET.as_bytes()).unwrap();
    tokio::spawn(banco_wallet::seamless::serve(
        listener,
        wallet,
        secret,
        async {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

async fn conformance(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        banco()
            .args(["wallet", "conformance"])
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_passes_against_banco_s_server_and_names_a_wrong_one_s_fault() {
    let dir = tempfile::tempdir().unwrap();
    let secret = seamless_secret_file(dir.path()).display().to_string();

    let wallet = Arc::new(MemoryWallet::new());
    wallet
        .deposit("cash-test-player", "test-player", "EUR", 2_500)
        .unwrap();
    let (url, _stop) = serve(wallet.clone()).await;
    let args = vec![
        url,
        "--secret-file".to_owned(),
        secret.clone(),
        "--player".to_owned(),
        "test-player".to_owned(),
    ];
    let out = conformance(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("PASS  balance: OK, €25.00 for test-player"),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let checks = stdout.lines().filter(|l| l.starts_with("PASS  ")).count();
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{checks} passed, 0 failed").as_str())
    );
    assert_eq!(wallet.balance("test-player", "EUR"), 2_500);

    let wrong = Arc::new(MemoryWallet::new());
    wrong
        .deposit("cash-test-player", "test-player", "EUR", 2_500)
        .unwrap();
    let (url, _stop) = serve(ForgetsEarlyCancels::new(wrong)).await;
    let args = vec![
        url,
        "--secret-file".to_owned(),
        secret,
        "--player".to_owned(),
        "test-player".to_owned(),
    ];
    let out = conformance(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let failed: Vec<_> = stdout.lines().filter(|l| l.starts_with("FAIL  ")).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(
        failed[0].starts_with("FAIL  cancel before debit, then the debit refused: "),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{} passed, 1 failed", checks - 1).as_str())
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let secret = seamless_secret_file(dir.path()).display().to_string();
    let exposed = dir.path().join("exposed.secret");
    std::fs::write(&exposed, SEAMLESS_SECRET).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&exposed, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let cases = [
        (
            vec!["http://casino.example/banco/", "--secret-file", &secret],
            "plain http goes only to this machine",
        ),
        (
            vec![
                "http://127.0.0.1:9/",
                "--secret-file",
                &secret,
                "--currency",
                "eur",
            ],
            "--currency eur: not an ISO 4217 code",
        ),
        (
            vec![
                "http://127.0.0.1:9/",
                "--secret-file",
                exposed.to_str().unwrap(),
            ],
            "chmod 600",
        ),
    ];
    for (args, needle) in cases {
        let out = conformance(args.into_iter().map(str::to_owned).collect()).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{needle}: {stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing checked");
    }
}

/// The wallet's databases to run on: SQLite always, PostgreSQL when `DATABASE_URL` is set.
fn databases(dir: &Path, name: &str) -> Vec<ArchiveDb> {
    let mut dbs = vec![ArchiveDb::sqlite(&dir.join(format!("{name}.db")))];
    match ArchiveDb::postgres(name) {
        Ok(db) => dbs.push(db),
        Err(why) => banco_testkit::skipped(&format!("{name} on PostgreSQL"), &why),
    }
    dbs
}

fn token_file(dir: &Path, keys: &Keys, role: &str) -> PathBuf {
    let path = dir.join(format!("{role}.token"));
    std::fs::write(&path, keys.issue(role, &format!("{role}-1"), "1h")).unwrap();
    path
}

fn cashier(wallet: &Service, token: &Path, args: &[&str]) -> Output {
    banco()
        .arg("cashier")
        .arg("--token-file")
        .arg(token)
        .args(["--server", &format!("grpc://{}", wallet.addr())])
        .args(args)
        .output()
        .unwrap()
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_cashier_pays_in_and_out_once_per_key_and_other_roles_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let desk = token_file(dir.path(), &keys, "cashier");
    let table = token_file(dir.path(), &keys, "service");
    for db in databases(dir.path(), "cashier") {
        let wallet = start_wallet(&keys, &db.url());
        let backend = db.backend();

        // A fresh key is printed before the deposit is sent; a retry with it moves nothing.
        let out = cashier(&wallet, &desk, &["deposit", "alice", "100.00"]);
        assert_eq!(out.status.code(), Some(0), "{backend}: {out:?}");
        let text = stdout_of(&out);
        let key = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("key "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("{backend}: no key in {text}"))
            .to_owned();
        assert!(
            text.contains("deposited €100.00 to alice: balance €100.00"),
            "{text}"
        );
        let again = cashier(
            &wallet,
            &desk,
            &["deposit", "alice", "100.00", "--key", &key],
        );
        let text = stdout_of(&again);
        assert_eq!(again.status.code(), Some(0), "{backend}: {again:?}");
        assert!(
            text.contains("balance €100.00 (already done under this key"),
            "{text}"
        );
        // The same key for another amount is refused, naming the conflict.
        let other = cashier(&wallet, &desk, &["deposit", "alice", "5", "--key", &key]);
        assert_eq!(other.status.code(), Some(1), "{backend}: {other:?}");
        assert!(
            String::from_utf8_lossy(&other.stderr).contains("REFUSED: key"),
            "{other:?}"
        );

        let out = cashier(
            &wallet,
            &desk,
            &["withdraw", "alice", "30.50", "--key", "w-1"],
        );
        assert!(
            stdout_of(&out).contains("withdrew €30.50 from alice: balance €69.50"),
            "{out:?}"
        );
        let broke = cashier(
            &wallet,
            &desk,
            &["withdraw", "alice", "500", "--key", "w-2"],
        );
        assert_eq!(broke.status.code(), Some(1), "{broke:?}");
        assert!(
            String::from_utf8_lossy(&broke.stderr)
                .contains("insufficient funds: €500.00 asked, €69.50 available"),
            "{broke:?}"
        );
        let bad = cashier(&wallet, &desk, &["deposit", "alice", "1.005"]);
        assert_eq!(bad.status.code(), Some(2), "{bad:?}");
        assert!(bad.stdout.is_empty(), "nothing sent: {bad:?}");

        let balance = stdout_of(&cashier(&wallet, &desk, &["balance", "alice"]));
        assert!(balance.starts_with("alice: €69.50 (EUR)\n"), "{balance}");
        let statement = stdout_of(&cashier(
            &wallet,
            &desk,
            &["statement", "alice", "--page-size", "1"],
        ));
        let lines: Vec<&str> = statement.lines().collect();
        assert_eq!(lines.len(), 2, "{statement}");
        assert!(
            lines[0].contains("withdrawal") && lines[0].contains("-€30.50"),
            "{statement}"
        );
        assert!(lines[0].contains("Z  "), "RFC 3339 in UTC: {statement}");
        let page = lines[1].strip_prefix("more: --page ").unwrap();
        let older = stdout_of(&cashier(
            &wallet,
            &desk,
            &["statement", "alice", "--page", page],
        ));
        assert!(
            older.contains("deposit") && older.contains("+€100.00"),
            "{older}"
        );
        assert!(!older.contains("more:"), "{older}");

        // A table's token cannot pay in: refused for its role, exit status 2.
        let wrong = cashier(&wallet, &table, &["deposit", "alice", "1000"]);
        assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
        assert!(
            String::from_utf8_lossy(&wrong.stderr).contains("role service"),
            "{wrong:?}"
        );
        let balance = stdout_of(&cashier(&wallet, &desk, &["balance", "alice"]));
        assert!(balance.starts_with("alice: €69.50"), "{balance}");
    }
}

fn stake(i: usize) -> Debit {
    Debit {
        tx: TxId::new(format!("debit:T01-S0001-H{:03}:bob:{i}", i % 1000)).unwrap(),
        player: "bob".to_owned(),
        currency: "EUR".to_owned(),
        amount: 100,
        table: "T01".to_owned(),
        round: format!("T01-S0001-H{:03}", i % 1000),
        bet: "banker".to_owned(),
        position_total: 100,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_wallet_keeps_every_acknowledged_debit_and_no_other_twice() {
    const DEBITS: usize = 300;
    const DEPOSIT: i64 = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let service = bearer(&keys.issue_at(
        Role::Service,
        "broadcaster",
        Duration::from_secs(3600),
        std::time::SystemTime::now(),
    ));
    let desk = bearer(&keys.issue_at(
        Role::Cashier,
        "desk",
        Duration::from_secs(3600),
        std::time::SystemTime::now(),
    ));
    for db in databases(dir.path(), "killed") {
        let backend = db.backend();
        let mut wallet = start_wallet(&keys, &db.url());
        let url = format!("grpc://{}", wallet.addr());
        let options = GrpcWalletOptions::default();
        let table = GrpcWallet::connect(&url, None, service.clone(), options).unwrap();
        let cash = GrpcWallet::connect(&url, None, desk.clone(), options).unwrap();
        cash.deposit(&Cash::new(
            &TxId::new("dep").unwrap(),
            "bob",
            "EUR",
            DEPOSIT,
        ))
        .await
        .unwrap();

        // A burst of debits, the wallet killed once a third are acknowledged.
        let (acked_tx, mut acked_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut burst = tokio::task::JoinSet::new();
        for i in 0..DEBITS {
            let table = table.clone();
            let acked = acked_tx.clone();
            burst.spawn(async move {
                let result = table.debit(&stake(i)).await;
                if result.is_ok() {
                    let _ = acked.send(());
                }
                (i, result)
            });
        }
        drop(acked_tx);
        for _ in 0..DEBITS / 3 {
            acked_rx.recv().await.unwrap();
        }
        wallet.kill();
        let mut acknowledged = Vec::new();
        let mut unknown = 0;
        while let Some(done) = burst.join_next().await {
            match done.unwrap() {
                (i, Ok(receipt)) => acknowledged.push((i, receipt)),
                (_, Err(error)) => {
                    assert!(error.is_transient(), "{backend}: {error:?}");
                    unknown += 1;
                }
            }
        }
        assert!(acknowledged.len() >= DEBITS / 3, "{backend}");
        eprintln!(
            "{backend}: {} debits acknowledged before the kill, {unknown} without an answer",
            acknowledged.len()
        );

        // Restarted on the same database: every acknowledged debit is there (a retry gets
        // its first answer again), and a retry of every other moves its money once.
        let wallet = start_wallet(&keys, &db.url());
        let url = format!("grpc://{}", wallet.addr());
        let table = GrpcWallet::connect(&url, None, service.clone(), options).unwrap();
        for (i, receipt) in &acknowledged {
            let again = table.debit(&stake(*i)).await.unwrap();
            assert!(
                again.replayed,
                "{backend}: debit {i} was acknowledged but is lost"
            );
            assert_eq!(again.balance, receipt.balance, "{backend}: debit {i}");
        }
        let account = banco_wallet::Wallet::account(&table, "bob", "EUR")
            .await
            .unwrap();
        let taken = DEPOSIT - account.balance;
        assert!(
            taken >= 100 * acknowledged.len() as i64
                && taken <= 100 * (acknowledged.len() + unknown) as i64,
            "{backend}: {taken} taken for {} acknowledged and {unknown} unknown debits",
            acknowledged.len()
        );
        for i in 0..DEBITS {
            table.debit(&stake(i)).await.unwrap();
        }
        let account = banco_wallet::Wallet::account(&table, "bob", "EUR")
            .await
            .unwrap();
        assert_eq!(account.balance, DEPOSIT - 100 * DEBITS as i64, "{backend}");
        // And the balance a debit answered is never below zero, nor out of order.
        let late = table
            .debit(&Debit {
                amount: DEPOSIT,
                position_total: DEPOSIT,
                ..stake(DEBITS)
            })
            .await
            .unwrap_err();
        assert!(
            matches!(late, WalletError::InsufficientFunds { .. }),
            "{late:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn banco_s_own_wallet_over_the_seamless_protocol_passes_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let secret_path = seamless_secret_file(dir.path());
    let secret = secret_path.display().to_string();
    let desk = token_file(dir.path(), &keys, "cashier");
    for db in databases(dir.path(), "seamless") {
        let (mut wallet, seamless) = start_seamless_wallet(&keys, &db.url(), &secret_path);
        let out = cashier(&wallet, &desk, &["deposit", "banco-conformance", "25.00"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let out = conformance(vec![
            format!("http://{seamless}/"),
            "--secret-file".to_owned(),
            secret.clone(),
        ])
        .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}: {stdout}", db.backend());
        assert!(!stdout.contains("FAIL"), "{stdout}");
        // Every check gives back what it takes.
        let balance = stdout_of(&cashier(&wallet, &desk, &["balance", "banco-conformance"]));
        assert!(
            balance.starts_with("banco-conformance: €25.00"),
            "{balance}"
        );
        // SIGTERM stops both listeners, cleanly.
        let status = wallet.signal("TERM", Duration::from_secs(30));
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
    }
}
