//! The table actor through its handle: rounds, refusals, the rules authority, restart,
//! group commit, command ids and ticks.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::collections::BTreeSet;
use std::sync::Arc;

use actor_support::*;
use banco_rules::{Bet, BetKind, Card, Composition, Paytable, Settlement};
use banco_table::actor::{BoxFuture, CardCheck, Clock, RefusalKind, Rules, RulesError};
use banco_table::{ActorError, Command, Event, LocalRules, MemorySink, Pacing, Phase, Refusal};

#[tokio::test]
async fn a_full_round_through_the_handle() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), Arc::clone(&sink)).await;
    assert_eq!(table.table_id(), "T01");
    let mut feed = table.subscribe();

    fund(&table, "alice", 10_000).await;
    fund(&table, "bob", 10_000).await;
    ok(&table, open_shoe(8)).await;
    let opened = ok(&table, open_betting()).await;
    let round = opened.snapshot.round_id.clone().unwrap();
    ok(&table, bet(&round, "alice", BetKind::Player, 1_000, "a1")).await;
    ok(&table, bet(&round, "bob", BetKind::Banker, 2_000, "b1")).await;
    ok(&table, close_betting()).await;
    for c in ["2S", "4H", "3S", "5H"] {
        ok(&table, deal(c)).await;
    }
    let confirmed = ok(&table, confirm(&round)).await;
    assert_eq!(confirmed.snapshot.phase, Phase::Settled);
    assert!(
        confirmed
            .events
            .iter()
            .any(|e| matches!(e, Event::RoundFinished(_)))
    );
    assert_eq!(table.balance("alice").await.unwrap(), Some(9_000));
    // Bob's payout is credited once the wallet acknowledges it.
    let wallet = wallet_of(dir.path());
    eventually_async("bob's payout credited", || async {
        table.balance("bob").await.unwrap() == Some(11_900)
    })
    .await;
    assert_eq!(wallet.balance("bob", "EUR"), 11_900);
    let books = table.books().await.unwrap();
    assert_eq!(books.check, Ok(()));
    // What the table took and gave back, per player, is what moved in the wallet.
    assert_eq!(books.nets["alice"], -1_000);
    assert_eq!(books.nets["bob"], 1_900);
    assert_eq!(books.players + books.house + books.in_play, 0);
    assert_eq!(books.in_play, 0);

    // Every journaled command was published, in journal order, with the actor's times.
    let mut seqs = Vec::new();
    while let Ok(p) = feed.try_recv() {
        seqs.push(p.seq);
    }
    // (Record 1 is the table's configuration: the twelve commands and the wallet's answers
    // to the two bets are records 2 to 15; the wallet's acknowledgement of the payouts
    // comes after.)
    assert_eq!(confirmed.seq, 15);
    let last = *seqs.last().unwrap();
    assert!(last > confirmed.seq, "{seqs:?}");
    assert_eq!(seqs, (2..=last).collect::<Vec<_>>());
    assert!(matches!(
        opened.events[0],
        Event::BettingOpened { opened_at, .. } if opened_at > 1_600_000_000_000
    ));

    eventually("the round in the archive", || sink.received().len() == 1).await;
    let sealed = &sink.received()[0];
    assert_eq!(sealed.seq, 1);
    assert_eq!(sealed.round.round_id, round);
    task.shutdown().await;
}

/// Refuses every card, or cannot be reached, or pays differently.
#[derive(Debug)]
enum BadRules {
    RefuseAll,
    Unreachable,
    PaysMore,
}

impl Rules for BadRules {
    fn check_card(
        &self,
        shoe: &Composition,
        decks: u8,
        hand: &[Card],
        card: Card,
    ) -> BoxFuture<'_, Result<CardCheck, RulesError>> {
        let answer = match self {
            BadRules::RefuseAll => Ok(CardCheck::Refused {
                code: RefusalKind::Misread,
                message: format!("{card}: not in this shoe"),
            }),
            BadRules::Unreachable => Err(RulesError::Unreachable(
                "connection refused (127.0.0.1:1)".to_owned(),
            )),
            BadRules::PaysMore => LocalRules::check(shoe, decks, hand, card),
        };
        Box::pin(async move { answer })
    }

    fn settle(
        &self,
        paytable: &Paytable,
        cards: &[Card],
        bets: &[Bet],
    ) -> BoxFuture<'_, Result<Vec<Settlement>, RulesError>> {
        let answer = LocalRules::settle_now(paytable, cards, bets).map(|mut s| {
            if matches!(self, BadRules::PaysMore) {
                for settlement in &mut s {
                    settlement.returned += 1;
                }
            }
            s
        });
        Box::pin(async move { answer })
    }
}

/// A table with alice's Banker bet and betting closed, on `rules`.
async fn ready_to_deal(
    dir: &std::path::Path,
    rules: BadRules,
) -> (banco_table::TableHandle, banco_table::ActorTask) {
    let (table, task) = start_with(
        config(dir, Pacing::Live),
        Arc::new(rules),
        Arc::new(MemorySink::new()),
    )
    .await;
    fund(&table, "alice", 10_000).await;
    ok(&table, open_shoe(8)).await;
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    ok(&table, bet(&round, "alice", BetKind::Banker, 1_000, "a1")).await;
    ok(&table, close_betting()).await;
    (table, task)
}

#[tokio::test]
async fn a_refused_card_changes_nothing_and_is_not_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    fund(&table, "alice", 10_000).await;
    ok(&table, open_shoe(8)).await;
    ok(&table, open_betting()).await;
    let before = table.snapshot().await.unwrap();
    let records = table.commit_stats().records;
    let journal_len = std::fs::metadata(dir.path().join("T01.journal"))
        .unwrap()
        .len();

    // The table's own refusal: betting is still open.
    let err = table.submit(None, deal("2S")).await.unwrap_err();
    assert!(
        matches!(err, ActorError::Refused(Refusal::BettingStillOpen { .. })),
        "{err}"
    );
    assert_eq!(table.snapshot().await.unwrap(), before);
    assert_eq!(table.commit_stats().records, records);
    assert_eq!(
        std::fs::metadata(dir.path().join("T01.journal"))
            .unwrap()
            .len(),
        journal_len
    );
    task.shutdown().await;

    // The authority's refusal.
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = ready_to_deal(dir.path(), BadRules::RefuseAll).await;
    let before = table.snapshot().await.unwrap();
    let records = table.commit_stats().records;
    let err = table.submit(None, deal("2S")).await.unwrap_err();
    assert!(
        matches!(
            &err,
            ActorError::Refused(Refusal::CardRefused {
                code: RefusalKind::Misread,
                ..
            })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("refused by the rules authority"),
        "{err}"
    );
    assert_eq!(table.snapshot().await.unwrap(), before);
    assert_eq!(table.commit_stats().records, records);
    task.shutdown().await;
}

#[tokio::test]
async fn validator_unreachable_refuses_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = ready_to_deal(dir.path(), BadRules::Unreachable).await;
    actor_support::refused_unreachable(&table, deal("2S")).await;
    task.shutdown().await;
}

#[tokio::test]
async fn a_settlement_that_differs_from_the_authority_is_not_paid() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = ready_to_deal(dir.path(), BadRules::PaysMore).await;
    for c in banker_natural(0) {
        ok(&table, deal(&c)).await;
    }
    let balance = table.balance("alice").await.unwrap();
    let round = table.snapshot().await.unwrap().table.round_id.unwrap();
    let err = table.submit(None, confirm(&round)).await.unwrap_err();
    assert!(matches!(err, ActorError::RulesDisagree(_)), "{err:?}");
    assert!(
        err.to_string().contains("alice's banker bet of 1000"),
        "{err}"
    );
    assert_eq!(table.snapshot().await.unwrap().table.phase, Phase::Result);
    assert_eq!(table.balance("alice").await.unwrap(), balance);
    task.shutdown().await;
}

#[tokio::test]
async fn restart_brings_back_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), Arc::clone(&sink)).await;
    fund(&table, "alice", 10_000).await;
    fund(&table, "bob", 5_000).await;
    ok(&table, open_shoe(8)).await;
    play_round(&table, 0).await;
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    ok(&table, bet(&round, "alice", BetKind::Player, 700, "p1")).await;
    ok(&table, bet(&round, "bob", BetKind::Banker, 500, "t1")).await;
    ok(&table, close_betting()).await;
    ok(&table, deal("2C")).await;
    ok(&table, deal("8D")).await;
    let snapshot = table.snapshot().await.unwrap();
    let books = table.books().await.unwrap();
    let balances = (
        table.balance("alice").await.unwrap(),
        table.balance("bob").await.unwrap(),
    );
    task.shutdown().await;

    let (table, task) = start(dir.path(), Arc::clone(&sink)).await;
    assert_eq!(table.snapshot().await.unwrap(), snapshot);
    assert_eq!(table.books().await.unwrap(), books);
    assert_eq!(
        (
            table.balance("alice").await.unwrap(),
            table.balance("bob").await.unwrap()
        ),
        balances
    );
    assert_eq!(snapshot.table.cards.len(), 2);
    assert_eq!(snapshot.table.round_id, Some(round));
    // The round carries on where it was.
    ok(&table, deal("7H")).await;
    let done = ok(&table, deal("6S")).await;
    assert_eq!(done.snapshot.phase, Phase::Result);
    ok(&table, confirm(&snapshot.table.round_id.unwrap())).await;
    assert_eq!(table.books().await.unwrap().check, Ok(()));
    task.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_of_200_concurrent_bets() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    let players: Vec<String> = (0..200).map(|i| format!("p{i:03}")).collect();
    let deposits = players.iter().map(|p| fund(&table, p, 10_000));
    futures::future::join_all(deposits).await;
    ok(&table, open_shoe(8)).await;
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    let before = table.commit_stats();
    let bets = players.iter().map(|p| {
        let table = table.clone();
        let command = bet(&round, p, BetKind::Banker, 1_000, "k");
        tokio::spawn(async move { table.submit(None, command).await })
    });
    let answers = futures::future::join_all(bets.collect::<Vec<_>>()).await;
    // Each bet is acknowledged by the record of the wallet's answer to it, which it may
    // share with other bets debited together; the answer is its own.
    let mut seqs = BTreeSet::new();
    for (answer, player) in answers.into_iter().zip(&players) {
        let applied = answer.unwrap().unwrap();
        let accepted: Vec<&str> = applied
            .events
            .iter()
            .filter_map(|e| match e {
                banco_table::Event::BetsAccepted { player, .. } => Some(player.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(accepted, vec![player.as_str()]);
        seqs.insert(applied.seq);
    }
    let after = table.commit_stats();
    let records = after.records - before.records;
    let fsyncs = after.commits - before.commits;
    // Each bet, and the wallet's answers to the bets debited together (and the wallet's
    // news of a deposit, which may reach the table only now).
    assert!(records >= 200 + seqs.len() as u64, "{records}");
    assert!(fsyncs < records, "{fsyncs} fsyncs for {records} records");
    println!(
        "200 concurrent bets: {records} records ({} of the wallet's answers) in {fsyncs} fsyncs",
        seqs.len()
    );
    let books = table.books().await.unwrap();
    assert_eq!(books.in_play, 200_000);
    assert_eq!(books.check, Ok(()));
    task.shutdown().await;
}

#[tokio::test]
async fn a_repeated_command_id_gets_the_original_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    ok(&table, open_shoe(8)).await;
    let first = table
        .submit(Some("cmd-1".into()), open_betting())
        .await
        .unwrap();
    assert!(!first.replayed);
    let records = table.commit_stats().records;
    let again = table
        .submit(Some("cmd-1".into()), open_betting())
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.seq, first.seq);
    assert_eq!(again.events, first.events);
    assert_eq!(table.commit_stats().records, records);
    let now = table.snapshot().await.unwrap();
    assert_eq!(now.table, first.snapshot);
    assert_eq!(now.seq, first.seq);

    // Another command under the same id is refused.
    let err = table
        .submit(Some("cmd-1".into()), close_betting())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ActorError::Refused(Refusal::CommandIdReused { .. })),
        "{err}"
    );
    task.shutdown().await;

    // The ids are rebuilt from the journal.
    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    let after_restart = table
        .submit(Some("cmd-1".into()), open_betting())
        .await
        .unwrap();
    assert!(after_restart.replayed);
    assert_eq!(after_restart.seq, first.seq);
    assert_eq!(after_restart.events, first.events);
    task.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn ticks_close_betting_at_closes_at() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), Pacing::Live);
    config.table.policy.live_betting_ms = Some(15_000);
    let clock = Clock::tokio(1_700_000_000_000);
    let (table, task) = banco_table::spawn(
        config.clone(),
        Arc::new(LocalRules),
        Arc::new(MemorySink::new()),
        clock.clone(),
    )
    .await
    .unwrap();
    let mut feed = table.subscribe();
    fund(&table, "alice", 10_000).await;
    ok(&table, open_shoe(8)).await;
    let opened = ok(&table, open_betting()).await;
    let Event::BettingOpened {
        closes_at: Some(closes_at),
        round_id,
        ..
    } = opened.events[0].clone()
    else {
        panic!("{:?}", opened.events)
    };
    let closed = loop {
        let published = feed.recv().await.unwrap();
        if let Some(Event::BettingClosed { closed_at, .. }) = published
            .events
            .iter()
            .find(|e| matches!(e, Event::BettingClosed { .. }))
        {
            break *closed_at;
        }
    };
    assert_eq!(closed, closes_at);
    assert!(clock.now_ms() >= closes_at);
    let err = table
        .submit(
            None,
            bet(&round_id, "alice", BetKind::Banker, 1_000, "late"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ActorError::Refused(_)), "{err}");
    assert!(matches!(
        table.snapshot().await.unwrap().table.phase,
        Phase::BettingClosed { .. }
    ));
    task.shutdown().await;

    // The tick was journaled like any command: the restart sees betting closed.
    let (table, task) = start_with(config, Arc::new(LocalRules), Arc::new(MemorySink::new())).await;
    assert!(matches!(
        table.snapshot().await.unwrap().table.phase,
        Phase::BettingClosed { closed_at, .. } if closed_at == closes_at
    ));
    task.shutdown().await;
}

#[tokio::test]
async fn commands_are_stamped_by_the_actor_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task, control) =
        actor_support::start_manual(config(dir.path(), Pacing::Live), 42_000, Arc::default()).await;
    ok(&table, open_shoe(8)).await;
    control.advance(1_000);
    let opened = ok(
        &table,
        Command::OpenBetting {
            by: CROUPIER.into(),
            now_ms: 7,
        },
    )
    .await;
    assert!(matches!(
        opened.events[0],
        Event::BettingOpened {
            opened_at: 43_000,
            ..
        }
    ));
    task.shutdown().await;
}

/// What a publisher that lost events reads again from the journal is what the actor
/// published, record for record, with the table as the record before them left it.
#[tokio::test]
async fn published_records_are_read_again_from_the_journal_as_they_were_published() {
    let dir = tempfile::tempdir().unwrap();
    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    let mut feed = table.subscribe();
    fund(&table, "alice", 10_000).await;
    ok(&table, open_shoe(8)).await;
    play_round(&table, 0).await;
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    ok(&table, bet(&round, "alice", BetKind::Player, 700, "p1")).await;
    ok(&table, close_betting()).await;
    ok(&table, deal("2C")).await;
    let last = table.snapshot().await.unwrap().seq;
    let mut published = Vec::new();
    while let Ok(p) = feed.try_recv() {
        published.push(p.as_ref().clone());
    }
    assert_eq!(published.last().map(|p| p.seq), Some(last));

    let after = published[3].seq;
    let through = last - 1;
    let again =
        banco_table::actor::read_published(&config(dir.path(), Pacing::Live), after, through)
            .unwrap();
    let expected: Vec<_> = published
        .iter()
        .filter(|p| p.seq > after && p.seq <= through)
        .cloned()
        .collect();
    assert_eq!(again.records, expected);
    assert_eq!(again.before, published[3].snapshot);
    // Beyond the journal's end: nothing, and the table as the last record left it.
    let none =
        banco_table::actor::read_published(&config(dir.path(), Pacing::Live), last, last + 9)
            .unwrap();
    assert!(none.records.is_empty());
    assert_eq!(none.before, published.last().unwrap().snapshot);
    task.shutdown().await;
}
