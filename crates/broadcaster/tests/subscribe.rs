//! Subscribe over a real socket: a snapshot first, then every public event in order and
//! each player's private events to that player only; a reconnect with the last seq gets
//! exactly what was missed; a subscriber that stops reading is cut off without holding
//! anyone else back.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use pb::table_event::Event as E;
use tonic::Streaming;

const ROUNDS: [[&str; 4]; 3] = [
    ["9S", "8H", "KS", "QH"],
    ["9H", "8S", "KH", "QS"],
    ["9D", "8C", "KD", "QC"],
];

async fn subscribe(p: &mut Player, resume_from_seq: u64) -> Streaming<pb::TableEvent> {
    p.subscribe(pb::SubscribeRequest {
        table_id: t01(),
        resume_from_seq,
    })
    .await
    .unwrap()
    .into_inner()
}

async fn next(stream: &mut Streaming<pb::TableEvent>) -> pb::TableEvent {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("an event within 10 s")
        .unwrap()
        .expect("the stream goes on")
}

/// Reads until `stop` says the event just read is the last one wanted.
async fn read_until(
    stream: &mut Streaming<pb::TableEvent>,
    stop: impl Fn(&pb::TableEvent) -> bool,
) -> Vec<pb::TableEvent> {
    let mut events = Vec::new();
    loop {
        let event = next(stream).await;
        let done = stop(&event);
        events.push(event);
        if done {
            return events;
        }
    }
}

/// The settlement's credit, acknowledged by the wallet (nothing left pending).
fn is_settled_balance(e: &pb::TableEvent) -> bool {
    matches!(&e.event, Some(E::BalanceChanged(b))
        if b.reason == "settlement" && b.balance.as_ref().is_some_and(|b| b.pending_minor == 0))
}

fn is_public(e: &pb::TableEvent) -> bool {
    !matches!(
        e.event,
        Some(
            E::Snapshot(_)
                | E::BetAccepted(_)
                | E::BetRefused(_)
                | E::Settled(_)
                | E::BalanceChanged(_)
                | E::Muted(_)
                | E::ResumeGap(_)
                | E::CutOff(_)
        )
    )
}

fn assert_increasing(events: &[pb::TableEvent]) {
    for pair in events.windows(2) {
        assert!(
            pair[0].seq < pair[1].seq,
            "{:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
}

#[tokio::test]
async fn public_events_reach_everyone_in_order_and_private_ones_only_their_owner() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let (mut alice, mut bob) = (h.player("alice"), h.player("bob"));
    let mut alice_events = subscribe(&mut alice, 0).await;
    let mut bob_events = subscribe(&mut bob, 0).await;
    let first = next(&mut alice_events).await;
    let Some(E::Snapshot(snapshot)) = &first.event else {
        panic!("first event: {first:?}");
    };
    assert_eq!(snapshot.shoe_state(), pb::ShoeState::NoShoe);
    assert_eq!(snapshot.table.as_ref().unwrap().table_id, "T01");
    assert!(matches!(
        next(&mut bob_events).await.event,
        Some(E::Snapshot(_))
    ));

    let round = to_betting(&mut c).await;
    let placed = place(
        &mut alice,
        &round,
        vec![bet(pb::BetKind::Player, 1_000)],
        "a1",
    )
    .await;
    assert!(matches!(
        placed.decisions[0].decision,
        Some(pb::bet_decision::Decision::Accepted(_))
    ));
    place(
        &mut bob,
        &round,
        vec![bet(pb::BetKind::Banker, 2_000)],
        "b1",
    )
    .await;
    // Over the table maximum: refused, and told on bob's stream too.
    let refused = place(
        &mut bob,
        &round,
        vec![bet(pb::BetKind::Tie, 9_000_000)],
        "b2",
    )
    .await;
    assert!(matches!(
        refused.decisions[0].decision,
        Some(pb::bet_decision::Decision::Refusal(_))
    ));
    natural(&mut c, &round, ROUNDS[0]).await;

    let alice_seen = read_until(&mut alice_events, is_settled_balance).await;
    let bob_seen = read_until(&mut bob_events, is_settled_balance).await;
    assert_increasing(&alice_seen);
    assert_increasing(&bob_seen);
    let public = |events: &[pb::TableEvent]| -> Vec<pb::TableEvent> {
        events.iter().filter(|e| is_public(e)).cloned().collect()
    };
    // Both saw the same public events, byte for byte, with the same numbers.
    assert_eq!(public(&alice_seen), public(&bob_seen));
    let kinds: Vec<&str> = public(&alice_seen)
        .iter()
        .map(|e| match &e.event {
            Some(E::ShoeEvent(_)) => "shoe",
            Some(E::BettingOpened(_)) => "opened",
            Some(E::BetTotals(_)) => "totals",
            Some(E::BettingClosed(_)) => "closed",
            Some(E::CardDealt(_)) => "card",
            Some(E::RoundResult(_)) => "result",
            Some(E::RoadsUpdated(_)) => "roads",
            other => panic!("unexpected public event {other:?}"),
        })
        .filter(|k| *k != "totals")
        .collect();
    assert_eq!(
        kinds,
        [
            "shoe", "shoe", "opened", "closed", "card", "card", "card", "card", "result", "roads",
            "opened"
        ][..kinds.len()]
    );
    assert!(kinds.len() >= 10, "{kinds:?}");
    // Private: each saw only their own.
    let keys = |events: &[pb::TableEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Some(E::BetAccepted(a)) => Some(format!("ok {}", a.idempotency_key)),
                Some(E::BetRefused(r)) => Some(format!("refused {}", r.idempotency_key)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(keys(&alice_seen), ["ok a1"]);
    assert_eq!(keys(&bob_seen), ["ok b1", "refused b2"]);
    let settled = |events: &[pb::TableEvent]| -> Vec<(i64, i64)> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Some(E::Settled(s)) => Some((s.total_stake_minor, s.total_returned_minor)),
                _ => None,
            })
            .collect()
    };
    // Player 9 beats Banker 8: alice doubles her 1,000; bob loses his 2,000.
    assert_eq!(settled(&alice_seen), [(1_000, 2_000)]);
    assert_eq!(settled(&bob_seen), [(2_000, 0)]);
    let last = alice_seen.last().unwrap();
    let Some(E::BalanceChanged(b)) = &last.event else {
        unreachable!()
    };
    assert_eq!(b.balance.as_ref().unwrap().available_minor, WELCOME + 1_000);
    assert_eq!(b.delta_minor, 2_000);
    h.stop().await;
}

#[tokio::test]
async fn a_subscriber_that_reconnects_gets_exactly_what_it_missed() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let (mut alice, mut carol) = (h.player("alice"), h.player("carol"));
    let mut always = subscribe(&mut carol, 0).await;
    let mut first = subscribe(&mut alice, 0).await;
    next(&mut always).await;
    next(&mut first).await;
    let mut round = to_betting(&mut c).await;
    // Alice reads the first two events, then her connection drops.
    let seen = [next(&mut first).await, next(&mut first).await];
    drop(first);
    place(
        &mut alice,
        &round,
        vec![bet(pb::BetKind::Banker, 500)],
        "a1",
    )
    .await;
    round = natural(&mut c, &round, ROUNDS[0]).await;
    place(
        &mut carol,
        &round,
        vec![bet(pb::BetKind::Player, 500)],
        "c1",
    )
    .await;
    let third = natural(&mut c, &round, ROUNDS[1]).await;

    let carol_seen = read_until(&mut always, |e| {
        matches!(&e.event, Some(E::BettingOpened(_))) && e.round_id == third
    })
    .await;
    let mut resumed = subscribe(&mut alice, seen[1].seq).await;
    let alice_seen = read_until(&mut resumed, |e| {
        matches!(&e.event, Some(E::BettingOpened(_))) && e.round_id == third
    })
    .await;
    assert_increasing(&alice_seen);
    assert!(alice_seen.first().unwrap().seq > seen[1].seq);
    // Exactly the public events carol saw after the resume point, none twice or lost.
    let after = |events: &[pb::TableEvent]| -> Vec<u64> {
        events
            .iter()
            .filter(|e| is_public(e) && e.seq > seen[1].seq)
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(after(&alice_seen), after(&carol_seen));
    // And her own bet's events, which carol never saw.
    assert!(
        alice_seen
            .iter()
            .any(|e| matches!(&e.event, Some(E::BetAccepted(a)) if a.idempotency_key == "a1"))
    );
    assert!(
        !carol_seen
            .iter()
            .any(|e| matches!(&e.event, Some(E::BetAccepted(a)) if a.idempotency_key == "a1"))
    );
    assert!(
        !alice_seen
            .iter()
            .any(|e| matches!(&e.event, Some(E::BetAccepted(a)) if a.idempotency_key == "c1"))
    );
    // A resume point from the future is not trusted: a gap and a fresh snapshot.
    let mut odd = subscribe(&mut alice, u64::MAX / 2).await;
    assert!(matches!(next(&mut odd).await.event, Some(E::ResumeGap(_))));
    assert!(matches!(next(&mut odd).await.event, Some(E::Snapshot(_))));
    h.stop().await;
}

#[tokio::test]
async fn a_stalled_subscriber_is_cut_off_and_does_not_delay_the_others() {
    let h = Harness::start_with(FanoutLimits {
        ring_events: 4_096,
        // Above the largest burst one group commit can bring (50 talkers at once).
        subscriber_queue: 256,
    })
    .await;
    let mut c = h.croupier();
    // The stalled player's connection takes only a little data before it is read.
    let small = Endpoint::from_shared(format!("http://{}", h.address()))
        .unwrap()
        .initial_stream_window_size(Some(256))
        .connect()
        .await
        .unwrap();
    let mut stalled_client =
        PlayerServiceClient::with_interceptor(small, h.token("stalled", Role::Player));
    let mut stalled = subscribe(&mut stalled_client, 0).await;
    let snapshot = next(&mut stalled).await;
    let mut carol = h.player("carol");
    let mut live = subscribe(&mut carol, 0).await;
    next(&mut live).await;
    // Carol reads everything as it comes, noting when each event arrived, until the
    // fourth round opens.
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut opened = 0;
        while opened < 4 {
            let event = next(&mut live).await;
            if matches!(event.event, Some(E::BettingOpened(_))) {
                opened += 1;
            }
            seen.push((event, Instant::now()));
        }
        seen
    });

    let mut round = to_betting(&mut c).await;
    // A chatty table: 100 players, 50 at a time, 5 long lines each (the rate limit allows
    // 5): far more than the stalled connection and its queue hold.
    for wave in 0..2 {
        let mut chats = tokio::task::JoinSet::new();
        for n in wave * 50..wave * 50 + 50 {
            let mut p = h.player(&format!("talker{n}"));
            chats.spawn(async move {
                for line in 0..5 {
                    let text = format!("{n}/{line}: {}", "the croupier is fast tonight ".repeat(6));
                    let reply = p
                        .send_chat(pb::SendChatRequest {
                            table_id: t01(),
                            text,
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
                }
            });
        }
        while let Some(done) = chats.join_next().await {
            done.unwrap();
        }
    }
    let mut accepted = Vec::new();
    for cards in ROUNDS {
        close_betting(&mut c).await;
        for card in cards {
            let sent = Instant::now();
            let reply = deal(&mut c, card).await;
            assert!(reply.refusal.is_none());
            accepted.push((card, sent));
        }
        confirm(&mut c, &round).await;
        round = state(&open_betting(&mut c).await).round_id.clone();
    }
    let carol_timed = reader.await.unwrap();
    let mut delays: Vec<Duration> = accepted
        .iter()
        .map(|(card, at)| {
            let (_, received) = carol_timed
                .iter()
                .find(|(e, _)| matches!(&e.event, Some(E::CardDealt(d)) if d.card.as_ref().unwrap().card == *card))
                .unwrap();
            received.saturating_duration_since(*at)
        })
        .collect();
    delays.sort();
    println!(
        "carol, beside a stalled subscriber, 500 chat lines and 12 cards: from the croupier sending each card to carol receiving it: median {:?}, max {:?}",
        delays[delays.len() / 2],
        delays.last().unwrap()
    );
    let carol_seen: Vec<pb::TableEvent> = carol_timed.into_iter().map(|(e, _)| e).collect();
    assert_increasing(&carol_seen);
    assert_eq!(
        carol_seen
            .iter()
            .filter(|e| matches!(e.event, Some(E::ChatMessage(_))))
            .count(),
        500
    );

    // The stalled subscriber now reads: what was queued, then a CutOff with its resume
    // point.
    let mut stalled_seen = vec![snapshot];
    let cut = loop {
        let event = next(&mut stalled).await;
        if let Some(E::CutOff(cut)) = &event.event {
            break cut.clone();
        }
        stalled_seen.push(event);
    };
    assert!(cut.reason.contains("unread"), "{}", cut.reason);
    assert_eq!(cut.resume_from_seq, stalled_seen.last().unwrap().seq);
    assert!(
        stalled.message().await.unwrap().is_none(),
        "the stream ends after CutOff"
    );
    assert!(stalled_seen.len() < carol_seen.len());
    // Resuming from that point gives exactly the rest of what carol saw.
    let mut again = subscribe(&mut stalled_client, cut.resume_from_seq).await;
    let rest = read_until(&mut again, |e| {
        matches!(&e.event, Some(E::BettingOpened(_))) && e.round_id == round
    })
    .await;
    assert_increasing(&rest);
    let public_of_carol: Vec<u64> = carol_seen
        .iter()
        .filter(|e| is_public(e))
        .map(|e| e.seq)
        .collect();
    let public_of_stalled: Vec<u64> = stalled_seen[1..]
        .iter()
        .chain(rest.iter())
        .filter(|e| is_public(e))
        .map(|e| e.seq)
        .collect();
    assert_eq!(public_of_stalled, public_of_carol);
    h.stop().await;
}

#[tokio::test]
async fn a_timed_round_warns_of_the_last_bets_and_a_late_joiner_gets_the_countdown() {
    let mut config = TableConfig::new("T01", Pacing::Live);
    // 6 s of betting: the warning comes 5 s before the end, 1 s after opening.
    config.policy.live_betting_ms = Some(6_000);
    let h = Harness::start_configured(FanoutLimits::default(), config).await;
    let mut c = h.croupier();
    let mut alice = h.player("alice");
    let mut events = subscribe(&mut alice, 0).await;
    next(&mut events).await;
    let round = to_betting(&mut c).await;
    let seen = read_until(&mut events, |e| matches!(e.event, Some(E::LastBets(_)))).await;
    let Some(E::BettingOpened(opened)) = &seen
        .iter()
        .find(|e| matches!(e.event, Some(E::BettingOpened(_))))
        .unwrap()
        .event
    else {
        unreachable!()
    };
    assert_eq!(opened.duration_ms, 6_000);
    let Some(E::LastBets(last)) = &seen.last().unwrap().event else {
        unreachable!()
    };
    assert_eq!(last.closes_at, opened.closes_at);
    assert!(last.remaining_ms <= 5_000, "{last:?}");
    assert_eq!(seen.last().unwrap().round_id, round);
    // Someone joining now sees the round, its closing time and the countdown.
    let mut bob = h.player("bob");
    let mut late = subscribe(&mut bob, 0).await;
    let first = next(&mut late).await;
    assert_eq!(first.round_id, round);
    let Some(E::Snapshot(snapshot)) = first.event else {
        panic!("{first:?}")
    };
    assert_eq!(snapshot.phase(), pb::TablePhase::BettingOpen);
    assert_eq!(snapshot.closes_at, opened.closes_at);
    assert!(snapshot.countdown_ms <= 5_000);
    // The table closes betting by itself when the time is up.
    read_until(&mut events, |e| {
        matches!(e.event, Some(E::BettingClosed(_)))
    })
    .await;
    h.stop().await;
}

/// The croupier's seq (CommandReply, TableState) and the players' (TableEvent, resume
/// points) are one numbering: a card's event falls below the reply that dealt it and above
/// the state before it, and resuming from the croupier's seq gives exactly what followed.
#[tokio::test]
async fn the_croupiers_seq_and_the_subscribers_seq_are_one_numbering() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut alice = h.player("alice");
    let round = to_betting(&mut c).await;
    let closed = close_betting(&mut c).await;
    let mut events = subscribe(&mut alice, 0).await;
    let snapshot = next(&mut events).await;
    assert!(
        matches!(snapshot.event, Some(E::Snapshot(_))),
        "{snapshot:?}"
    );
    assert_eq!(
        snapshot.seq, closed.seq,
        "the snapshot stands where the croupier does"
    );
    assert_eq!(state(&closed).seq, closed.seq);

    let dealt = deal(&mut c, "9S").await;
    let card = read_until(&mut events, |e| matches!(e.event, Some(E::CardDealt(_)))).await;
    let card = card.last().unwrap();
    assert!(
        closed.seq < card.seq && card.seq < dealt.seq,
        "state before {} < card {} < reply {}",
        closed.seq,
        card.seq,
        dealt.seq
    );
    let now = c
        .get_table(pb::GetTableRequest { table_id: t01() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(now.seq, dealt.seq);

    // Resuming from the croupier's seq: the next card's events, nothing of the first.
    let mut resumed = subscribe(&mut alice, dealt.seq).await;
    let second = deal(&mut c, "8H").await;
    let after = read_until(&mut resumed, |e| matches!(e.event, Some(E::CardDealt(_)))).await;
    assert!(
        after
            .iter()
            .all(|e| dealt.seq < e.seq && e.seq < second.seq),
        "{after:?} between {} and {}",
        dealt.seq,
        second.seq
    );
    let Some(E::CardDealt(card)) = &after.last().unwrap().event else {
        unreachable!()
    };
    assert_eq!(card.card.as_ref().map(|c| c.card.as_str()), Some("8H"));
    assert_eq!(after.last().unwrap().round_id, round);
    h.stop().await;
}
