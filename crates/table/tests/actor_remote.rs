//! The actor with [`RemoteRules`] against a real validator on 127.0.0.1: a round, a
//! misread, and the validator gone.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use actor_support::*;
use banco_auth::keys::signing_key_from_seed;
use banco_auth::{Issuer, Role};
use banco_table::{ActorError, MemorySink, Pacing, Phase, Refusal, RefusalKind, RemoteRules};
use banco_validator::{ServeOptions, serve};
use tokio::net::TcpListener;

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

#[tokio::test]
async fn remote_rules_round_misread_and_validator_down() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        metrics: None,
    };
    let server = tokio::spawn(async move {
        serve(listener, options, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let token = issuer()
        .issue(
            "table-T01",
            Role::Service,
            Duration::from_secs(600),
            SystemTime::now(),
        )
        .unwrap();
    let rules =
        RemoteRules::connect(&format!("http://{addr}"), &token, Duration::from_secs(2)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (table, task) = start_with(
        config(dir.path(), Pacing::Live),
        Arc::new(rules),
        Arc::new(MemorySink::new()),
    )
    .await;
    fund(&table, "alice", 100_000).await;
    ok(&table, open_shoe(8)).await;

    // One round, checked and settled by the validator.
    let confirmed = play_round(&table, 0).await;
    assert_eq!(confirmed.snapshot.phase, Phase::Settled);
    assert_eq!(table.balance("alice").await.unwrap(), Some(100_000 + 950));

    // Six A♠ (a 3–3 tie), then two more: the ninth is a misread.
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    ok(&table, close_betting()).await;
    for _ in 0..6 {
        ok(&table, deal("AS")).await;
    }
    ok(&table, confirm(&round)).await;
    ok(&table, open_betting()).await;
    ok(&table, close_betting()).await;
    ok(&table, deal("AS")).await;
    ok(&table, deal("AS")).await;
    let before = table.snapshot().await.unwrap();
    let err = table.submit(None, deal("AS")).await.unwrap_err();
    let ActorError::Refused(Refusal::CardRefused { code, message, .. }) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, RefusalKind::Misread);
    assert!(message.contains("ninth"), "{message}");
    assert_eq!(table.snapshot().await.unwrap(), before);

    // The validator stops: cards are refused, never accepted unchecked.
    stop.send(()).unwrap();
    server.await.unwrap();
    actor_support::refused_unreachable(&table, deal("2H")).await;
    task.shutdown().await;
}
