//! The broadcaster's own HTTP/2 serving: calls and Subscribe streams over TLS, many
//! Subscribe streams on one connection, a cancelled subscription let go, and a stop that
//! ends every stream with a status saying to resume, then returns.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use pb::table_event::Event as E;
use tonic::Streaming;

async fn subscribe(p: &mut Player) -> Streaming<pb::TableEvent> {
    p.subscribe(pb::SubscribeRequest {
        table_id: t01(),
        resume_from_seq: 0,
    })
    .await
    .unwrap()
    .into_inner()
}

async fn next(stream: &mut Streaming<pb::TableEvent>) -> Result<pb::TableEvent, tonic::Status> {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("an event within 10 s")
        .map(|event| event.expect("the stream goes on"))
}

/// Reads until an event of `kind` comes; the events read.
async fn until(
    stream: &mut Streaming<pb::TableEvent>,
    kind: impl Fn(&E) -> bool,
) -> Vec<pb::TableEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next(stream).await.unwrap();
        let done = event.event.as_ref().is_some_and(&kind);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

async fn players_at_table(p: &mut Player) -> u32 {
    let tables = p
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap()
        .into_inner();
    tables.tables[0].players
}

#[tokio::test]
async fn calls_and_subscriptions_work_over_tls_and_plaintext_is_refused() {
    let h = Harness::start_tls().await;
    let mut c = h.croupier();
    let mut p = h.player("pia");
    let mut events = subscribe(&mut p).await;
    assert!(matches!(
        next(&mut events).await.unwrap().event,
        Some(E::Snapshot(_))
    ));
    let round = to_betting(&mut c).await;
    let opened = until(&mut events, |e| matches!(e, E::BettingOpened(_))).await;
    assert_eq!(opened.last().unwrap().round_id, round);
    let placed = place(&mut p, &round, vec![bet(pb::BetKind::Player, 1_000)], "k1").await;
    assert_eq!(placed.balance.unwrap().available_minor, WELCOME - 1_000);
    until(&mut events, |e| matches!(e, E::BetAccepted(_))).await;

    // The same port without TLS: no gRPC call gets through.
    let plain = Endpoint::from_shared(format!("http://{}", h.address()))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(5));
    let refused = match plain.connect().await {
        Err(_) => true,
        Ok(channel) => {
            let mut p =
                PlayerServiceClient::with_interceptor(channel, h.token("pia", Role::Player));
            p.get_balance(pb::GetBalanceRequest {}).await.is_err()
        }
    };
    assert!(refused, "a plaintext call was answered on a TLS port");
    h.stop().await;
}

#[tokio::test]
async fn many_subscriptions_on_one_connection_each_get_every_event_once_in_order() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    // 50 players, one connection (the harness's channel).
    let mut streams = Vec::new();
    for i in 0..50 {
        let mut p = h.player(&format!("p{i:02}"));
        let mut events = subscribe(&mut p).await;
        assert!(matches!(
            next(&mut events).await.unwrap().event,
            Some(E::Snapshot(_))
        ));
        streams.push(events);
    }
    let round = to_betting(&mut c).await;
    let next_round = natural(&mut c, &round, ["9S", "2H", "KD", "3C"]).await;
    assert_ne!(next_round, round);
    let mut first: Option<Vec<(u64, String)>> = None;
    for events in &mut streams {
        let seen: Vec<(u64, String)> = until(events, |e| matches!(e, E::RoundResult(_)))
            .await
            .into_iter()
            .filter(|e| {
                matches!(
                    e.event,
                    Some(
                        E::CardDealt(_)
                            | E::BettingOpened(_)
                            | E::BettingClosed(_)
                            | E::RoundResult(_)
                    )
                )
            })
            .map(|e| (e.seq, format!("{:?}", e.event)))
            .collect();
        assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
        let cards = seen
            .iter()
            .filter(|(_, e)| e.starts_with("Some(CardDealt"))
            .count();
        assert_eq!(cards, 4, "{seen:?}");
        match &first {
            None => first = Some(seen),
            Some(first) => assert_eq!(first, &seen),
        }
    }
    h.stop().await;
}

#[tokio::test]
async fn a_cancelled_subscription_is_let_go_even_with_no_event_to_send() {
    let h = Harness::start().await;
    let mut p = h.player("pia");
    let mut events = subscribe(&mut p).await;
    next(&mut events).await.unwrap();
    assert_eq!(players_at_table(&mut p).await, 1);
    // The client drops the stream (RST_STREAM) and the table is quiet: nothing is sent
    // that would fail, so the connection's periodic look at its streams must notice.
    drop(events);
    banco_testkit::eventually_within(
        "the cancelled subscriber to be no longer counted",
        Duration::from_secs(15),
        async || players_at_table(&mut p).await == 0,
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn stopping_ends_every_stream_with_unavailable_then_the_server_returns() {
    let mut h = Harness::start().await;
    let mut p = h.player("pia");
    let mut events = subscribe(&mut p).await;
    next(&mut events).await.unwrap();
    let mut c = h.croupier();
    let mut watch = watch_t01(&mut c).await;
    watch.message().await.unwrap().unwrap();

    h.stop_serving();
    let ended = next(&mut events).await.unwrap_err();
    assert_eq!(ended.code(), Code::Unavailable, "{ended:?}");
    assert!(ended.message().contains("resume_from_seq"), "{ended:?}");
    let served = h.served.take().unwrap();
    let result = tokio::time::timeout(Duration::from_secs(15), served)
        .await
        .expect("the server returns once its streams have ended")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    // The croupier's WatchTable ended too (the table's streams are ended first).
    let watched = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match watch.message().await {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await;
    assert!(
        watched.is_ok(),
        "WatchTable still open after the server stopped"
    );
    // A new call finds no server.
    let again = p.get_balance(pb::GetBalanceRequest {}).await;
    assert!(again.is_err());
    h.stop().await;
}
