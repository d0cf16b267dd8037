//! Issue 4, the player fan-out across real processes: 200 subscribers of one table, a
//! fifth of which drop their connection again and again mid-round and resume from the last
//! seq they saw. Each saw every public event exactly once and in order, and of the private
//! events only its own; no call shows a player another's bets or balance.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use banco_e2e::clients::{Authed, Cmd, Croupier, is_control, is_private, player_client};
use banco_e2e::procs::{BroadcasterSetup, Keys, channel, start_validator};
use banco_rules::shoe::ShoeConfig;
use banco_rules::{Coup, Shoe};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_event::Event as E;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tokio::task::JoinSet;
use tonic::transport::Channel;

const SUBSCRIBERS: usize = 200;
const ROUNDS: usize = 4;
const WELCOME: i64 = 100_000;

fn name(i: usize) -> String {
    format!("p{i:03}")
}

/// What one subscriber saw, and how often it reconnected.
#[derive(Debug, Default)]
struct Seen {
    events: Vec<pb::TableEvent>,
    reconnects: u32,
}

/// Reads the table's events until the shoe ends. A flaky subscriber drops its stream
/// after every `drop_every` events and comes back after `pause`, resuming from the last
/// seq it saw.
async fn subscriber(
    mut client: PlayerServiceClient<Authed>,
    drop_every: Option<usize>,
    pause: Duration,
) -> Seen {
    let mut seen = Seen::default();
    let mut last = 0;
    'connect: loop {
        let mut stream = client
            .subscribe(pb::SubscribeRequest {
                table_id: "T01".to_owned(),
                resume_from_seq: last,
            })
            .await
            .unwrap()
            .into_inner();
        let mut read_here = 0;
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), stream.message())
                .await
                .expect("an event within 30 s")
                .unwrap()
                .expect("the stream goes on until the shoe ends");
            assert!(
                !matches!(event.event, Some(E::ResumeGap(_) | E::CutOff(_))),
                "a resume within the ring must replay, not skip: {event:?}"
            );
            last = event.seq;
            let end = matches!(&event.event, Some(E::ShoeEvent(s)) if s.kind() == pb::ShoeEventKind::ShoeEnd);
            seen.events.push(event);
            if end {
                return seen;
            }
            read_here += 1;
            if drop_every.is_some_and(|n| read_here >= n) {
                drop(stream);
                seen.reconnects += 1;
                tokio::time::sleep(pause).await;
                continue 'connect;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_subscribers_see_every_public_event_once_in_order_and_only_their_own_private_ones()
 {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(dir.path());
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = WELCOME;
    let broadcaster = setup.start();
    let url = broadcaster.url();
    let mut channels: Vec<Channel> = Vec::new();
    for _ in 0..4 {
        channels.push(channel(&url).await);
    }
    let croupier_token = keys.issue("croupier", "anna", "1h");
    let mut croupier = Croupier::new(channels[0].clone(), &croupier_token, "T01", "fan");
    let players: Vec<PlayerServiceClient<Authed>> = (0..SUBSCRIBERS)
        .map(|i| {
            player_client(
                channels[i % channels.len()].clone(),
                &keys.issue("player", &name(i), "1h"),
            )
        })
        .collect();

    // Every subscriber is attached (its snapshot read) before the table moves.
    let mut readers = JoinSet::new();
    for (i, client) in players.iter().enumerate() {
        let flaky = (i % 5 == 0).then_some(5 + i % 13);
        let pause = Duration::from_millis(20 + (i as u64 % 7) * 40);
        let client = client.clone();
        readers.spawn(async move { (i, subscriber(client, flaky, pause).await) });
    }
    let subscribed = banco_e2e::poll(
        Duration::from_secs(30),
        Duration::from_millis(50),
        async || {
            let listed = players[0]
                .clone()
                .list_tables(pb::ListTablesRequest {})
                .await
                .unwrap()
                .into_inner();
            listed.tables[0].players as usize
        },
        |players| *players == SUBSCRIBERS,
    )
    .await;
    assert_eq!(subscribed, SUBSCRIBERS, "only {subscribed} subscribed");

    // Rounds from a seeded shoe; every third player bets each round.
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    croupier.ok(Cmd::OpenShoe).await;
    let mut shoe = Shoe::shuffled(ShoeConfig::default(), &mut rng).unwrap();
    let burn = shoe.burn().unwrap();
    croupier.ok(Cmd::Burn(burn.exposed.to_string())).await;
    let mut bets_placed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for round in 0..ROUNDS {
        let state = croupier.ok(Cmd::OpenBetting).await;
        let round_id = state.round_id.clone();
        let mut placing = JoinSet::new();
        for i in (0..SUBSCRIBERS).filter(|i| i % 3 == 0) {
            let mut client = players[i].clone();
            let key = format!("{}-r{round}", name(i));
            bets_placed.entry(name(i)).or_default().push(key.clone());
            let round_id = round_id.clone();
            placing.spawn(async move {
                let kind = if i % 2 == 0 {
                    pb::BetKind::Banker
                } else {
                    pb::BetKind::Player
                };
                let reply = client
                    .place_bets(pb::PlaceBetsRequest {
                        table_id: "T01".to_owned(),
                        round_id,
                        bets: vec![pb::Bet {
                            kind: kind.into(),
                            stake_minor: 500 + 100 * (i as i64 % 10),
                        }],
                        idempotency_key: key,
                    })
                    .await
                    .unwrap()
                    .into_inner();
                assert!(matches!(
                    reply.decisions[0].decision,
                    Some(pb::bet_decision::Decision::Accepted(_))
                ));
            });
        }
        while let Some(done) = placing.join_next().await {
            done.unwrap();
        }
        let mut state = croupier.ok(Cmd::CloseBetting).await;
        let mut coup = Coup::default();
        while state.due() != pb::Due::Complete {
            let card = shoe.next_card().unwrap();
            coup.deal(card).unwrap();
            state = croupier.ok(Cmd::Deal(card.to_string())).await;
        }
        croupier.ok(Cmd::Confirm(round_id)).await;
        shoe.hand_finished().unwrap();
    }
    croupier
        .ok(Cmd::EndShoe("end of the fan-out test".to_owned()))
        .await;

    let mut all: BTreeMap<usize, Seen> = BTreeMap::new();
    while let Some(done) = readers.join_next().await {
        let (i, seen) = done.unwrap();
        all.insert(i, seen);
    }
    // The reference: what a subscriber that never dropped saw of the public events.
    let public = |seen: &Seen| -> Vec<pb::TableEvent> {
        seen.events
            .iter()
            .filter(|e| !is_private(e) && !is_control(e))
            .cloned()
            .collect()
    };
    let reference = public(&all[&1]);
    assert!(
        reference.len() > ROUNDS * 8,
        "the reference saw {} public events",
        reference.len()
    );
    let mut reconnects = 0;
    for (&i, seen) in &all {
        reconnects += seen.reconnects;
        let me = name(i);
        // Strictly increasing seqs: nothing twice, nothing out of order.
        for pair in seen.events.windows(2) {
            assert!(
                pair[0].seq < pair[1].seq,
                "{me}: {:?} then {:?}",
                pair[0],
                pair[1]
            );
        }
        assert!(matches!(seen.events[0].event, Some(E::Snapshot(_))), "{me}");
        // Every public event exactly once, the same as everyone else's.
        assert_eq!(public(seen), reference, "{me}: public events differ");
        // Private events: its own bets only, each once, and a settlement per bet.
        let keys: Vec<String> = seen
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Some(E::BetAccepted(a)) => Some(a.idempotency_key.clone()),
                Some(E::BetRefused(r)) => Some(r.idempotency_key.clone()),
                _ => None,
            })
            .collect();
        let expected = bets_placed.get(&me).cloned().unwrap_or_default();
        assert_eq!(keys, expected, "{me}: private bet events");
        let settled = seen
            .events
            .iter()
            .filter(|e| matches!(e.event, Some(E::Settled(_))))
            .count();
        assert_eq!(settled, expected.len(), "{me}: settlements");
        if expected.is_empty() {
            assert!(
                !seen.events.iter().any(is_private),
                "{me} has no bets but got private events"
            );
        }
    }
    assert!(reconnects >= 40, "only {reconnects} reconnects happened");
    println!(
        "{SUBSCRIBERS} subscribers, {ROUNDS} rounds, {} public events each, {reconnects} reconnects with resume: all identical",
        reference.len()
    );

    // No call shows one player another's bets or money: each call answers for its caller.
    let mut nobody = players[1].clone(); // p001 never bets (1 % 3 != 0)
    let history = nobody
        .my_bets(pb::MyBetsRequest {
            table_id: String::new(),
            page_size: 100,
            page_token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(history.entries.is_empty(), "{history:?}");
    let balance = nobody
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    // Never bet, but the welcome credit is due: the balance already holds it.
    assert_eq!(
        (balance.available_minor, balance.in_play_minor),
        (WELCOME, 0)
    );
    let mut bettor = players[3].clone();
    let history = bettor
        .my_bets(pb::MyBetsRequest {
            table_id: "T01".to_owned(),
            page_size: 100,
            page_token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(history.entries.len(), ROUNDS);
    let balance = bettor
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    let net: i64 = history.entries.iter().map(|e| e.net_minor).sum();
    assert_eq!(balance.available_minor, WELCOME + net);
    drop(broadcaster);
}
