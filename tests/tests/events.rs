//! Issue 20, each table's events on NATS JetStream (`banco broadcaster --events`), across
//! real processes on loopback with a `nats-server -js` of each test's own: the stream holds
//! every event in the table's order, exactly once, whatever is killed when; a broadcaster
//! restart no longer means a gap; a stale broadcaster is refused by the server.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use banco_e2e::clients::{Cmd, Croupier};
use banco_e2e::follow::{Follower, Seen};
use banco_e2e::nats::{Streamed, start_nats, stream_of, timeless, visible_to};
use banco_e2e::poll;
use banco_e2e::procs::{BroadcasterSetup, Keys, Service, channel, start_validator};
use banco_e2e::studio::{Studio, TABLE, assert_stream_ordered};
use banco_wire::pb;
use banco_wire::pb::table_event::Event as E;

/// Indexes of a seq at or above this are the hub's own events (coalesced totals, warnings,
/// refusals), which no journal record carries (player.proto: the record is the seq's high
/// part, 20 bits below it).
const HUB_MADE: u64 = 1 << 19;

fn is_hub_made(seq: u64) -> bool {
    seq & ((1 << 20) - 1) > HUB_MADE
}

/// `player`'s app, following the table on the origin itself, once it has its snapshot.
async fn follow_origin(studio: &Studio, player: &str) -> Follower {
    let follower = Follower::start(
        &[studio.origin.url()],
        0,
        player,
        &studio.token(player),
        TABLE,
    );
    let seen = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || follower.seen(),
        |s| !s.events.is_empty(),
    )
    .await;
    assert!(
        matches!(
            seen.events.first().and_then(|e| e.event.as_ref()),
            Some(E::Snapshot(_))
        ),
        "{seen:?}"
    );
    follower
}

/// Waits until `follower` was sent the card `card`.
async fn until_card(follower: &Follower, card: &str) {
    let seen = poll(
        Duration::from_secs(20),
        Duration::from_millis(20),
        async || follower.seen(),
        |s| s.has_card(card),
    )
    .await;
    assert!(seen.has_card(card), "{card} never came: {seen:?}");
}

/// The stream's events `seen`'s player may see after its first snapshot, once the
/// follower has them all (what comes after the round settles, the wallet's word, is
/// waited for too).
async fn settled_view(nats: &str, follower: &Follower) -> (Seen, Vec<Streamed>) {
    poll(
        Duration::from_secs(20),
        Duration::from_millis(50),
        async || {
            let seen = follower.seen();
            let stream = stream_of(nats, TABLE).await;
            (seen, stream)
        },
        |(seen, stream)| {
            let settled = seen
                .events
                .iter()
                .any(|e| matches!(e.event, Some(E::Settled(_))));
            let last_visible = visible_to(stream, &follower.player)
                .last()
                .map_or(0, |e| e.seq);
            settled && seen.last_seq() == last_visible
        },
    )
    .await
}

/// A broadcaster SIGKILLed mid-round (two cards dealt, a bet in play) and started again
/// on its journal reads its table's stream back: the player whose stream broke resumes
/// with the last seq it saw and is sent exactly what it missed, with no ResumeGap and no
/// second Snapshot (before `--events`, a restart always meant both). Everything the player
/// was sent over the two lives is exactly the stream's events it may see, each once, in
/// order; the stream numbers its messages by the events' seqs, strictly increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_broadcaster_resumes_its_subscribers_from_the_stream_without_a_gap() {
    let mut rig = Studio::start(0, &[]).await;
    rig.croupier.ok(Cmd::OpenShoe).await;
    rig.croupier.ok(Cmd::Burn("KH".into())).await;
    let alice = follow_origin(&rig, "alice").await;
    let round = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    rig.bet_at(&rig.origin.url(), "alice", &round).await;
    rig.bet_at(&rig.origin.url(), "bob", &round).await;
    rig.croupier.ok(Cmd::CloseBetting).await;
    rig.croupier.ok(Cmd::Deal("2C".into())).await;
    rig.croupier.ok(Cmd::Deal("3D".into())).await;
    until_card(&alice, "3D").await;
    // Mid-round, once the stream has what alice was sent.
    let last = alice.seen().last_seq();
    let stream = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || stream_of(&rig.nats.url, TABLE).await,
        |s| s.last().is_some_and(|m| m.event.seq >= last),
    )
    .await;
    assert!(stream.last().is_some_and(|m| m.event.seq >= last));

    rig.restart_origin().await;
    rig.croupier.ok(Cmd::Deal("4H".into())).await;
    rig.croupier.ok(Cmd::Deal("5S".into())).await;
    rig.croupier.ok(Cmd::Confirm(round)).await;
    let (seen, stream) = settled_view(&rig.nats.url, &alice).await;
    drop(alice);

    assert!(
        seen.streams >= 2,
        "alice's stream broke with the broadcaster: {seen:?}"
    );
    assert_eq!(
        seen.controls(),
        (1, 0, 0),
        "one snapshot, no gap, no cut-off: {seen:?}"
    );
    assert_stream_ordered(&stream);
    let from = seen.events[0].seq;
    let expected: Vec<pb::TableEvent> = visible_to(&stream, "alice")
        .into_iter()
        .filter(|e| e.seq > from)
        .map(timeless)
        .collect();
    let got: Vec<pb::TableEvent> = seen.table_events().into_iter().map(timeless).collect();
    assert_eq!(got, expected);
    // Both lives published, the second after the first's last event.
    let owners: Vec<&str> = stream.iter().map(|m| m.owner.as_str()).collect();
    let changes = owners.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(changes, 1, "{owners:?}");
}

/// The table never waits for NATS, and loses nothing to it. With the server killed, the
/// croupier's commands and the bets are answered and the subscriber is sent every event;
/// when the server comes back, what waited in the broadcaster goes out in order. Killed
/// again, and the broadcaster SIGKILLed while it holds events the stream never got: on
/// its restart it makes them again from its journal and publishes them first. At the end
/// the stream has, once and in order, every event of a journal record the subscriber was
/// sent, and the subscriber resumed across the restart without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_never_waits_for_nats_and_the_stream_misses_nothing_the_journal_has() {
    let mut rig = Studio::start(0, &[]).await;
    rig.croupier.ok(Cmd::OpenShoe).await;
    rig.croupier.ok(Cmd::Burn("KH".into())).await;
    let alice = follow_origin(&rig, "alice").await;

    // An outage the broadcaster outlives.
    rig.nats.kill();
    let round = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    rig.bet_at(&rig.origin.url(), "alice", &round).await;
    rig.croupier.ok(Cmd::CloseBetting).await;
    rig.croupier.ok(Cmd::Deal("2C".into())).await;
    until_card(&alice, "2C").await;
    rig.nats.restart().unwrap();
    let last = alice.seen().last_seq();
    let stream = poll(
        Duration::from_secs(20),
        Duration::from_millis(50),
        async || stream_of(&rig.nats.url, TABLE).await,
        |s| s.last().is_some_and(|m| m.event.seq >= last),
    )
    .await;
    assert!(
        stream.last().is_some_and(|m| m.event.seq >= last),
        "the events of the outage were never published: {:?}",
        stream.last()
    );

    // An outage the broadcaster does not outlive.
    rig.nats.kill();
    rig.croupier.ok(Cmd::Deal("3D".into())).await;
    rig.croupier.ok(Cmd::Deal("4H".into())).await;
    until_card(&alice, "4H").await;
    rig.origin.kill();
    rig.nats.restart().unwrap();
    rig.restart_origin().await;
    rig.croupier.ok(Cmd::Deal("5S".into())).await;
    rig.croupier.ok(Cmd::Confirm(round)).await;
    let (seen, stream) = settled_view(&rig.nats.url, &alice).await;
    drop(alice);

    assert_stream_ordered(&stream);
    assert_eq!(
        seen.controls(),
        (1, 0, 0),
        "one snapshot, no gap, no cut-off: {seen:?}"
    );
    let streamed: std::collections::BTreeMap<u64, pb::TableEvent> = stream
        .iter()
        .map(|m| (m.event.seq, timeless(&m.event)))
        .collect();
    let from = seen.events[0].seq;
    for event in seen.table_events() {
        if is_hub_made(event.seq) {
            continue;
        }
        assert_eq!(
            streamed.get(&event.seq),
            Some(&timeless(event)),
            "event {} was sent to alice but is not in the stream as sent",
            event.seq
        );
    }
    // And alice was sent every event of the stream she may see.
    let sent: std::collections::BTreeSet<u64> = seen.events.iter().map(|e| e.seq).collect();
    for event in visible_to(&stream, "alice") {
        assert!(
            event.seq <= from || sent.contains(&event.seq),
            "alice missed {event:?}"
        );
    }
}

/// A table moved to another broadcaster (its journal copied, the new one started) keeps
/// its stream and its numbering; the old one, still running and sent a command, is
/// refused by the server (its expected last sequence is not the stream's) and stops
/// publishing the table for good, saying so in its metrics: the stream holds no event of
/// it after the new owner's first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_broadcaster_after_a_failover_is_refused_by_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let nats = start_nats(&dir.path().join("js"));
    let validator = start_validator(&keys);
    let mut old_setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("a"));
    old_setup.extra_args = vec!["--events".into(), nats.url.clone()];
    let mut args = old_setup.args();
    args.extend(["--metrics-listen".into(), "127.0.0.1:0".into()]);
    let (old_broadcaster, old_metrics) = Service::start_with_metrics("broadcaster", &args, true);
    let old_metrics = old_metrics.unwrap();
    let old_url = old_broadcaster.url();
    let token = keys.issue("croupier", "anna", "1h");
    let mut old = Croupier::new(channel(&old_url).await, &token, TABLE, "old");
    old.ok(Cmd::OpenShoe).await;
    old.ok(Cmd::Burn("KH".into())).await;
    let before = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || stream_of(&nats.url, TABLE).await,
        |s| s.len() >= 2,
    )
    .await;
    assert!(before.len() >= 2, "{before:?}");

    // The failover: the journal as it is, on another broadcaster.
    let copied = dir.path().join("b");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(dir.path().join("a"))
        .arg(&copied)
        .status()
        .unwrap();
    assert!(status.success());
    let _ = std::fs::remove_file(copied.join(".lock"));
    let mut new_setup = old_setup.clone();
    new_setup.data_dir = copied;
    let new_broadcaster = new_setup.start();
    let mut new = Croupier::new(channel(&new_broadcaster.url()).await, &token, TABLE, "new");
    new.ok(Cmd::OpenBetting).await;
    let taken = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || stream_of(&nats.url, TABLE).await,
        |s| {
            s.iter()
                .any(|m| matches!(m.event.event, Some(E::BettingOpened(_))))
        },
    )
    .await;
    let new_owner = taken.last().unwrap().owner.clone();
    assert_ne!(new_owner, before[0].owner, "the new broadcaster publishes");

    // The old one still takes its croupier's commands, on its own journal.
    old.ok(Cmd::OpenBetting).await;
    let fenced = poll(
        Duration::from_secs(20),
        Duration::from_millis(50),
        async || banco_e2e::metrics::scrape(&old_metrics),
        |m| banco_e2e::metrics::value(m, "banco_events_fenced{table=\"T01\"}") == 1.0,
    )
    .await;
    assert_eq!(
        banco_e2e::metrics::value(&fenced, "banco_events_fenced{table=\"T01\"}"),
        1.0
    );
    new.ok(Cmd::CloseBetting).await;
    let stream = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || stream_of(&nats.url, TABLE).await,
        |s| {
            s.iter()
                .any(|m| matches!(m.event.event, Some(E::BettingClosed(_))))
        },
    )
    .await;
    assert_stream_ordered(&stream);
    let first_new = stream.iter().position(|m| m.owner == new_owner).unwrap();
    assert!(
        stream[first_new..].iter().all(|m| m.owner == new_owner),
        "the old broadcaster published after the new one took the table: {:?}",
        stream
            .iter()
            .map(|m| (m.event.seq, &m.owner))
            .collect::<Vec<_>>()
    );
    assert!(
        stream
            .iter()
            .any(|m| matches!(m.event.event, Some(E::BettingClosed(_))))
    );
}
