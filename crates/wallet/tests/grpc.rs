//! WalletService over real gRPC on loopback, with signed tokens of each role: every RPC
//! through `GrpcWallet` (the broadcaster's and the cashier's client) or the generated
//! client, idempotent replay and conflict, a cancel before its debit, self-limits with
//! their cooling-off, paged statements and movements, WatchBalances seeing a deposit, the
//! roles each call refuses, and a stopped server read as Unavailable.
#![allow(clippy::unwrap_used)]

mod store_support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions, ServeOptions};
use banco_wallet::store::{Clock, ManualClock, StoreOptions};
use banco_wallet::{Cash, Cashier as _, LimitChange, Store, TableRounds, Wallet as _, WalletError};
use banco_wire::pb;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use store_support::{HOUR, T0, TestDb, cancel_of, credit, debit, tx};
use tokio::sync::oneshot;
use tonic::Code;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

fn token(role: Role, sub: &str) -> BearerToken {
    let token = issuer()
        .issue(sub, role, Duration::from_secs(3600), SystemTime::now())
        .unwrap();
    BearerToken::new(&token).unwrap()
}

/// A wallet served on a loopback port until the sender is dropped.
struct Served {
    url: String,
    addr: std::net::SocketAddr,
    clock: Arc<ManualClock>,
    store: Store,
    _stop: oneshot::Sender<()>,
    stopped: tokio::task::JoinHandle<()>,
}

async fn serve(db: &TestDb) -> Served {
    let clock = Arc::new(ManualClock::new(T0));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let store = Store::open(
        &db.url,
        StoreOptions {
            clock: Arc::clone(&dyn_clock),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopping) = oneshot::channel::<()>();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        store: store.clone(),
        clock: dyn_clock,
        tls: None,
        metrics: None,
    };
    let stopped = tokio::spawn(async move {
        banco_wallet::grpc::serve(listener, options, async {
            let _ = stopping.await;
        })
        .await
        .unwrap();
    });
    Served {
        url: format!("grpc://{addr}"),
        addr,
        clock,
        store,
        _stop: stop,
        stopped,
    }
}

fn wallet(served: &Served, role: Role) -> GrpcWallet {
    GrpcWallet::connect(
        &served.url,
        None,
        token(role, "tester"),
        GrpcWalletOptions::default(),
    )
    .unwrap()
}

async fn raw(
    served: &Served,
    role: Role,
) -> WalletServiceClient<InterceptedService<Channel, BearerToken>> {
    let channel = Channel::from_shared(format!("http://{}", served.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    WalletServiceClient::with_interceptor(channel, token(role, "tester"))
}

async fn movements_and_refusals_cross_the_wire(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    let cashier = wallet(&served, Role::Cashier);

    let deposit = cashier
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 10_000))
        .await
        .unwrap();
    assert_eq!((deposit.balance, deposit.replayed), (10_000, false));
    // The cashier's retry with the same key moves the money once.
    let again = cashier
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 10_000))
        .await
        .unwrap();
    assert_eq!((again.balance, again.replayed), (10_000, true));
    // The same key for another amount is refused, naming the conflict.
    let conflict = cashier
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 500))
        .await
        .unwrap_err();
    assert!(
        matches!(&conflict, WalletError::Conflict { tx: t, .. } if t.as_str() == "dep-1"),
        "{conflict:?}"
    );

    let stake = debit("d1", "alice", 2_500);
    assert_eq!(table.debit(&stake).await.unwrap().balance, 7_500);
    assert!(table.debit(&stake).await.unwrap().replayed);
    let different = banco_wallet::Debit {
        amount: 3_000,
        position_total: 3_000,
        ..stake.clone()
    };
    assert!(matches!(
        table.debit(&different).await.unwrap_err(),
        WalletError::Conflict { .. }
    ));
    assert_eq!(
        table
            .debit(&debit("d-big", "alice", 50_000))
            .await
            .unwrap_err(),
        WalletError::InsufficientFunds {
            needed: 50_000,
            available: 7_500
        }
    );
    let win = table
        .credit(&credit("c1", "alice", 4_875, &["d1"]))
        .await
        .unwrap();
    assert_eq!(win.balance, 12_375);
    assert_eq!(
        table.cancel(&cancel_of(&stake)).await.unwrap_err(),
        WalletError::AlreadySettled { tx: tx("d1") }
    );
    assert_eq!(
        table
            .credit(&credit("c2", "alice", 100, &["never"]))
            .await
            .unwrap_err(),
        WalletError::DebitDoesNotExist { tx: tx("never") }
    );

    // A cancel that arrives before its debit is remembered: the late debit is refused.
    let late = debit("d2", "alice", 1_000);
    let early = table.cancel(&cancel_of(&late)).await.unwrap();
    assert_eq!(early.balance, 12_375);
    assert_eq!(
        table.debit(&late).await.unwrap_err(),
        WalletError::Cancelled { tx: tx("d2") }
    );

    let out = cashier
        .withdraw(&Cash::new(&tx("wd-1"), "alice", "EUR", 2_375))
        .await
        .unwrap();
    assert_eq!(out.balance, 10_000);
    assert_eq!(table.account("alice", "EUR").await.unwrap().balance, 10_000);
    assert_eq!(
        cashier.account("alice", "EUR").await.unwrap().balance,
        10_000
    );

    // Blocked: no debits, the cashier still pays out.
    assert!(
        cashier
            .set_blocked("alice", "EUR", true)
            .await
            .unwrap()
            .blocked
    );
    assert_eq!(
        table.debit(&debit("d3", "alice", 100)).await.unwrap_err(),
        WalletError::AccountBlocked
    );
    cashier
        .withdraw(&Cash::new(&tx("wd-2"), "alice", "EUR", 100))
        .await
        .unwrap();
    assert!(
        !cashier
            .set_blocked("alice", "EUR", false)
            .await
            .unwrap()
            .blocked
    );
    // A refusal is an answer too: the same request again gets it again.
    assert_eq!(
        table.debit(&debit("d3", "alice", 100)).await.unwrap_err(),
        WalletError::AccountBlocked
    );
    table.debit(&debit("d4", "alice", 100)).await.unwrap();

    // An invalid request is refused naming the field, and nothing moves.
    let invalid = cashier
        .deposit(&Cash::new(&tx("dep-2"), "alice", "EURO", 100))
        .await
        .unwrap_err();
    assert!(
        matches!(&invalid, WalletError::Invalid(m) if m.contains("currency")),
        "{invalid:?}"
    );
    let mut service = raw(&served, Role::Service).await;
    let bad_id = service
        .debit(pb::DebitRequest {
            tx_id: "no spaces".to_owned(),
            ..pb::DebitRequest::from(&debit("x", "alice", 100))
        })
        .await
        .unwrap_err();
    assert_eq!(bad_id.code(), Code::InvalidArgument);
    assert!(bad_id.message().contains("`tx_id`"), "{bad_id:?}");
    assert_eq!(table.account("alice", "EUR").await.unwrap().balance, 9_800);
    assert!(served.store.check_books().await.unwrap().is_empty());
}

async fn self_limits_apply_at_once_when_lowered_and_after_cooling_off_when_raised(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    let cashier = wallet(&served, Role::Cashier);
    cashier
        .deposit(&Cash::new(&tx("dep"), "bob", "EUR", 100_000))
        .await
        .unwrap();
    let lowered = table
        .set_self_limit(&LimitChange::new("bob", "EUR", Some(1_000), 0))
        .await
        .unwrap();
    assert_eq!((lowered.max_bet, lowered.pending), (Some(1_000), None));
    assert_eq!(
        table.debit(&debit("over", "bob", 1_500)).await.unwrap_err(),
        WalletError::SelfLimit {
            limit: 1_000,
            asked: 1_500
        }
    );
    // A raise waits for the cooling-off, by the wallet's clock (not the caller's).
    let raised = table
        .set_self_limit(&LimitChange::new("bob", "EUR", Some(5_000), 1))
        .await
        .unwrap();
    assert_eq!(raised.max_bet, Some(1_000));
    assert_eq!(raised.pending, Some((Some(5_000), T0 + 24 * HOUR)));
    let view = table.account("bob", "EUR").await.unwrap();
    assert_eq!(view.self_limit, raised);
    // A second raise within the week is refused, saying when.
    let again = table
        .set_self_limit(&LimitChange::new("bob", "EUR", None, 0))
        .await
        .unwrap_err();
    assert!(matches!(again, WalletError::Invalid(_)), "{again:?}");
    served.clock.advance(24 * HOUR);
    assert_eq!(
        table
            .account("bob", "EUR")
            .await
            .unwrap()
            .self_limit
            .max_bet,
        Some(5_000)
    );
    table.debit(&debit("now-fine", "bob", 1_500)).await.unwrap();
}

async fn statements_and_movements_are_paged(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    let cashier = wallet(&served, Role::Cashier);
    cashier
        .deposit(&Cash::new(&tx("dep"), "carol", "EUR", 10_000))
        .await
        .unwrap();
    for i in 0..4 {
        table
            .debit(&debit(&format!("d{i}"), "carol", 100))
            .await
            .unwrap();
    }
    cashier
        .deposit(&Cash::new(&tx("dep-dave"), "dave", "EUR", 500))
        .await
        .unwrap();

    let first = cashier.statement("carol", "EUR", 3, None).await.unwrap();
    let ids: Vec<&str> = first.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(ids, ["d3", "d2", "d1"]);
    assert_eq!(first.movements[0].balance, 9_600);
    assert_eq!(first.movements[0].delta, -100);
    let next = first.next_page_token.as_deref().unwrap();
    let second = cashier
        .statement("carol", "EUR", 3, Some(next))
        .await
        .unwrap();
    let ids: Vec<&str> = second.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(ids, ["d0", "dep"]);
    assert_eq!(second.next_page_token, None);

    let mut auditor = raw(&served, Role::Auditor).await;
    let statement = auditor
        .statement(pb::StatementRequest {
            player_id: "carol".to_owned(),
            currency: "EUR".to_owned(),
            page_size: 0,
            page_token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(statement.movements.len(), 5);
    let bad = auditor
        .statement(pb::StatementRequest {
            player_id: "carol".to_owned(),
            currency: "EUR".to_owned(),
            page_size: 10,
            page_token: "yesterday".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("page_token"), "{bad:?}");
    // Carol's page token does not page through Dave's statement.
    let astray = auditor
        .statement(pb::StatementRequest {
            player_id: "dave".to_owned(),
            currency: "EUR".to_owned(),
            page_size: 10,
            page_token: next.to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(astray.code(), Code::InvalidArgument);
    assert_eq!(
        astray.message(),
        format!(
            "page_token: page token {next} names no movement of dave in EUR: start again from the first page"
        )
    );

    let by_table = auditor
        .movements(pb::MovementsRequest {
            table_id: "T01".to_owned(),
            page_size: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<&str> = by_table
        .movements
        .iter()
        .map(|m| m.tx_id.as_str())
        .collect();
    assert_eq!(ids, ["d0", "d1", "d2"]);
    let rest = auditor
        .movements(pb::MovementsRequest {
            table_id: "T01".to_owned(),
            page_size: 3,
            page_token: by_table.next_page_token,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rest.movements.len(), 1);
    assert!(rest.next_page_token.is_empty());
    let cashier_only = auditor
        .movements(pb::MovementsRequest {
            cashier_only: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<&str> = cashier_only
        .movements
        .iter()
        .map(|m| m.tx_id.as_str())
        .collect();
    assert_eq!(ids, ["dep", "dep-dave"]);
    let both = auditor
        .movements(pb::MovementsRequest {
            cashier_only: true,
            table_id: "T01".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(both.code(), Code::InvalidArgument);
    assert!(both.message().contains("cashier_only"), "{both:?}");
}

async fn watch_balances_sees_a_deposit(db: TestDb) {
    let served = serve(&db).await;
    let cashier = wallet(&served, Role::Cashier);
    // The generated client: once its reply's headers are in, the watch is on.
    let mut service = raw(&served, Role::Service).await;
    let mut stream = service
        .watch_balances(pb::WatchBalancesRequest {})
        .await
        .unwrap()
        .into_inner();
    cashier
        .deposit(&Cash::new(&tx("dep-1"), "erin", "EUR", 2_000))
        .await
        .unwrap();
    let reply = stream.message().await.unwrap().unwrap();
    let Some(pb::watch_balances_reply::Event::Change(change)) = reply.event else {
        panic!("{reply:?}");
    };
    assert_eq!(
        (
            change.player_id.as_str(),
            change.balance_minor,
            change.delta_minor
        ),
        ("erin", 2_000, 2_000)
    );
    assert_eq!(change.kind, i32::from(pb::MovementKind::Deposit));
    assert_eq!(change.table_id, "");

    // GrpcWallet's changes: its watch starts in the background, so deposits are made
    // until one is seen; it must be one of them, as deposited.
    let table = wallet(&served, Role::Service);
    let mut changes = table.changes().unwrap();
    let mut made = Vec::new();
    let seen = loop {
        let key = format!("dep-w{}", made.len());
        cashier
            .deposit(&Cash::new(&tx(&key), "erin", "EUR", 1))
            .await
            .unwrap();
        made.push(key);
        if let Ok(committed) =
            tokio::time::timeout(Duration::from_millis(200), changes.recv()).await
        {
            break committed.unwrap()[0].clone();
        }
    };
    assert!(
        made.contains(&seen.tx.to_string()),
        "{seen:?} not one of {made:?}"
    );
    assert_eq!(
        (seen.player.as_str(), seen.delta, seen.reason.as_str()),
        ("erin", 1, "deposit")
    );
}

async fn each_role_is_refused_the_calls_it_may_not_make(db: TestDb) {
    let served = serve(&db).await;
    // A cashier cannot stake; a table cannot pay in; a player reaches nothing.
    let cashier_staking = wallet(&served, Role::Cashier)
        .debit(&debit("d1", "mallory", 100))
        .await
        .unwrap_err();
    assert!(
        matches!(&cashier_staking, WalletError::Invalid(m) if m.contains("permission_denied") && m.contains("role cashier")),
        "{cashier_staking:?}"
    );
    let table_paying = wallet(&served, Role::Service)
        .deposit(&Cash::new(&tx("k"), "mallory", "EUR", 100))
        .await
        .unwrap_err();
    assert!(
        matches!(&table_paying, WalletError::Invalid(m) if m.contains("role service")),
        "{table_paying:?}"
    );
    let mut player = raw(&served, Role::Player).await;
    let status = player
        .balance(pb::BalanceRequest {
            player_id: "mallory".to_owned(),
            currency: "EUR".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert!(status.message().contains("player"), "{status:?}");
    let mut auditor = raw(&served, Role::Auditor).await;
    let status = auditor
        .deposit(pb::CashRequest {
            key: "k".to_owned(),
            player_id: "mallory".to_owned(),
            currency: "EUR".to_owned(),
            amount_minor: 100,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(
        served
            .store
            .account_view("mallory", "EUR")
            .await
            .unwrap()
            .balance,
        0
    );
}

/// A table's debits sent together cross in one DebitMany call, decided in one commit,
/// each answered in its order (taken, refused, the first answer again); a bad one makes
/// the whole call invalid, naming it, and moves nothing.
async fn debits_sent_together_cross_in_one_call(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    let cashier = wallet(&served, Role::Cashier);
    cashier
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 1_000))
        .await
        .unwrap();
    let early = debit("d-early", "alice", 100);
    table.cancel(&cancel_of(&early)).await.unwrap();
    let first = table.debit(&debit("d0", "alice", 100)).await.unwrap();
    let debits = [
        debit("d1", "alice", 500),
        debit("d2", "alice", 500),
        early,
        debit("d0", "alice", 100),
    ];
    let before = served.store.commit_stats().commits;
    let answers = table.debit_many(&debits, Duration::from_secs(10)).await;
    assert_eq!(served.store.commit_stats().commits, before + 1);
    let answers: Vec<Result<(i64, bool), WalletError>> = answers
        .into_iter()
        .map(|a| a.map(|r| (r.balance, r.replayed)))
        .collect();
    assert_eq!(
        answers,
        vec![
            Ok((400, false)),
            Err(WalletError::InsufficientFunds {
                needed: 500,
                available: 400
            }),
            Err(WalletError::Cancelled { tx: tx("d-early") }),
            Ok((first.balance, true)),
        ]
    );

    let mut bad = debit("d3", "alice", 100);
    bad.amount = 0;
    let answers = table
        .debit_many(&[debit("d4", "alice", 100), bad], Duration::from_secs(10))
        .await;
    assert_eq!(answers.len(), 2);
    for answer in answers {
        assert!(
            matches!(&answer, Err(WalletError::Invalid(m)) if m.contains("debits[1]") && m.contains("amount_minor")),
            "{answer:?}"
        );
    }
    assert_eq!(table.account("alice", "EUR").await.unwrap().balance, 400);
}

async fn a_stopped_wallet_is_unavailable(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    assert_eq!(table.account("frank", "EUR").await.unwrap().balance, 0);
    let Served { _stop, stopped, .. } = served;
    drop(_stop);
    stopped.await.unwrap();
    let error = table.debit(&debit("d1", "frank", 100)).await.unwrap_err();
    assert!(error.is_transient(), "{error:?}");
    // And one that was never there.
    let nobody = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("grpc://{}", nobody.local_addr().unwrap());
    drop(nobody);
    let never = GrpcWallet::connect(
        &url,
        None,
        token(Role::Service, "t"),
        GrpcWalletOptions::default(),
    )
    .unwrap();
    let error = never.account("frank", "EUR").await.unwrap_err();
    assert!(matches!(error, WalletError::Unavailable(_)), "{error:?}");
}

/// What a table starting a new journal asks `banco wallet`: the round of the table's
/// newest movement, or none; a table id is required, and only a table may ask.
async fn a_table_asks_which_of_its_rounds_the_wallet_holds(db: TestDb) {
    let served = serve(&db).await;
    let table = wallet(&served, Role::Service);
    assert_eq!(table.table_rounds("T01").await, Ok(TableRounds::None));
    wallet(&served, Role::Cashier)
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 1_000))
        .await
        .unwrap();
    table.debit(&debit("d1", "alice", 100)).await.unwrap();
    assert_eq!(
        table.table_rounds("T01").await,
        Ok(TableRounds::Newest("T01-S0001-H001".to_owned()))
    );
    assert_eq!(table.table_rounds("T02").await, Ok(TableRounds::None));

    let status = raw(&served, Role::Service)
        .await
        .table_rounds(pb::TableRoundsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains("table_id"), "{status:?}");
    let status = raw(&served, Role::Cashier)
        .await
        .table_rounds(pb::TableRoundsRequest {
            table_id: "T01".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
}

/// A `banco wallet` from before TableRounds answers it UNIMPLEMENTED, as a server without
/// the call does: the table is told the wallet cannot say, and starts with a warning.
#[tokio::test]
async fn a_wallet_without_the_call_cannot_tell() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_routes(tonic::service::Routes::default())
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let table = GrpcWallet::connect(
        &format!("grpc://{addr}"),
        None,
        token(Role::Service, "tester"),
        GrpcWalletOptions::default(),
    )
    .unwrap();
    assert_eq!(table.table_rounds("T01").await, Ok(TableRounds::CannotTell));
}

banco_testdb::both_backends!(
    file = "wallet.db";
    a_table_asks_which_of_its_rounds_the_wallet_holds,
    movements_and_refusals_cross_the_wire,
    self_limits_apply_at_once_when_lowered_and_after_cooling_off_when_raised,
    statements_and_movements_are_paged,
    watch_balances_sees_a_deposit,
    each_role_is_refused_the_calls_it_may_not_make,
    debits_sent_together_cross_in_one_call,
    a_stopped_wallet_is_unavailable,
);
