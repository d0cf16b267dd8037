//! The actor's player-facing requests: `join` (one consistent view for a new subscriber),
//! `history` across a restart, the pass window on the actor's clock, chat journaled as
//! typed, and a journal written before seats and chat existed.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::path::Path;
use std::sync::Arc;

use actor_support::{
    bet, close_betting, config, deal, fund, ok, open_betting, open_shoe, play_round,
};
use banco_rules::BetKind;
use banco_table::actor::{ActorConfig, ActorError, Clock, ManualClock, TableHandle};
use banco_table::journal::Journal;
use banco_table::{
    ActorTask, Command, Event, JournaledConfig, Pacing, Phase, Refusal, RoundId, TableConfig,
};

const START_MS: u64 = 1_800_000_000_000;

async fn start(config: ActorConfig) -> (TableHandle, ActorTask, ManualClock) {
    actor_support::start_manual(config, START_MS, Arc::default()).await
}

fn seated(dir: &Path, seats: u8) -> ActorConfig {
    let mut config = config(dir, Pacing::Live);
    config.table.policy.seats = seats;
    config
}

fn take_seat(player: &str, seat: u8) -> Command {
    Command::TakeSeat {
        player: player.into(),
        seat,
        now_ms: 0,
    }
}

fn pass(player: &str, round: &RoundId) -> Command {
    Command::PassHand {
        player: player.into(),
        round_id: round.clone(),
        now_ms: 0,
    }
}

async fn refusal(handle: &TableHandle, command: Command) -> Refusal {
    match handle.submit(None, command).await {
        Err(ActorError::Refused(r)) => r,
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn join_reads_one_consistent_view() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, task, time) = start(seated(dir.path(), 5)).await;
    fund(&handle, "alice", 100_000).await;
    ok(&handle, open_shoe(8)).await;
    ok(&handle, take_seat("bob", 0)).await;
    ok(&handle, take_seat("alice", 3)).await;
    let opened = ok(&handle, open_betting()).await;
    let round = opened.snapshot.round_id.clone().unwrap();
    ok(&handle, bet(&round, "alice", BetKind::Banker, 1_000, "a1")).await;
    let mute = Command::MutePlayer {
        player: "alice".into(),
        minutes: 10,
        reason: "flooding".into(),
        by: "pitboss".into(),
        now_ms: 0,
    };
    let mut published = handle.subscribe();
    let last = ok(&handle, mute).await;

    let joined = handle.join("alice").await.unwrap();
    let snapshot = handle.snapshot().await.unwrap();
    // One instant: the last record, its table, and the subscriber's events start after it.
    assert_eq!(joined.seq, last.seq);
    assert_eq!(joined.seq, snapshot.seq);
    assert_eq!(published.recv().await.unwrap().seq, joined.seq);
    assert_eq!(joined.table, snapshot.table);
    assert_eq!(joined.table, last.snapshot);
    assert_eq!(joined.table.round_id.as_ref(), Some(&round));
    assert_eq!(joined.table.opened_at, Some(START_MS));
    assert_eq!(joined.table.closes_at, None, "a live table without a timer");
    assert_eq!(joined.scoreboard, handle.scoreboard().await.unwrap());
    let position = &joined.position;
    assert_eq!(position.balance, Some(99_000));
    assert_eq!(position.round_id.as_ref(), Some(&round));
    assert_eq!(position.in_play(), 1_000);
    assert_eq!(*position, handle.player("alice").await.unwrap());
    assert_eq!(joined.seat, Some(3));
    assert_eq!(
        joined.seats,
        vec![Some("bob".into()), None, Some("alice".into()), None, None]
    );
    assert_eq!(joined.muted_until, Some(START_MS + 600_000));

    // Someone else: no balance the table has heard of (the host asks the wallet), no
    // seat, no mute; the same table.
    let carol = handle.join("carol").await.unwrap();
    assert_eq!(
        (carol.position.balance, carol.seat, carol.muted_until),
        (None, None, None)
    );
    assert_eq!(carol.table, joined.table);
    // The mute ends on the actor's clock.
    time.advance(600_000);
    assert_eq!(handle.join("alice").await.unwrap().muted_until, None);
    task.shutdown().await;
}

#[tokio::test]
async fn the_pass_window_runs_on_the_actors_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, task, time) = start(seated(dir.path(), 5)).await;
    ok(&handle, open_shoe(8)).await;
    ok(&handle, take_seat("alice", 1)).await;
    let round = ok(&handle, open_betting()).await.snapshot.round_id.unwrap();
    time.advance(15_000);
    let r = refusal(&handle, pass("alice", &round)).await;
    assert!(
        matches!(
            r,
            Refusal::PassTooLate {
                opened_at: START_MS,
                ..
            }
        ),
        "{r}"
    );
    ok(&handle, close_betting()).await;
    let void = Command::VoidRound {
        round_id: round,
        reason: "test".into(),
        by: "croupier-1".into(),
        now_ms: 0,
    };
    ok(&handle, void).await;
    let round = ok(&handle, open_betting()).await.snapshot.round_id.unwrap();
    time.advance(14_999);
    let passed = ok(&handle, pass("alice", &round)).await;
    assert_eq!(
        passed.events,
        vec![Event::HandPassed {
            player: "alice".into(),
            round_id: round,
            seat: 1
        }]
    );
    task.shutdown().await;
}

#[tokio::test]
async fn history_is_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, task, _time) = start(config(dir.path(), Pacing::Live)).await;
    fund(&handle, "alice", 1_000_000).await;
    ok(&handle, open_shoe(8)).await;
    for n in 0..4 {
        play_round(&handle, n).await;
    }
    // A round under way, with cards: it comes back as it was.
    let round = ok(&handle, open_betting()).await.snapshot.round_id.unwrap();
    ok(
        &handle,
        bet(&round, "alice", BetKind::Player, 2_000, "open"),
    )
    .await;
    ok(&handle, close_betting()).await;
    ok(&handle, deal("2S")).await;
    let before = handle.history("alice", None, 100).await.unwrap();
    assert_eq!(before.len(), 5);
    assert_eq!(before[0].round_id, round);
    assert!(!before[0].finished());
    assert!(before[1..].iter().all(|e| e.net == 950 && e.finished()));
    let page = handle
        .history("alice", Some(before[1].round_id.clone()), 2)
        .await
        .unwrap();
    assert_eq!(page, before[2..4].to_vec());
    task.shutdown().await;

    let (handle, task, _time) = start(config(dir.path(), Pacing::Live)).await;
    assert_eq!(handle.history("alice", None, 100).await.unwrap(), before);
    assert!(handle.history("bob", None, 100).await.unwrap().is_empty());
    task.shutdown().await;
}

#[tokio::test]
async fn chat_is_published_masked_and_journaled_as_typed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), Pacing::Live);
    config.table.policy.chat.blocked_words = vec!["darn".into()];
    let journal = config.journal.clone();
    let (handle, task, _time) = start(config.clone()).await;
    let mut published = handle.subscribe();
    let say = Command::Chat {
        player: "alice".into(),
        text: "  Darn it  ".into(),
        now_ms: 0,
    };
    ok(&handle, say).await;
    let line = published.recv().await.unwrap();
    assert_eq!(
        line.events,
        vec![Event::Chat {
            player: "alice".into(),
            text: "**** it".into(),
            at: START_MS,
        }]
    );
    task.shutdown().await;
    let (_, records) = Journal::open(&journal).unwrap();
    let entry: banco_records::journal::Entry = serde_json::from_slice(&records[1].payload).unwrap();
    assert_eq!(
        Command::from(entry.command),
        Command::Chat {
            player: "alice".into(),
            text: "  Darn it  ".into(),
            now_ms: START_MS,
        }
    );
    // The rate limit is rebuilt by the replay too: four more lines use up the burst of 5.
    let (handle, task, _time) = start(config).await;
    for _ in 0..4 {
        let say = Command::Chat {
            player: "alice".into(),
            text: "hi".into(),
            now_ms: 0,
        };
        ok(&handle, say).await;
    }
    let say = Command::Chat {
        player: "alice".into(),
        text: "hi".into(),
        now_ms: 0,
    };
    let r = refusal(&handle, say).await;
    assert!(
        matches!(r, Refusal::ChatRateLimited { retry_at, .. } if retry_at == START_MS + 10_000),
        "{r}"
    );
    task.shutdown().await;
}

#[tokio::test]
async fn a_journal_from_before_seats_and_chat_replays() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), Pacing::Live);
    // The configuration record as the previous version wrote it: no seats, no pass
    // window, no chat policy.
    let mut first = serde_json::to_value(JournaledConfig {
        table: (&TableConfig::new("T01", Pacing::Live)).into(),
        default_shoe: None,
        // Before formats were numbered.
        format: 0,
    })
    .unwrap();
    let policy = first["table"]["policy"].as_object_mut().unwrap();
    for key in ["seats", "pass_window_ms", "chat"] {
        assert!(policy.remove(key).is_some(), "{key}");
    }
    let old_records = [
        first.to_string(),
        r#"{"command":{"command":"open_shoe","config":{"decks":8,"cut_card_from_end":16,"burn":"none","procedure":"cut_card"},"by":"c","now_ms":8}}"#
            .to_owned(),
        r#"{"command":{"command":"open_betting","by":"c","now_ms":9}}"#.to_owned(),
        r#"{"command":{"command":"chat","player":"alice","text":"hi","now_ms":10}}"#.to_owned(),
    ];
    {
        let (mut journal, records) = Journal::open(&config.journal).unwrap();
        assert!(records.is_empty());
        for record in &old_records {
            journal.append(record.as_bytes()).unwrap();
        }
    }
    let (handle, task, _time) = start(config.clone()).await;
    let joined = handle.join("alice").await.unwrap();
    assert_eq!(joined.seq, 4);
    assert!(matches!(joined.table.phase, Phase::BettingOpen { .. }));
    assert!(joined.seats.is_empty());
    task.shutdown().await;

    // A journal from when each table kept its players' balances holds money no wallet
    // knows of: it is refused, saying so, and left as it was.
    let dir = tempfile::tempdir().unwrap();
    let config = actor_support::config(dir.path(), Pacing::Live);
    let deposit =
        r#"{"command":{"command":"deposit","player":"alice","amount":5000,"key":"d1","now_ms":7}}"#;
    {
        let (mut journal, _) = Journal::open(&config.journal).unwrap();
        journal.append(first.to_string().as_bytes()).unwrap();
        journal.append(deposit.as_bytes()).unwrap();
    }
    let spawned = banco_table::spawn(
        config.clone(),
        Arc::new(banco_table::LocalRules),
        Arc::new(banco_table::MemorySink::new()),
        Clock::system(),
    )
    .await;
    let Err(ActorError::Startup(why)) = spawned else {
        panic!("a journal from before the wallet started");
    };
    assert!(
        why.contains(
            "record 2 is a `deposit` of the table's own ledger, from before the tables spent \
             through a wallet"
        ),
        "{why}"
    );
    let (_, records) = Journal::open(&config.journal).unwrap();
    assert_eq!(records.len(), 2);
}
