//! The store keeps the Wallet contract, on SQLite always and again on PostgreSQL when
//! `DATABASE_URL` is set: every movement and refusal, idempotency and conflicts, a cancel
//! before its debit, no negative balance under concurrent debits (several tasks; two
//! stores on one PostgreSQL), self-limits with a manual clock, blocking, statements and
//! the reconciliation list, books that always balance, and a close that answers what came
//! before it.
#![allow(clippy::unwrap_used)]

mod store_support;

use std::sync::Arc;
use std::time::Duration;

use banco_wallet::store::{Kind, ManualClock, MovementFilter, PAGE_BYTES, StoreMetrics};
use banco_wallet::{
    Cash, Cashier as _, Debit, LimitChange, SelfLimit, Store, StoreOptions, TableRounds,
    Wallet as _, WalletError,
};
use store_support::{HOUR, T0, TestDb, cancel_of, credit, debit, open, open_with_clock, tx};

async fn deposit(store: &Store, key: &str, player: &str, amount: i64) -> i64 {
    store
        .deposit(&Cash::new(&tx(key), player, "EUR", amount))
        .await
        .unwrap()
        .balance
}

async fn balance(store: &Store, player: &str) -> i64 {
    store.account(player, "EUR").await.unwrap().balance
}

async fn books_balance(store: &Store) {
    assert_eq!(store.check_books().await.unwrap(), Vec::<String>::new());
}

/// The memory wallet's contract, step by step: each answer, and the balance after it.
async fn every_movement_and_refusal(db: TestDb) {
    let store = open(&db).await;
    assert_eq!(deposit(&store, "dep-1", "alice", 1_000).await, 1_000);
    let again = store
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 1_000))
        .await
        .unwrap();
    assert!(again.replayed, "the same key deposits once");
    assert_eq!(balance(&store, "alice").await, 1_000);

    let d1 = debit("d1", "alice", 600);
    let taken = store.debit(&d1).await.unwrap();
    assert_eq!((taken.balance, taken.replayed), (400, false));
    assert!(
        store.debit(&d1).await.unwrap().replayed,
        "same id, same answer"
    );
    assert_eq!(
        store.debit(&debit("d2", "alice", 500)).await,
        Err(WalletError::InsufficientFunds {
            needed: 500,
            available: 400
        })
    );
    // A refusal is an answer too: the same request gets it again, even once it could pass.
    deposit(&store, "dep-2", "alice", 1_000).await;
    assert!(matches!(
        store.debit(&debit("d2", "alice", 500)).await,
        Err(WalletError::InsufficientFunds { .. })
    ));
    assert_eq!(balance(&store, "alice").await, 1_400);

    // A cancel after its debit gives the money back, once.
    let d4 = debit("d4", "alice", 100);
    assert_eq!(store.debit(&d4).await.unwrap().balance, 1_300);
    assert_eq!(store.cancel(&cancel_of(&d4)).await.unwrap().balance, 1_400);
    assert!(store.cancel(&cancel_of(&d4)).await.unwrap().replayed);
    let mut second = cancel_of(&d4);
    second.tx = tx("cancel-again:d4");
    assert_eq!(store.cancel(&second).await.unwrap().balance, 1_400);
    assert!(
        matches!(store.credit(&credit("c4", "alice", 200, &["d4"])).await,
            Err(WalletError::DebitDoesNotExist { tx }) if tx.as_str() == "d4"),
        "a cancelled debit cannot be settled"
    );

    // A credit settles its debit, which can then no longer be cancelled.
    let c1 = credit("c1", "alice", 1_170, &["d1"]);
    assert_eq!(store.credit(&c1).await.unwrap().balance, 2_570);
    assert!(store.credit(&c1).await.unwrap().replayed);
    assert_eq!(
        store.cancel(&cancel_of(&d1)).await,
        Err(WalletError::AlreadySettled { tx: tx("d1") })
    );
    assert_eq!(
        store.credit(&credit("c9", "alice", 10, &["never"])).await,
        Err(WalletError::DebitDoesNotExist { tx: tx("never") })
    );
    // A losing bet's settlement moves nothing but closes the bet.
    let d5 = debit("d5", "alice", 70);
    store.debit(&d5).await.unwrap();
    assert_eq!(
        store
            .credit(&credit("c5", "alice", 0, &["d5"]))
            .await
            .unwrap()
            .balance,
        2_500
    );

    // Withdrawals: never below zero.
    assert_eq!(
        store
            .withdraw(&Cash::new(&tx("wd-1"), "alice", "EUR", 2_501))
            .await,
        Err(WalletError::InsufficientFunds {
            needed: 2_501,
            available: 2_500
        })
    );
    assert_eq!(
        store
            .withdraw(&Cash::new(&tx("wd-2"), "alice", "EUR", 500))
            .await
            .unwrap()
            .balance,
        2_000
    );

    // Bad input is refused naming the field, and is not remembered.
    for (bad, field) in [
        (debit("bad-1", "alice", 0), "amount_minor 0"),
        (debit("bad-2", "", 10), "player: empty"),
        (
            {
                let mut d = debit("bad-3", "alice", 10);
                d.currency = "eur".to_owned();
                d
            },
            "currency `eur`",
        ),
        (
            {
                let mut d = debit("bad-4", "alice", 10);
                d.position_total = 5;
                d
            },
            "position_total_minor 5",
        ),
    ] {
        match store.debit(&bad).await {
            Err(WalletError::Invalid(why)) => assert!(why.starts_with(field), "{why}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    assert_eq!(
        store
            .debit(&debit("bad-1", "alice", 10))
            .await
            .unwrap()
            .balance,
        1_990,
        "an invalid request leaves its id free"
    );
    match store.credit(&credit("c-bob", "bob", 10, &["d5"])).await {
        Err(WalletError::Invalid(why)) => {
            assert_eq!(
                why,
                "debits: `d5` is a debit of alice in EUR, not of bob in EUR"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(balance(&store, "bob").await, 0);
    books_balance(&store).await;
    store.close().await;

    // Everything acknowledged is there after a restart.
    let store = open(&db).await;
    assert_eq!(balance(&store, "alice").await, 1_990);
    assert!(store.debit(&d1).await.unwrap().replayed);
    store.close().await;
}

/// The same id with another request is refused naming what differs, and changes nothing.
async fn conflicts_name_what_differs(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    store.debit(&debit("d1", "alice", 600)).await.unwrap();
    let mut other = debit("d1", "alice", 500);
    other.bet = "player".to_owned();
    assert_eq!(
        store.debit(&other).await,
        Err(WalletError::Conflict {
            tx: tx("d1"),
            why: "bet `player`, was `banker`; amount_minor 500, was 600; \
                  position_total_minor 500, was 600"
                .to_owned()
        })
    );
    assert_eq!(
        store.credit(&credit("d1", "alice", 600, &[])).await,
        Err(WalletError::Conflict {
            tx: tx("d1"),
            why: "it was a debit, this is a credit".to_owned()
        })
    );
    assert_eq!(
        store
            .withdraw(&Cash::new(&tx("dep-1"), "alice", "EUR", 1_000))
            .await,
        Err(WalletError::Conflict {
            tx: tx("dep-1"),
            why: "it was a deposit, this is a withdrawal".to_owned()
        })
    );
    assert_eq!(
        store
            .deposit(&Cash::new(&tx("dep-1"), "bob", "EUR", 1_000))
            .await,
        Err(WalletError::Conflict {
            tx: tx("dep-1"),
            why: "player `bob`, was `alice`".to_owned()
        })
    );
    assert_eq!(balance(&store, "alice").await, 400);
    assert_eq!(balance(&store, "bob").await, 0);
    books_balance(&store).await;
}

/// A cancel that arrives before its debit is remembered: the late debit is refused and
/// moves nothing.
async fn a_cancel_before_its_debit_is_remembered(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    let d3 = debit("d3", "alice", 100);
    assert_eq!(store.cancel(&cancel_of(&d3)).await.unwrap().balance, 1_000);
    assert_eq!(
        store.debit(&d3).await,
        Err(WalletError::Cancelled { tx: tx("d3") })
    );
    assert_eq!(
        store.debit(&d3).await,
        Err(WalletError::Cancelled { tx: tx("d3") })
    );
    assert_eq!(balance(&store, "alice").await, 1_000);
    books_balance(&store).await;
}

/// Many debits of one player at once from several tasks: exactly as many as the balance
/// covers are taken, the others refused, and the balance never goes below zero.
async fn no_negative_balance_under_concurrent_debits(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    let mut tasks = Vec::new();
    for n in 0..300 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut d = debit(&format!("d{n}"), "alice", 10);
            d.table = format!("T{:02}", n % 7);
            store.debit(&d).await
        }));
    }
    let mut taken = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(receipt) => {
                assert!(receipt.balance >= 0);
                taken += 1;
            }
            Err(WalletError::InsufficientFunds {
                needed: 10,
                available: 0,
            }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(taken, 100);
    assert_eq!(balance(&store, "alice").await, 0);
    books_balance(&store).await;
}

/// Many players' debits sent together are decided in one transaction, in their order,
/// each answered as on its own: taken, refused (no funds, a cancel before it), or the
/// first answer again for an id seen before.
async fn debits_sent_together_commit_once(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    deposit(&store, "dep-2", "bob", 1_000).await;
    let cancelled = debit("d-early", "bob", 100);
    store.cancel(&cancel_of(&cancelled)).await.unwrap();
    let repeated = debit("d-again", "alice", 100);
    let first = store.debit(&repeated).await.unwrap();
    let debits = [
        debit("d1", "alice", 300),
        debit("d2", "bob", 600),
        debit("d3", "alice", 700),
        cancelled,
        repeated,
        debit("d4", "bob", 400),
    ];
    let before = store.commit_stats().commits;
    let answers = store.debit_many(&debits, Duration::from_secs(10)).await;
    assert_eq!(store.commit_stats().commits, before + 1);
    let balances: Vec<Result<i64, WalletError>> = answers
        .into_iter()
        .map(|a| a.map(|receipt| receipt.balance))
        .collect();
    assert_eq!(
        balances,
        vec![
            Ok(600),
            Ok(400),
            Err(WalletError::InsufficientFunds {
                needed: 700,
                available: 600
            }),
            Err(WalletError::Cancelled { tx: tx("d-early") }),
            Ok(first.balance),
            Ok(0),
        ]
    );
    assert_eq!(balance(&store, "alice").await, 600);
    assert_eq!(balance(&store, "bob").await, 0);
    books_balance(&store).await;
    // Each account's statement, chained through movements of the same commit.
    assert_eq!(statement(&store, "alice").await, ["d1", "d-again", "dep-1"]);
    assert_eq!(
        statement(&store, "bob").await,
        ["d4", "d2", "cancel:d-early", "dep-2"]
    );
}

/// The ids of `player`'s statement in EUR, newest first, read a page of two at a time.
async fn statement(store: &Store, player: &str) -> Vec<String> {
    let mut txs = Vec::new();
    let mut next = None;
    loop {
        let page = store.statement(player, "EUR", next, 2).await.unwrap();
        txs.extend(page.movements.iter().map(|m| m.tx.as_str().to_owned()));
        next = page.next;
        if next.is_none() {
            return txs;
        }
    }
}

/// A batch wider than one look-up (1,024 accounts and ids a statement on PostgreSQL) is
/// decided whole: each account read once, the earlier request of a repeated id and the
/// mark of a cancelled debit found in the look-up after the first, a player's second
/// currency in an account of its own (and one never paid into decided empty), and every
/// balance exact.
async fn a_batch_wider_than_one_look_up(db: TestDb) {
    const PLAYERS: usize = 1_100;
    let store = open(&db).await;
    let names: Vec<String> = (0..PLAYERS).map(|p| format!("p{p:04}")).collect();
    let deposits = names.iter().enumerate().map(|(p, name)| {
        let store = store.clone();
        async move { deposit(&store, &format!("dep-{p}"), name, 1_000).await }
    });
    assert!(
        futures::future::join_all(deposits)
            .await
            .iter()
            .all(|&b| b == 1_000)
    );
    let last = &names[PLAYERS - 1];
    let repeated = debit("d-again", last, 100);
    let first = store.debit(&repeated).await.unwrap();
    let cancelled = debit("d-early", last, 50);
    store.cancel(&cancel_of(&cancelled)).await.unwrap();
    let mut debits: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(p, name)| debit(&format!("d{p:04}"), name, 10 + p as i64 % 7))
        .collect();
    debits.push(repeated);
    debits.push(cancelled);
    debits.push(debit("d-over", &names[0], 1_000));
    store
        .deposit(&Cash::new(&tx("dep-gbp"), last, "GBP", 500))
        .await
        .unwrap();
    let in_currency = |id: &str, player: &str, currency: &str| Debit {
        currency: currency.to_owned(),
        ..debit(id, player, 30)
    };
    debits.push(in_currency("d-gbp", last, "GBP"));
    debits.push(in_currency("d-chf", last, "CHF"));
    let before = store.commit_stats().commits;
    let answers = store.debit_many(&debits, Duration::from_secs(60)).await;
    assert_eq!(store.commit_stats().commits, before + 1);
    for (p, answer) in answers.iter().take(PLAYERS).enumerate() {
        let already = if p == PLAYERS - 1 { 100 } else { 0 };
        assert_eq!(
            answer.as_ref().map(|r| r.balance),
            Ok(1_000 - already - (10 + p as i64 % 7))
        );
    }
    assert_eq!(answers[PLAYERS].as_ref().unwrap().balance, first.balance);
    assert!(answers[PLAYERS].as_ref().unwrap().replayed);
    assert_eq!(
        answers[PLAYERS + 1],
        Err(WalletError::Cancelled { tx: tx("d-early") })
    );
    assert_eq!(
        answers[PLAYERS + 2],
        Err(WalletError::InsufficientFunds {
            needed: 1_000,
            available: 990
        })
    );
    assert_eq!(answers[PLAYERS + 3].as_ref().unwrap().balance, 470);
    assert_eq!(
        answers[PLAYERS + 4],
        Err(WalletError::InsufficientFunds {
            needed: 30,
            available: 0
        })
    );
    for (p, name) in names.iter().enumerate() {
        let already = if p == PLAYERS - 1 { 100 } else { 0 };
        assert_eq!(
            balance(&store, name).await,
            1_000 - already - (10 + p as i64 % 7)
        );
    }
    assert_eq!(store.account(last, "GBP").await.unwrap().balance, 470);
    books_balance(&store).await;
}

/// A player's own limit: lowering at once; a raise or removal after the cooling-off, at
/// most once in the period; checked on every debit against the position's total.
async fn self_limits_cool_off(db: TestDb) {
    let clock = Arc::new(ManualClock::new(T0));
    let store = open_with_clock(&db, Arc::clone(&clock)).await;
    deposit(&store, "dep-1", "alice", 100_000).await;
    let limit = |max_bet, pending| SelfLimit { max_bet, pending };

    assert_eq!(
        store
            .set_self_limit(&LimitChange::new("alice", "EUR", Some(5_000), T0))
            .await,
        Ok(limit(Some(5_000), None)),
        "a first limit is a lowering: at once"
    );
    let mut big = debit("d1", "alice", 1_000);
    big.position_total = 6_000;
    assert_eq!(
        store.debit(&big).await,
        Err(WalletError::SelfLimit {
            limit: 5_000,
            asked: 6_000
        })
    );
    // Raising waits 24 h.
    let raised_at = T0 + HOUR;
    clock.set(raised_at);
    assert_eq!(
        store
            .set_self_limit(&LimitChange::new("alice", "EUR", Some(10_000), raised_at))
            .await,
        Ok(limit(
            Some(5_000),
            Some((Some(10_000), raised_at + 24 * HOUR))
        ))
    );
    clock.set(raised_at + 24 * HOUR - 1);
    let mut d2 = debit("d2", "alice", 6_000);
    d2.position_total = 6_000;
    assert!(matches!(
        store.debit(&d2).await,
        Err(WalletError::SelfLimit { limit: 5_000, .. })
    ));
    clock.set(raised_at + 24 * HOUR);
    let mut d3 = debit("d3", "alice", 6_000);
    d3.position_total = 6_000;
    assert_eq!(store.debit(&d3).await.unwrap().balance, 94_000);
    assert_eq!(
        store.account("alice", "EUR").await.unwrap().self_limit,
        limit(Some(10_000), None)
    );
    // A second raise (or a removal) within 7 days of the first is refused.
    let now = raised_at + 3 * 24 * HOUR;
    match store
        .set_self_limit(&LimitChange::new("alice", "EUR", None, now))
        .await
    {
        Err(WalletError::Invalid(why)) => assert_eq!(
            why,
            "max_bet_minor: a limit may be raised or removed once every 168 h; the last was \
             asked 72 h ago, the next may be asked in 96 h"
        ),
        other => panic!("{other:?}"),
    }
    // Lowering is always at once, and drops a raise waiting.
    assert_eq!(
        store
            .set_self_limit(&LimitChange::new("alice", "EUR", Some(2_000), now))
            .await,
        Ok(limit(Some(2_000), None))
    );
    // After the period, a removal may be asked; it too waits for the cooling-off.
    let later = raised_at + 7 * 24 * HOUR;
    assert_eq!(
        store
            .set_self_limit(&LimitChange::new("alice", "EUR", None, later))
            .await,
        Ok(limit(Some(2_000), Some((None, later + 24 * HOUR))))
    );
    clock.set(later + 24 * HOUR);
    assert_eq!(
        store.account("alice", "EUR").await.unwrap().self_limit,
        limit(None, None)
    );
    match store
        .set_self_limit(&LimitChange::new("alice", "EUR", Some(0), later))
        .await
    {
        Err(WalletError::Invalid(why)) => assert!(why.starts_with("max_bet_minor 0"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// A blocked account takes no debit; money back to it and the cashier still go through.
async fn a_blocked_account_takes_no_debit(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    let d1 = debit("d1", "alice", 100);
    store.debit(&d1).await.unwrap();
    assert!(
        store
            .set_blocked("alice", "EUR", true)
            .await
            .unwrap()
            .blocked
    );
    assert_eq!(
        store.debit(&debit("d2", "alice", 100)).await,
        Err(WalletError::AccountBlocked)
    );
    assert_eq!(
        store
            .credit(&credit("c1", "alice", 200, &["d1"]))
            .await
            .unwrap()
            .balance,
        1_100
    );
    assert_eq!(
        store
            .withdraw(&Cash::new(&tx("wd-1"), "alice", "EUR", 1_100))
            .await
            .unwrap()
            .balance,
        0
    );
    assert!(
        !store
            .set_blocked("alice", "EUR", false)
            .await
            .unwrap()
            .blocked
    );
    deposit(&store, "dep-2", "alice", 100).await;
    assert_eq!(
        store
            .debit(&debit("d3", "alice", 100))
            .await
            .unwrap()
            .balance,
        0
    );
}

/// A statement lists a player's movements newest first, in pages; the reconciliation
/// list takes a time range and a table, oldest first.
async fn statements_and_reconciliation_page(db: TestDb) {
    let clock = Arc::new(ManualClock::new(T0));
    let store = open_with_clock(&db, Arc::clone(&clock)).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    deposit(&store, "dep-bob", "bob", 1_000).await;
    for n in 0..5_u64 {
        clock.set(T0 + (n + 1) * HOUR);
        let mut d = debit(&format!("d{n}"), "alice", 10);
        d.table = if n % 2 == 0 { "T01" } else { "T02" }.to_owned();
        store.debit(&d).await.unwrap();
    }
    // Refusals are answers, not movements: they are not listed.
    store
        .debit(&debit("refused", "alice", 5_000))
        .await
        .unwrap_err();

    let first = store.statement("alice", "EUR", None, 4).await.unwrap();
    let txs: Vec<&str> = first.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(txs, ["d4", "d3", "d2", "d1"]);
    assert_eq!(first.movements[0].balance, 950);
    assert_eq!(first.movements[0].delta, -10);
    assert_eq!(first.movements[0].kind, Kind::Debit);
    assert_eq!(first.movements[0].at_ms, T0 + 5 * HOUR);
    let second = store
        .statement("alice", "EUR", first.next, 4)
        .await
        .unwrap();
    let txs: Vec<&str> = second.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(txs, ["d0", "dep-1"]);
    assert_eq!(second.next, None);
    // A page token leads on only from a movement of the account it was given for.
    let next = first.next.unwrap();
    let astray = store
        .statement("bob", "EUR", first.next, 4)
        .await
        .unwrap_err();
    assert_eq!(
        astray.to_string(),
        format!(
            "page token {next} names no movement of bob in EUR: start again from the first page"
        )
    );
    assert!(
        store
            .statement("carol", "EUR", None, 4)
            .await
            .unwrap()
            .movements
            .is_empty()
    );

    let t01 = MovementFilter {
        table: Some("T01".to_owned()),
        from_ms: Some(T0 + 2 * HOUR),
        to_ms: Some(T0 + 6 * HOUR),
        after: None,
    };
    let page = store.movements(&t01, 1).await.unwrap();
    assert_eq!(page.movements[0].tx.as_str(), "d2");
    let page = store
        .movements(
            &MovementFilter {
                after: page.next,
                ..t01
            },
            10,
        )
        .await
        .unwrap();
    let txs: Vec<&str> = page.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!((txs, page.next), (vec!["d4"], None));
    let cashier = MovementFilter {
        table: Some(String::new()),
        ..MovementFilter::default()
    };
    let page = store.movements(&cashier, 10).await.unwrap();
    let txs: Vec<&str> = page.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(txs, ["dep-1", "dep-bob"]);
}

/// Every change of a balance is published once committed, with its reason and table.
async fn balance_changes_are_published(db: TestDb) {
    let store = open(&db).await;
    let mut changes = banco_wallet::Wallet::changes(&store).unwrap();
    deposit(&store, "dep-1", "alice", 1_000).await;
    let d1 = debit("d1", "alice", 100);
    store.debit(&d1).await.unwrap();
    store.debit(&d1).await.unwrap();
    store.cancel(&cancel_of(&d1)).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let committed = changes.recv().await.unwrap();
        assert_eq!(committed.len(), 1, "one request, one commit: {committed:?}");
        let c = committed[0].clone();
        seen.push((c.reason, c.delta, c.balance, c.table, c.tx.to_string()));
    }
    assert_eq!(
        seen,
        [
            (
                "deposit".to_owned(),
                1_000,
                1_000,
                String::new(),
                "dep-1".to_owned()
            ),
            (
                "debit".to_owned(),
                -100,
                900,
                "T01".to_owned(),
                "d1".to_owned()
            ),
            (
                "cancel".to_owned(),
                100,
                1_000,
                "T01".to_owned(),
                "cancel:d1".to_owned()
            ),
        ]
    );
    assert!(changes.try_recv().is_err(), "a replay changes nothing");
    // Debits sent together commit together: their changes come in one message, in order.
    let debits = [debit("d2", "alice", 100), debit("d3", "alice", 200)];
    for answer in store.debit_many(&debits, Duration::from_secs(10)).await {
        answer.unwrap();
    }
    let committed = changes.recv().await.unwrap();
    let seen: Vec<(String, i64)> = committed
        .iter()
        .map(|c| (c.tx.to_string(), c.balance))
        .collect();
    assert_eq!(seen, [("d2".to_owned(), 900), ("d3".to_owned(), 700)]);
}

/// Every movement raises its account's version, so a table told two balances keeps the
/// newer; a repeated request answers the version it first had; a refusal moves nothing.
async fn versions_order_each_account(db: TestDb) {
    let store = open(&db).await;
    let version = |r: banco_wallet::Receipt| r.version;
    let dep = store
        .deposit(&Cash::new(&tx("dep-1"), "alice", "EUR", 1_000))
        .await;
    assert_eq!(dep.map(version), Ok(Some(1)));
    let d1 = debit("d1", "alice", 600);
    assert_eq!(store.debit(&d1).await.map(version), Ok(Some(2)));
    let bob = store
        .deposit(&Cash::new(&tx("dep-bob"), "bob", "EUR", 50))
        .await;
    assert_eq!(bob.map(version), Ok(Some(1)), "per account");
    assert!(store.debit(&debit("d2", "alice", 5_000)).await.is_err());
    let c1 = credit("c1", "alice", 1_200, &["d1"]);
    assert_eq!(store.credit(&c1).await.map(version), Ok(Some(3)));
    let again = store.debit(&d1).await.unwrap();
    assert_eq!((again.replayed, again.version), (true, Some(2)));
    assert_eq!(
        store.account("alice", "EUR").await.unwrap().version,
        Some(3)
    );
    drop(store);
    let reopened = open(&db).await;
    let account = reopened.account("alice", "EUR").await.unwrap();
    assert_eq!((account.balance, account.version), (1_600, Some(3)));
}

/// A wallet in memory is refused, naming the URL: it would lose every balance when it
/// stops.
#[tokio::test]
async fn a_wallet_in_memory_is_refused() {
    for url in ["sqlite::memory:", "sqlite://wallet.db?mode=memory"] {
        let refused = Store::open(url, banco_wallet::store::StoreOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "`{url}`: a wallet in memory would lose every balance when it stops; give a file, sqlite://PATH"
            )
        );
    }
}

/// A wallet stored before accounts had versions (schema 1: the schema-2 file of
/// [`a_wallet_from_schema_2_keeps_its_postings`] without them) opens: its accounts start
/// at version 0, its old movements answer without one, and new ones are numbered.
#[tokio::test]
async fn a_wallet_from_before_versions_opens() {
    let db = store_support::sqlite();
    db.execute(include_str!("golden/wallet-schema-2.sql")).await;
    db.execute(
        "ALTER TABLE accounts DROP COLUMN version;
        ALTER TABLE movements DROP COLUMN version;
        DELETE FROM wallet_schema_version WHERE version = 2",
    )
    .await;
    let store = open(&db).await;
    books_balance(&store).await;
    let account = store.account("alice", "EUR").await.unwrap();
    assert_eq!((account.balance, account.version), (101_900, Some(0)));
    let old = store
        .deposit(&Cash::new(
            &tx("cashier:deposit:1"),
            "alice",
            "EUR",
            100_000,
        ))
        .await
        .unwrap();
    assert_eq!((old.replayed, old.version), (true, None));
    let d1 = store.debit(&debit("d1", "alice", 600)).await.unwrap();
    assert_eq!((d1.balance, d1.version), (101_300, Some(1)));
}

/// The store's Prometheus metrics count each transaction, its requests and how long it
/// took, and its commit statistics keep the longest: all of it counted by the time the
/// answer arrives, also when the answer is read on another thread than the committer's.
/// The largest and longest restart on demand (a benchmark's timed stretch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_count_each_commit_and_how_long_it_took() {
    let db = store_support::sqlite();
    let mut registry = prometheus_client::registry::Registry::default();
    let options = StoreOptions {
        metrics: Some(StoreMetrics::register(&mut registry)),
        ..StoreOptions::default()
    };
    let store = Store::open(&db.url, options).await.unwrap();
    deposit(&store, "dep-1", "alice", 1_000).await;
    store.debit(&debit("d1", "alice", 600)).await.unwrap();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for counted in [
        "banco_wallet_commit_seconds_count 2",
        "banco_wallet_commit_batch_requests_count 2",
        "banco_wallet_commit_batch_requests_sum 2.0",
    ] {
        assert!(text.contains(counted), "{counted} in {text}");
    }
    let stats = store.commit_stats();
    assert_eq!((stats.commits, stats.requests, stats.largest), (2, 2, 1));
    assert!(stats.longest > Duration::ZERO, "{stats:?}");

    // Restarted, the maxima count the commits after only; the counts go on.
    store.restart_commit_maxima();
    let restarted = store.commit_stats();
    assert_eq!(
        (restarted.largest, restarted.longest),
        (0, Duration::ZERO),
        "{restarted:?}"
    );
    store.debit(&debit("d2", "alice", 100)).await.unwrap();
    let stats = store.commit_stats();
    assert_eq!((stats.commits, stats.requests, stats.largest), (3, 3, 1));
    assert!(stats.longest > Duration::ZERO, "{stats:?}");
}

/// The page size of a wallet file's database, read beside the store.
async fn page_size(db: &TestDb) -> u32 {
    use sqlx::Connection as _;
    let mut conn = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// A wallet file made new has the store's page size (fewer, larger pages written to the
/// WAL at each commit); one made before with 4 KiB pages keeps them, SQLite fixing a
/// file's page size at creation, and works as before.
#[tokio::test]
async fn a_new_wallet_has_the_store_page_size_and_an_old_one_keeps_its_own() {
    let db = store_support::sqlite();
    let store = open(&db).await;
    assert_eq!(deposit(&store, "dep-1", "alice", 1_000).await, 1_000);
    store.close().await;
    assert_eq!(page_size(&db).await, PAGE_BYTES);

    let old = store_support::sqlite();
    old.execute("PRAGMA page_size = 4096; CREATE TABLE made_before (x INTEGER)")
        .await;
    let store = open(&old).await;
    assert_eq!(deposit(&store, "dep-1", "alice", 1_000).await, 1_000);
    let taken = store.debit(&debit("d1", "alice", 600)).await.unwrap();
    assert_eq!(taken.balance, 400);
    books_balance(&store).await;
    store.close().await;
    assert_eq!(page_size(&old).await, 4_096);
}

/// A wallet as banco wrote it at schema 2 (postings keyed by the movement's id, and an
/// index over each player's movements; the file `golden/wallet-schema-2.sql`, dumped from
/// it) opens: every posting is carried over to its movement's number, each account's
/// movements are chained for its statement, the books still balance, and old ids still
/// answer.
#[tokio::test]
async fn a_wallet_from_schema_2_keeps_its_postings() {
    let db = store_support::sqlite();
    db.execute(include_str!("golden/wallet-schema-2.sql")).await;
    let store = open(&db).await;
    books_balance(&store).await;
    assert_eq!(balance(&store, "alice").await, 101_900);
    assert_eq!(balance(&store, "bob").await, 2_500);
    let postings: Vec<(i64, String, i64)> = {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
        sqlx::query_as("SELECT movement, account, amount FROM postings ORDER BY movement, account")
            .fetch_all(&mut conn)
            .await
            .unwrap()
    };
    let posting =
        |movement: i64, account: &str, amount: i64| (movement, account.to_owned(), amount);
    assert_eq!(
        postings,
        [
            posting(1, "cashier", -100_000),
            posting(1, "player:alice", 100_000),
            posting(2, "cashier", -5_000),
            posting(2, "player:bob", 5_000),
            posting(3, "bets:T01", 2_000),
            posting(3, "player:alice", -2_000),
            posting(4, "bets:T01", 1_000),
            posting(4, "player:bob", -1_000),
            // 5: bob's refused debit, which posted nothing.
            posting(6, "bets:T01", 500),
            posting(6, "player:alice", -500),
            posting(7, "bets:T01", -500),
            posting(7, "player:alice", 500),
            posting(8, "bets:T01", -3_900),
            posting(8, "player:alice", 3_900),
            posting(9, "cashier", 1_500),
            posting(9, "player:bob", -1_500),
        ]
    );
    // Bob's refused debit (5) is not in his statement.
    assert_eq!(
        statement(&store, "bob").await,
        [
            "cashier:withdrawal:3",
            "debit:T01-S0001-H001:bob:1:player",
            "cashier:deposit:2",
        ]
    );
    let alice = [
        "credit:T01-S0001-H001:alice:1",
        "cancel:debit:T01-S0001-H001:alice:2:tie",
        "debit:T01-S0001-H001:alice:2:tie",
        "debit:T01-S0001-H001:alice:1:banker",
        "cashier:deposit:1",
    ];
    assert_eq!(statement(&store, "alice").await, alice);
    let old = store
        .debit(&debit(
            "debit:T01-S0001-H001:alice:1:banker",
            "alice",
            2_000,
        ))
        .await
        .unwrap();
    assert_eq!((old.replayed, old.balance), (true, 98_000));
    let new = store.debit(&debit("d-new", "alice", 1_900)).await.unwrap();
    assert_eq!(new.balance, 100_000);
    assert_eq!(statement(&store, "alice").await[..2], ["d-new", alice[0]]);
    books_balance(&store).await;
}

/// The books check finds what does not balance, each fault in words: a posting changed
/// (the table's side of a debit, so the player's balance still matches its own), a
/// movement gone from under its postings and its account, a balance changed, and a
/// player's chain of movements broken (which their statement would show short).
async fn the_books_check_names_each_fault(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    deposit(&store, "dep-bob", "bob", 500).await;
    store.debit(&debit("d1", "alice", 100)).await.unwrap();
    store.debit(&debit("d2", "alice", 100)).await.unwrap();
    books_balance(&store).await;
    for tamper in [
        "UPDATE postings SET amount = 150 WHERE account = 'bets:T01' AND movement = 3",
        "DELETE FROM movements WHERE tx = 'dep-bob'",
        "UPDATE accounts SET balance = 400 WHERE player = 'bob'",
        "UPDATE movements SET prev = 4 WHERE tx = 'd1'",
        "UPDATE movements SET prev = NULL WHERE tx = 'd2'",
    ] {
        db.execute(tamper).await;
    }
    let mut faults = store.check_books().await.unwrap();
    faults.sort();
    assert_eq!(
        faults,
        [
            "2 movements of alice in EUR are its first: its statement misses all but one",
            "bob's EUR account names movement 2 as its newest, but has none",
            "bob's EUR balance is 400, its postings sum to 500",
            "d1 follows movement 4, which is not an earlier movement of its account",
            "postings of movement 2, which is not stored",
            "the postings of d1 sum to 50, not 0",
        ]
    );
}

/// A wallet written at schema 3 (each player's movements found through an index, not
/// chained) opens with every accepted movement chained to the account's one before it:
/// statements list the same movements, refusals still out of them, and the books check
/// finds the chains whole.
async fn a_wallet_from_schema_3_chains_its_movements(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    deposit(&store, "dep-bob", "bob", 500).await;
    store.debit(&debit("d1", "alice", 100)).await.unwrap();
    store.debit(&debit("d2", "bob", 100)).await.unwrap();
    store
        .debit(&debit("refused", "alice", 5_000))
        .await
        .unwrap_err();
    store.debit(&debit("d3", "alice", 200)).await.unwrap();
    store.close().await;
    drop(store);
    db.execute(
        "ALTER TABLE movements DROP COLUMN prev;
        ALTER TABLE accounts DROP COLUMN last_movement;
        CREATE INDEX movements_player ON movements (player, currency, seq);
        DELETE FROM wallet_schema_version WHERE version = 4",
    )
    .await;
    let store = open(&db).await;
    books_balance(&store).await;
    assert_eq!(statement(&store, "alice").await, ["d3", "d1", "dep-1"]);
    assert_eq!(statement(&store, "bob").await, ["d2", "dep-bob"]);
    store.debit(&debit("d4", "alice", 300)).await.unwrap();
    assert_eq!(
        statement(&store, "alice").await,
        ["d4", "d3", "d1", "dep-1"]
    );
    books_balance(&store).await;
}

/// A reader beside a running store (an auditor's reconciliation) lists what it wrote, and
/// can write nothing.
async fn a_read_only_store_lists_and_writes_nothing(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    store.debit(&debit("d1", "alice", 100)).await.unwrap();
    let reader = Store::open_read_only(&db.url).await.unwrap();
    let page = reader
        .movements(&MovementFilter::default(), 10)
        .await
        .unwrap();
    let txs: Vec<&str> = page.movements.iter().map(|m| m.tx.as_str()).collect();
    assert_eq!(txs, ["dep-1", "d1"]);
    let refused = reader.debit(&debit("d2", "alice", 100)).await.unwrap_err();
    assert!(
        matches!(refused, WalletError::Unavailable(_)),
        "{refused:?}"
    );
    // What the store writes next, the reader sees.
    store.debit(&debit("d3", "alice", 100)).await.unwrap();
    let page = reader
        .movements(&MovementFilter::default(), 10)
        .await
        .unwrap();
    assert_eq!(page.movements.len(), 3);
    assert_eq!(balance(&store, "alice").await, 800);
}

/// What a table starting a new journal asks: the round of the table's newest movement,
/// refused ones included (their ids would be answered again too), other tables' and the
/// cashier's left out.
async fn a_tables_newest_round_is_told(db: TestDb) {
    let store = open(&db).await;
    let rounds = |table: &'static str| {
        let store = &store;
        async move { store.table_rounds(table).await.unwrap() }
    };
    assert_eq!(rounds("T01").await, TableRounds::None);
    deposit(&store, "dep-1", "alice", 1_000).await;
    assert_eq!(rounds("T01").await, TableRounds::None);
    store.debit(&debit("d1", "alice", 600)).await.unwrap();
    assert_eq!(
        rounds("T01").await,
        TableRounds::Newest("T01-S0001-H001".into())
    );
    let mut refused = debit("d2", "alice", 5_000);
    refused.round = "T01-S0001-H002".into();
    assert!(store.debit(&refused).await.is_err());
    assert_eq!(
        rounds("T01").await,
        TableRounds::Newest("T01-S0001-H002".into())
    );
    let mut elsewhere = debit("d3", "alice", 100);
    (elsewhere.table, elsewhere.round) = ("T02".into(), "T02-S0007-H040".into());
    store.debit(&elsewhere).await.unwrap();
    assert_eq!(
        rounds("T01").await,
        TableRounds::Newest("T01-S0001-H002".into())
    );
    assert_eq!(
        rounds("T02").await,
        TableRounds::Newest("T02-S0007-H040".into())
    );
    assert_eq!(rounds("T03").await, TableRounds::None);
}

/// A store closed while a debit waits for its commit: the debit is committed and answered
/// first, whatever is asked after is refused as closed, and the store opened again has it.
async fn a_closed_store_answers_what_came_before_and_refuses_what_follows(db: TestDb) {
    let store = open(&db).await;
    deposit(&store, "dep-1", "alice", 1_000).await;
    // `join!` polls the debit first: it is queued before the close.
    let d1 = debit("d1", "alice", 300);
    let (taken, ()) = tokio::join!(store.debit(&d1), store.close());
    assert_eq!(taken.unwrap().balance, 700);
    let refused = store.debit(&debit("d2", "alice", 100)).await.unwrap_err();
    assert_eq!(
        refused,
        WalletError::Unavailable("the wallet store is closed".into())
    );
    let again = open(&db).await;
    assert_eq!(balance(&again, "alice").await, 700);
    books_balance(&again).await;
}

banco_testdb::both_backends!(
    file = "wallet.db";
    a_closed_store_answers_what_came_before_and_refuses_what_follows,
    a_tables_newest_round_is_told,
    a_read_only_store_lists_and_writes_nothing,
    a_wallet_from_schema_3_chains_its_movements,
    the_books_check_names_each_fault,
    every_movement_and_refusal,
    conflicts_name_what_differs,
    a_cancel_before_its_debit_is_remembered,
    no_negative_balance_under_concurrent_debits,
    debits_sent_together_commit_once,
    a_batch_wider_than_one_look_up,
    self_limits_cool_off,
    a_blocked_account_takes_no_debit,
    statements_and_reconciliation_page,
    balance_changes_are_published,
    versions_order_each_account,
);

/// Two stores on one PostgreSQL (two `banco wallet` processes) debiting one player at
/// once: row locks keep the balance exact and never negative.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_postgres_never_overdraw() {
    let Some(db) = banco_testdb::postgres("two_stores").await else {
        banco_testdb::skipped(
            "two_stores_on_one_postgres_never_overdraw",
            "DATABASE_URL is not set: no PostgreSQL to run on",
        );
        return;
    };
    let first = open(&db).await;
    let second = open(&db).await;
    deposit(&first, "dep-1", "alice", 1_000).await;
    deposit(&first, "dep-bob", "bob", 1_000).await;
    let mut tasks = Vec::new();
    for n in 0..400 {
        let store = if n % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            let player = if n % 3 == 0 { "bob" } else { "alice" };
            store.debit(&debit(&format!("d{n}"), player, 10)).await
        }));
    }
    let mut taken = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => taken += 1,
            Err(WalletError::InsufficientFunds { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // alice asks 266 debits of 10 for 1,000, bob 134 for 1,000: 100 of each are taken.
    assert_eq!(taken, 200);
    assert_eq!(balance(&second, "alice").await, 0);
    assert_eq!(balance(&second, "bob").await, 0);
    books_balance(&first).await;
}
