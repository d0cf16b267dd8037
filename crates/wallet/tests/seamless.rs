//! The seamless adapter against the real server over loopback: every movement and the
//! trait's contract end to end; the server's refusals; TLS; the conformance checks against
//! the real server and against a deliberately wrong one.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use banco_wallet::MemoryWallet;
use banco_wallet::seamless::conformance::{self, Options};
use banco_wallet::seamless::memory::ForgetsEarlyCancels;
use banco_wallet::seamless::protocol::{BalanceRequest, Envelope, Operation, Status, now_ms};
use banco_wallet::seamless::{Endpoint, HttpClient, SeamlessConfig, SeamlessWallet};
use banco_wallet::{LimitChange, Wallet, WalletError};
use bytes::Bytes;
use support::{adapter, cancel, credit, debit, holding, secret, served};

#[tokio::test]
async fn every_movement_through_the_protocol_keeps_the_contract() {
    let operator = holding("alice", 10_000);
    let server = served(operator.clone()).await;
    let (wallet, _local) = adapter(&server.url, SeamlessConfig::default());

    let view = wallet.account("alice", "EUR").await.unwrap();
    assert_eq!((view.balance, view.blocked), (10_000, false));
    assert!(
        wallet.changes().is_none(),
        "an operator's wallet tells nobody"
    );

    let stake = debit("debit:H001:alice:1:banker", "alice", 2_500);
    let taken = wallet.debit(&stake).await.unwrap();
    assert_eq!((taken.balance, taken.replayed), (7_500, false));
    let again = wallet.debit(&stake).await.unwrap();
    assert_eq!((again.balance, again.replayed), (7_500, true));
    assert_eq!(operator.balance("alice", "EUR"), 7_500, "moved once");

    let other = banco_wallet::Debit {
        amount: 100,
        ..stake.clone()
    };
    assert!(matches!(
        wallet.debit(&other).await,
        Err(WalletError::Conflict { tx, .. }) if tx == stake.tx
    ));
    assert_eq!(
        wallet
            .debit(&debit("debit:H001:alice:2:tie", "alice", 9_000))
            .await,
        Err(WalletError::InsufficientFunds {
            needed: 9_000,
            available: 7_500
        })
    );

    let win = credit("credit:H001:alice:banker", &stake, 4_875);
    assert_eq!(wallet.credit(&win).await.unwrap().balance, 12_375);
    assert!(wallet.credit(&win).await.unwrap().replayed);
    assert_eq!(operator.balance("alice", "EUR"), 12_375, "paid once");
    assert_eq!(
        wallet.cancel(&cancel(&stake)).await,
        Err(WalletError::AlreadySettled {
            tx: stake.tx.clone()
        })
    );
    let never = debit("debit:H001:alice:9:player", "alice", 100);
    assert_eq!(
        wallet
            .credit(&credit("credit:H001:alice:player", &never, 200))
            .await,
        Err(WalletError::DebitDoesNotExist {
            tx: never.tx.clone()
        })
    );

    // Cancelled after it was taken: the stake comes back.
    let second = debit("debit:H002:alice:1:player", "alice", 1_000);
    wallet.debit(&second).await.unwrap();
    let back = wallet.cancel(&cancel(&second)).await.unwrap();
    assert_eq!(back.balance, 12_375);

    // Cancelled before it arrived: remembered, the debit is refused.
    let late = debit("debit:H002:alice:2:player", "alice", 1_000);
    let early = wallet.cancel(&cancel(&late)).await.unwrap();
    assert_eq!((early.balance, early.replayed), (12_375, false));
    assert_eq!(
        wallet.debit(&late).await,
        Err(WalletError::Cancelled {
            tx: late.tx.clone()
        })
    );
    assert_eq!(operator.balance("alice", "EUR"), 12_375);

    operator.set_blocked("alice", "EUR", true);
    let view = wallet.account("alice", "EUR").await.unwrap();
    assert_eq!((view.balance, view.blocked), (12_375, true));
    assert_eq!(
        wallet
            .debit(&debit("debit:H003:alice:1:banker", "alice", 100))
            .await,
        Err(WalletError::AccountBlocked)
    );
}

#[tokio::test]
async fn self_limits_are_banco_s_and_checked_before_the_operator_is_asked() {
    let operator = holding("bob", 50_000);
    let server = served(operator.clone()).await;
    let (wallet, local) = adapter(&server.url, SeamlessConfig::default());
    let limit = wallet
        .set_self_limit(&LimitChange::new("bob", "EUR", Some(2_000), now_ms()))
        .await
        .unwrap();
    assert_eq!(limit.max_bet, Some(2_000));
    assert_eq!(
        local
            .account("bob", "EUR")
            .await
            .unwrap()
            .self_limit
            .max_bet,
        Some(2_000),
        "kept in banco's own wallet"
    );
    assert_eq!(
        operator
            .account("bob", "EUR")
            .await
            .unwrap()
            .self_limit
            .max_bet,
        None,
        "the operator is not told"
    );
    assert_eq!(
        wallet
            .account("bob", "EUR")
            .await
            .unwrap()
            .self_limit
            .max_bet,
        Some(2_000)
    );
    // The position's whole stake counts: 1,500 already on it, 1,000 more is over.
    let over = banco_wallet::Debit {
        position_total: 2_500,
        ..debit("debit:H001:bob:2:banker", "bob", 1_000)
    };
    assert_eq!(
        wallet.debit(&over).await,
        Err(WalletError::SelfLimit {
            limit: 2_000,
            asked: 2_500
        })
    );
    assert_eq!(operator.balance("bob", "EUR"), 50_000, "never sent");
    let within = debit("debit:H001:bob:3:banker", "bob", 2_000);
    assert_eq!(wallet.debit(&within).await.unwrap().balance, 48_000);
}

#[tokio::test]
async fn concurrent_debits_never_take_a_balance_below_zero() {
    let operator = holding("carol", 1_000);
    let server = served(operator.clone()).await;
    let (wallet, _local) = adapter(&server.url, SeamlessConfig::default());
    let wallet = Arc::new(wallet);
    let tasks: Vec<_> = (0..25)
        .map(|n| {
            let wallet = Arc::clone(&wallet);
            tokio::spawn(async move {
                let stake = debit(&format!("debit:H001:carol:{n}:banker"), "carol", 100);
                wallet.debit(&stake).await
            })
        })
        .collect();
    let mut taken = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => taken += 1,
            Err(WalletError::InsufficientFunds { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(taken, 10);
    assert_eq!(operator.balance("carol", "EUR"), 0);
}

/// A balance request for `dave`, as its bytes.
fn balance_body(timestamp_ms: u64, operation: Operation) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&BalanceRequest {
            envelope: Envelope {
                operation,
                request_id: "req-1".to_owned(),
                timestamp_ms,
            },
            player_id: "dave".to_owned(),
            currency: "EUR".to_owned(),
        })
        .unwrap(),
    )
}

#[tokio::test]
async fn the_server_refuses_what_banco_did_not_sign_and_signs_its_refusals() {
    let server = served(Arc::new(MemoryWallet::new())).await;
    let client = HttpClient::new(Endpoint::parse(&server.url, None).unwrap());
    let secret = secret();
    let body = balance_body(now_ms(), Operation::Balance);

    let good = client
        .post(Operation::Balance, body.clone(), Some(&secret.sign(&body)))
        .await
        .unwrap();
    let answer = good.answer(&secret, "req-1").unwrap();
    assert_eq!((answer.status, answer.balance_minor), (Status::Ok, Some(0)));

    let other =
        banco_wallet::seamless::SeamlessSecret::new(b"not the secret the server has!!!").unwrap();
    let cases = [
        (Some(other.sign(&body)), "does not match"),
        (None, "no x-banco-signature header"),
        (Some("sha256=beef".to_owned()), "not `sha256=`"),
    ];
    for (signature, needle) in cases {
        let refused = client
            .post(Operation::Balance, body.clone(), signature.as_deref())
            .await
            .unwrap();
        assert_eq!(refused.http_status, 401, "{needle}");
        // Signed all the same, so banco can tell the operator's refusal from noise.
        secret
            .verify(&refused.body, refused.signature.as_deref())
            .unwrap();
        let answer: banco_wallet::seamless::protocol::Answer =
            serde_json::from_slice(&refused.body).unwrap();
        assert_eq!(answer.status, Status::InvalidSignature);
        assert_eq!(answer.request_id, "req-1");
        let message = answer.message.unwrap();
        assert!(message.contains(needle), "{message}");
    }

    let old = balance_body(now_ms() - 10 * 60 * 1000, Operation::Balance);
    let refused = client
        .post(Operation::Balance, old.clone(), Some(&secret.sign(&old)))
        .await
        .unwrap();
    assert_eq!(refused.http_status, 401);
    let message = refused.answer(&secret, "req-1").unwrap_err().to_string();
    assert!(
        message.contains("600 s from this server's clock"),
        "{message}"
    );

    // A signed balance body posted to /debit is not a debit.
    let misplaced = client
        .post(Operation::Debit, body.clone(), Some(&secret.sign(&body)))
        .await
        .unwrap();
    assert_eq!(misplaced.http_status, 400);
    let answer = misplaced.answer(&secret, "req-1").unwrap();
    assert_eq!(answer.status, Status::InvalidRequest);
    assert!(
        answer
            .message
            .unwrap()
            .contains("a balance request, posted to /debit")
    );
}

#[tokio::test]
async fn the_server_refuses_plaintext_beyond_loopback() {
    let Ok(listener) = tokio::net::TcpListener::bind("0.0.0.0:0").await else {
        return;
    };
    let err =
        banco_wallet::seamless::serve(listener, Arc::new(MemoryWallet::new()), secret(), async {})
            .await
            .unwrap_err();
    assert!(err.to_string().contains("not a loopback address"), "{err}");
}

#[tokio::test]
async fn the_adapter_speaks_tls_to_an_https_operator() {
    let (cert, tls) = banco_testkit::self_signed_localhost();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, cert).unwrap();
    let operator = holding("erin", 700);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served: Arc<dyn Wallet> = operator.clone();
    tokio::spawn(banco_wallet::seamless::serve_tls(
        listener,
        tls.rustls_config(),
        served,
        secret(),
        async {
            let _ = stopped.await;
        },
    ));
    let endpoint =
        Endpoint::parse(&format!("seamless+https://localhost:{port}/"), Some(&ca)).unwrap();
    let wallet = SeamlessWallet::new(
        endpoint,
        secret(),
        Arc::new(MemoryWallet::new()),
        SeamlessConfig::default(),
    );
    let stake = debit("debit:H001:erin:1:banker", "erin", 200);
    assert_eq!(wallet.debit(&stake).await.unwrap().balance, 500);
    assert_eq!(operator.balance("erin", "EUR"), 500);

    // Without the casino's CA, the web's roots do not vouch for this certificate.
    let untrusted = SeamlessWallet::new(
        Endpoint::parse(&format!("seamless+https://localhost:{port}/"), None).unwrap(),
        secret(),
        Arc::new(MemoryWallet::new()),
        support::quick(),
    );
    let err = untrusted
        .debit(&debit("debit:H001:erin:2:banker", "erin", 200))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WalletError::Unavailable(why) if why.contains("certificate")),
        "{err}"
    );
    assert_eq!(operator.balance("erin", "EUR"), 500);
    let _ = stop.send(());
}

fn options() -> Options {
    Options {
        player: "conformance".to_owned(),
        ..Options::default()
    }
}

#[tokio::test]
async fn conformance_passes_against_the_real_server_and_leaves_the_balance() {
    let operator = holding("conformance", 5_000);
    let server = served(operator.clone()).await;
    let endpoint = Endpoint::parse(&server.url, None).unwrap();
    let report = conformance::run(endpoint, secret(), &options()).await;
    for check in &report.checks {
        assert!(check.passed, "{}: {}", check.name, check.seen);
    }
    let names: Vec<_> = report.checks.iter().map(|c| c.name).collect();
    for name in [
        "balance",
        "debit",
        "debit again: same answer, nothing moved",
        "same id, other amount: refused",
        "credit settles",
        "credit again: paid once",
        "cancel of a settled debit: refused",
        "cancel after debit",
        "cancel before debit, then the debit refused",
        "credit of an unknown debit: BET_DOES_NOT_EXIST",
        "insufficient funds",
        "wrong signature refused",
        "old request refused",
        "balance at the end",
        "answers signed",
        "answers in time",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(report.failed(), 0);
    assert_eq!(operator.balance("conformance", "EUR"), 5_000);
}

#[tokio::test]
async fn conformance_names_what_a_wrong_operator_gets_wrong() {
    let operator = holding("conformance", 5_000);
    let server = served(ForgetsEarlyCancels::new(operator.clone())).await;
    let endpoint = Endpoint::parse(&server.url, None).unwrap();
    let report = conformance::run(endpoint, secret(), &options()).await;
    let failed: Vec<_> = report.checks.iter().filter(|c| !c.passed).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0].name,
        "cancel before debit, then the debit refused"
    );
    assert!(
        failed[0].seen.contains("answered OK") && failed[0].seen.contains("BET_CANCELLED"),
        "{}",
        failed[0].seen
    );
    assert_eq!(
        operator.balance("conformance", "EUR"),
        5_000,
        "the debit the operator took wrongly is given back"
    );

    // An operator with another secret: its answers are not banco's to trust.
    let other = served(Arc::new(MemoryWallet::new())).await;
    let wrong_secret =
        banco_wallet::seamless::SeamlessSecret::new(b"a secret the operator does not have")
            .unwrap();
    let report = conformance::run(
        Endpoint::parse(&other.url, None).unwrap(),
        wrong_secret,
        &options(),
    )
    .await;
    assert!(report.failed() > 0);
    let signed = report
        .checks
        .iter()
        .find(|c| c.name == "answers signed")
        .unwrap();
    assert!(!signed.passed, "{}", signed.seen);
}

#[tokio::test]
async fn conformance_without_an_operator_passes_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let report = conformance::run(Endpoint::parse(&url, None).unwrap(), secret(), &options()).await;
    assert_eq!(report.passed(), 0, "{:?}", report.checks);
    assert!(
        report.checks[0].seen.contains("Connection refused"),
        "{:?}",
        report.checks[0]
    );
}
