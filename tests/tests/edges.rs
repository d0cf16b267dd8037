//! Issue 20, the edges (`banco edge`) under faults, on real processes on loopback: NATS
//! with JetStream, an origin broadcaster publishing table T01's events, three edges, and
//! 300 players following the table spread over the edges (20 of them betting through
//! theirs each round). Each test says in its doc comment what it proves; every one ends
//! by checking that each of the 300 was sent one snapshot and then exactly the stream's
//! events it may see (the public ones and its own), each once, in order, whatever edge it
//! was on.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use banco_e2e::follow::Follower;
use banco_e2e::poll;
use banco_e2e::studio::{self, Studio, assert_exactly_the_stream, assert_stream_ordered};
use banco_wire::pb;

const PLAYERS: usize = 300;
const EDGES: usize = 3;
const BETTORS: usize = 20;

/// Every follower was sent exactly the stream; the stream is in order.
async fn assert_all_exact(studio: &Studio, followers: &[Follower]) {
    let (seen, stream) = studio.settled(followers).await;
    assert_stream_ordered(&stream);
    for (follower, seen) in followers.iter().zip(&seen) {
        assert_exactly_the_stream(&follower.player, seen, &stream);
    }
}

/// One whole round: betting, the bettors' bets through their edges, the hand, the result.
async fn round(studio: &mut Studio) {
    let round = studio.open_round().await;
    studio.bets(BETTORS, &round).await;
    studio.dealer.finish(&mut studio.croupier, &round).await;
}

/// The studio, its edges run with `edge_args`, the players following on them, and one
/// whole round behind them: the faults strike a table already in play.
async fn followed(edge_args: &[&str]) -> (Studio, Vec<Follower>) {
    let mut studio = Studio::start(EDGES, edge_args).await;
    let followers = studio.followers(PLAYERS).await;
    round(&mut studio).await;
    (studio, followers)
}

/// A round with the bettors' bets in and betting closed, its first card dealt.
async fn mid_round(studio: &mut Studio) -> (String, pb::TableState) {
    let round_id = studio.open_round().await;
    studio.bets(BETTORS, &round_id).await;
    let mut state = studio.dealer.close(&mut studio.croupier).await;
    studio.dealer.deal(&mut studio.croupier, &mut state).await;
    (round_id, state)
}

/// The round the fault struck settled and one more whole round after it; then every
/// follower was sent exactly the stream.
async fn settle_then_check(
    studio: &mut Studio,
    followers: &[Follower],
    round_id: &str,
    state: pb::TableState,
) {
    studio
        .dealer
        .settle(&mut studio.croupier, round_id, state)
        .await;
    round(studio).await;
    assert_all_exact(studio, followers).await;
}

/// An edge SIGKILLed mid-round: its hundred players' streams break, each subscribes again
/// on the next edge with the last seq it saw, and is sent exactly what it missed there
/// (the resume point of one edge is valid on any other), nothing lost, nothing twice, no
/// new snapshot; the players on the other edges never notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_edge_s_players_resume_on_another_with_nothing_lost_or_doubled() {
    let (mut studio, followers) = followed(&[]).await;

    let (round_id, mut state) = mid_round(&mut studio).await;
    studio.edges[0].service.kill();
    studio.dealer.deal(&mut studio.croupier, &mut state).await;
    studio
        .dealer
        .settle(&mut studio.croupier, &round_id, state)
        .await;
    // The next round's bettors on the dead edge bet through the next one.
    let round_id = studio.open_round().await;
    for i in 0..BETTORS {
        let edge = if i % EDGES == 0 { 1 } else { i % EDGES };
        studio.bet(edge, &Studio::player(i), &round_id).await;
    }
    studio.dealer.finish(&mut studio.croupier, &round_id).await;

    assert_all_exact(&studio, &followers).await;
    for (i, follower) in followers.iter().enumerate() {
        let seen = follower.seen();
        if i % EDGES == 0 {
            assert!(
                seen.servers.len() >= 2 && !seen.servers[1..].contains(&seen.servers[0]),
                "{} moved off the dead edge: {:?}",
                follower.player,
                seen.servers
            );
        } else {
            assert_eq!(seen.streams, 1, "{} kept its stream", follower.player);
        }
    }
}

/// The origin broadcaster SIGKILLed mid-round (bets in, two cards dealt) and started again
/// on its journal: the edges' players keep their streams through it (the edges read the
/// stream, which the restarted origin goes on from its last event, making again what it
/// had not published), and after the round is finished every player on every edge has
/// been sent every event once, in order, with no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_origin_killed_mid_round_every_player_on_every_edge_sees_every_event_once() {
    let (mut studio, followers) = followed(&[]).await;

    let (round_id, mut state) = mid_round(&mut studio).await;
    studio.dealer.deal(&mut studio.croupier, &mut state).await;
    studio.restart_origin().await;
    settle_then_check(&mut studio, &followers, &round_id, state).await;
    let resumed = followers.iter().filter(|f| f.seen().streams > 1).count();
    assert_eq!(resumed, 0, "players on edges needed no resume");
}

/// nats-server SIGKILLed mid-round and started again on its store: meanwhile the croupier
/// deals and the players bet and chat through their edges, every command answered (the
/// table never waits for the stream); when the server is back the origin publishes what
/// waited, the edges read on from where they were, and every player was sent every event,
/// nothing lost, once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_restarted_mid_round_nothing_is_lost_and_the_table_never_waited() {
    let (mut studio, followers) = followed(&[]).await;

    let round_id = studio.open_round().await;
    studio.nats.kill();
    studio.bets(BETTORS, &round_id).await;
    studio
        .chat(0, &Studio::player(0), "is the stream down?")
        .await;
    let mut state = studio.dealer.close(&mut studio.croupier).await;
    studio.dealer.deal(&mut studio.croupier, &mut state).await;
    studio.nats.restart().unwrap();
    settle_then_check(&mut studio, &followers, &round_id, state).await;
}

/// A player whose app stops reading (a 16 KiB HTTP/2 window, then not a byte read) on an
/// edge run with `--subscriber-queue 64`, while the table deals and 90 players chat
/// 200-character lines through the edges: every other player, on that edge and the
/// others, is sent every event (completeness and order are what is asserted); the stalled
/// one is cut off with its resume point (a CutOff), and when its app reads again it
/// resumes from it and is sent exactly what it missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_delays_no_one_and_is_cut_off_with_its_resume_point() {
    let mut studio = Studio::start(EDGES, &["--subscriber-queue", "64"]).await;
    let mut followers = studio.followers(PLAYERS).await;
    let slow = "slowpoke";
    let stalled = Follower::start_with(
        &studio.edge_urls(),
        0,
        slow,
        &studio.token(slow),
        studio::TABLE,
        Some(16 * 1024),
    );
    let first = poll(
        Duration::from_secs(20),
        Duration::from_millis(20),
        async || stalled.seen(),
        |s| !s.events.is_empty(),
    )
    .await;
    assert!(!first.events.is_empty(), "the slow player's snapshot");
    stalled.pause(true);

    let line: String = "banker again? the shoe is running hot tonight, "
        .repeat(5)
        .chars()
        .take(190)
        .collect();
    for round_no in 0..2 {
        let round_id = studio.open_round().await;
        studio.bets(BETTORS, &round_id).await;
        let mut chats = Vec::new();
        for i in 0..90 {
            let (studio, line) = (&studio, &line);
            chats.push(async move {
                let text = format!("{i}/{round_no}: {line}");
                studio.chat(i % EDGES, &Studio::player(i), &text).await;
            });
        }
        futures::future::join_all(chats).await;
        studio.dealer.finish(&mut studio.croupier, &round_id).await;
    }
    // Everyone else has everything while the slow one still reads nothing.
    let (seen, stream) = studio.settled(&followers).await;
    assert_stream_ordered(&stream);
    for (follower, seen) in followers.iter().zip(&seen) {
        assert_exactly_the_stream(&follower.player, seen, &stream);
    }

    stalled.pause(false);
    followers.push(stalled);
    let (seen, stream) = studio.settled(&followers).await;
    let slow_seen = seen.last().unwrap();
    let (_, _, cut_offs) = slow_seen.controls();
    assert!(
        cut_offs >= 1,
        "the stalled player was never cut off: {slow_seen:?}"
    );
    assert!(slow_seen.streams >= 2, "it resumed after its cut-off");
    assert_exactly_the_stream(slow, slow_seen, &stream);
}

/// An edge far behind the stream: SIGSTOPped (its players' connections open, unread)
/// while two rounds are dealt and chatted through, then SIGCONTinued. It reads on from
/// where it stopped and either catches up or cuts its players off with their resume
/// point, from which they resume (there or on another edge); either way, every player
/// of every edge was sent exactly the stream, with no gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_far_behind_catches_up_or_cuts_its_players_off_with_their_resume_point() {
    let (mut studio, followers) = followed(&["--subscriber-queue", "32"]).await;

    assert!(
        studio.edges[2]
            .service
            .signal("STOP", Duration::ZERO)
            .is_none(),
        "a stopped edge does not exit"
    );
    for _ in 0..2 {
        let round_id = studio.open_round().await;
        // Its bettors bet through the edges that run.
        for i in 0..BETTORS {
            studio.bet(i % 2, &Studio::player(i), &round_id).await;
        }
        for i in 0..20 {
            studio
                .chat(i % 2, &Studio::player(i), "the third edge is quiet")
                .await;
        }
        studio.dealer.finish(&mut studio.croupier, &round_id).await;
    }
    studio.edges[2].service.signal("CONT", Duration::ZERO);
    round(&mut studio).await;

    assert_all_exact(&studio, &followers).await;
    let cut: usize = followers.iter().map(|f| f.seen().controls().2).sum();
    eprintln!("players cut off by the edge that fell behind: {cut}");
}

/// Without a lobby entry there is no table: a table no broadcaster serves is NOT_FOUND on
/// an edge, naming it; the lobby lists the origin's table; a bet through an edge is
/// decided by the origin (a bet on a closed round is refused there, as the origin
/// words it). The edge counts its subscribers and how far it is behind the stream on its
/// metrics endpoint, and stops cleanly on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_answers_the_lobby_and_forwards_decisions_to_the_origin() {
    let mut studio = Studio::start(0, &[]).await;
    let mut args = banco_e2e::procs::EdgeSetup::new(&studio.keys, &studio.nats.url).args();
    args.extend(["--metrics-listen".into(), "127.0.0.1:0".into()]);
    let (mut edge, metrics) = banco_e2e::procs::Service::start_with_metrics("edge", &args, true);
    let metrics = metrics.unwrap();
    let mut client = banco_e2e::clients::player_client(
        banco_e2e::procs::channel(&edge.url()).await,
        &studio.token("p000"),
    );
    let lobby = poll(
        Duration::from_secs(20),
        Duration::from_millis(50),
        async || {
            client
                .list_tables(pb::ListTablesRequest {})
                .await
                .unwrap()
                .into_inner()
        },
        |l| !l.tables.is_empty(),
    )
    .await;
    assert_eq!(
        lobby
            .tables
            .iter()
            .map(|t| t.table_id.as_str())
            .collect::<Vec<_>>(),
        ["T01"]
    );
    let unknown = client
        .subscribe(pb::SubscribeRequest {
            table_id: "T99".into(),
            resume_from_seq: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert!(unknown.message().contains("T99"), "{}", unknown.message());

    let round_id = studio.open_round().await;
    studio.dealer.finish(&mut studio.croupier, &round_id).await;
    let late = client
        .place_bets(pb::PlaceBetsRequest {
            table_id: "T01".into(),
            round_id: round_id.clone(),
            bets: vec![pb::Bet {
                kind: pb::BetKind::Banker.into(),
                stake_minor: 1_000,
            }],
            idempotency_key: "late".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let refusals = banco_e2e::clients::refusals(&late);
    assert_eq!(refusals.len(), 1, "{late:?}");
    assert!(refusals[0].message.contains("betting"), "{late:?}");

    let follower = Follower::start(&[edge.url()], 0, "p001", &studio.token("p001"), "T01");
    let counted = poll(
        Duration::from_secs(20),
        Duration::from_millis(50),
        async || banco_e2e::metrics::scrape(&metrics),
        |m| banco_e2e::metrics::value(m, "banco_subscribers{table=\"T01\"}") == 1.0,
    )
    .await;
    assert_eq!(
        banco_e2e::metrics::value(&counted, "banco_subscribers{table=\"T01\"}"),
        1.0
    );
    assert!(
        counted.contains_key("banco_edge_stream_lag_events{table=\"T01\"}"),
        "{counted:?}"
    );
    assert!(
        banco_e2e::metrics::sum(&counted, "banco_edge_upstream_requests_total") >= 1.0,
        "the forwarded bet is counted: {counted:?}"
    );
    let stopped = edge.signal("TERM", Duration::from_secs(20));
    assert!(stopped.is_some_and(|s| s.success()), "{stopped:?}");
    drop(follower);
}
