//! TableService and PlayerService over a real socket on 127.0.0.1:0, in front of an
//! in-process table actor (LocalRules, MemorySink).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;

#[tokio::test]
async fn a_whole_round_through_both_services() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut p = h.player("pia");

    let tables = p
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(tables.tables.len(), 1);
    let info = &tables.tables[0];
    assert_eq!(info.table_id, "T01");
    assert_eq!(info.decks, 1);
    assert_eq!(info.pacing(), pb::Pacing::Live);
    assert_eq!(info.limits.len(), 9);
    assert_eq!(info.paytable.as_ref().unwrap().name, "standard");

    let round = to_betting(&mut c).await;
    assert_eq!(round, "T01-S0001-H001");

    let placed = place(&mut p, &round, vec![bet(pb::BetKind::Player, 1_000)], "k1").await;
    let Some(pb::bet_decision::Decision::Accepted(accepted)) = &placed.decisions[0].decision else {
        panic!("{placed:?}");
    };
    assert_eq!(accepted.accepted_minor, 1_000);
    assert_eq!(accepted.position_total_minor, 1_000);
    let balance = placed.balance.unwrap();
    assert_eq!(balance.available_minor, WELCOME - 1_000);
    assert_eq!(balance.in_play_minor, 1_000);

    let reply = close_betting(&mut c).await;
    assert_eq!(state(&reply).phase(), pb::TablePhase::BettingClosed);
    assert_eq!(state(&reply).due(), pb::Due::PlayerCard);
    assert_eq!(state(&reply).croupier, "anna");
    assert_eq!(state(&reply).bet_totals.len(), 1);

    for card in ["9S", "2H", "KD"] {
        let reply = deal(&mut c, card).await;
        assert!(reply.refusal.is_none(), "{card}: {:?}", reply.refusal);
        assert_eq!(state(&reply).phase(), pb::TablePhase::Dealing);
    }
    let reply = deal(&mut c, "3C").await;
    let s = state(&reply);
    assert_eq!(s.phase(), pb::TablePhase::Result);
    assert_eq!(s.due(), pb::Due::Complete);
    assert_eq!((s.player_total, s.banker_total), (9, 5));
    assert_eq!(s.result.as_ref().unwrap().winner(), pb::Winner::Player);
    assert_eq!(s.cards.len(), 4);
    assert_eq!(s.cards[1].side(), pb::Side::Banker);

    let reply = confirm(&mut c, &round).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    assert_eq!(state(&reply).phase(), pb::TablePhase::Settled);

    let balance = p
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    // Player pays 1:1: the stake back and 1 000 won.
    assert_eq!(balance.available_minor, WELCOME + 1_000);
    assert_eq!(balance.currency, "EUR");
    h.stop().await;
}

#[tokio::test]
async fn refusals_change_nothing() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut p = h.player("pia");

    // A card before any shoe.
    let reply = deal(&mut c, "9S").await;
    assert_eq!(refusal_code(&reply), pb::RefusalCode::WrongPhase);

    let round = to_betting(&mut c).await;

    // Over the position's maximum (10 200), and over the balance (10 000).
    let over_max = place(&mut p, &round, vec![bet(pb::BetKind::Banker, 20_000)], "a").await;
    let refusal = decision_refusal(&over_max.decisions[0]);
    assert_eq!(refusal.code(), pb::RefusalCode::AboveMaximum);
    assert_eq!(refusal.field, "bets[0].stake_minor");
    let over_balance = place(
        &mut p,
        &round,
        vec![
            bet(pb::BetKind::Player, 6_000),
            bet(pb::BetKind::Banker, 6_000),
        ],
        "b",
    )
    .await;
    for decision in &over_balance.decisions {
        assert_eq!(
            decision_refusal(decision).code(),
            pb::RefusalCode::InsufficientFunds
        );
    }
    assert_eq!(over_balance.balance.unwrap().available_minor, WELCOME);

    // The same key twice: accepted once, debited once, the retry answered the same.
    let first = place(&mut p, &round, vec![bet(pb::BetKind::Player, 700)], "c").await;
    let again = place(&mut p, &round, vec![bet(pb::BetKind::Player, 700)], "c").await;
    assert_eq!(first.decisions, again.decisions);
    assert_eq!(again.balance.unwrap().available_minor, WELCOME - 700);
    // The same key for another request: a conflict.
    let conflict = place(&mut p, &round, vec![bet(pb::BetKind::Player, 800)], "c").await;
    assert_eq!(
        decision_refusal(&conflict.decisions[0]).code(),
        pb::RefusalCode::IdempotencyConflict
    );

    // A resent command id gets its first reply; another command under it is refused.
    let request = pb::CloseBettingRequest {
        table_id: t01(),
        command_id: "close-1".to_owned(),
    };
    let closed = c.close_betting(request.clone()).await.unwrap().into_inner();
    assert!(closed.refusal.is_none());
    let resent = c.close_betting(request).await.unwrap().into_inner();
    assert!(resent.replayed);
    assert_eq!(resent.seq, closed.seq);
    let reused = c
        .open_betting(pb::OpenBettingRequest {
            table_id: t01(),
            command_id: "close-1".to_owned(),
            duration_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(refusal_code(&reused), pb::RefusalCode::IdempotencyConflict);

    // A late bet.
    let late = place(&mut p, &round, vec![bet(pb::BetKind::Player, 500)], "d").await;
    assert_eq!(
        decision_refusal(&late.decisions[0]).code(),
        pb::RefusalCode::BettingClosed
    );

    // The second AS of a 1-deck shoe (the first was the burn card): a misread.
    let before = state(&closed).seq;
    let misread = deal(&mut c, "AS").await;
    assert_eq!(refusal_code(&misread), pb::RefusalCode::Misread);
    assert_eq!(state(&misread).seq, before);
    assert!(state(&misread).cards.is_empty());
    assert_eq!(
        state(&misread).last_refusal.as_ref().unwrap().code(),
        pb::RefusalCode::Misread
    );

    // A complete hand takes no more cards.
    for card in ["9S", "2H", "KD", "3C"] {
        assert!(deal(&mut c, card).await.refusal.is_none());
    }
    let extra = deal(&mut c, "4D").await;
    assert_eq!(refusal_code(&extra), pb::RefusalCode::HandComplete);
    assert_eq!(state(&extra).cards.len(), 4);

    // A stale round id cannot confirm.
    let stale = confirm(&mut c, "T01-S0001-H000").await;
    assert_eq!(refusal_code(&stale), pb::RefusalCode::WrongRound);
    assert_eq!(state(&stale).phase(), pb::TablePhase::Result);

    // Malformed requests are INVALID_ARGUMENT naming the field.
    let bad = c
        .deal_card(pb::DealCardRequest {
            table_id: t01(),
            command_id: id(),
            card: "10H".to_owned(),
            source: pb::CardSource::Scanner.into(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("card"), "{}", bad.message());
    let no_reason = c
        .undo_last_card(pb::UndoLastCardRequest {
            table_id: t01(),
            command_id: id(),
            reason: " ".to_owned(),
            card: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(no_reason.code(), Code::InvalidArgument);
    assert!(
        no_reason.message().contains("reason"),
        "{}",
        no_reason.message()
    );
    let no_id = c
        .close_betting(pb::CloseBettingRequest {
            table_id: t01(),
            command_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(no_id.code(), Code::InvalidArgument);
    h.stop().await;
}

#[tokio::test]
async fn roles_and_tokens_are_checked() {
    let h = Harness::start().await;
    let as_player =
        TableServiceClient::with_interceptor(h.channel.clone(), h.token("pia", Role::Player))
            .close_betting(pb::CloseBettingRequest {
                table_id: t01(),
                command_id: id(),
            })
            .await
            .unwrap_err();
    assert_eq!(as_player.code(), Code::PermissionDenied);

    let as_croupier =
        PlayerServiceClient::with_interceptor(h.channel.clone(), h.token("anna", Role::Croupier))
            .get_balance(pb::GetBalanceRequest {})
            .await
            .unwrap_err();
    assert_eq!(as_croupier.code(), Code::PermissionDenied);

    let forger = Issuer::new(signing_key_from_seed(&[9; 32]), "banco").unwrap();
    let forged = forger
        .issue(
            "anna",
            Role::Croupier,
            Duration::from_secs(600),
            SystemTime::now(),
        )
        .unwrap();
    let expired = h
        .issuer
        .issue(
            "anna",
            Role::Croupier,
            Duration::from_secs(60),
            SystemTime::now() - Duration::from_secs(3600),
        )
        .unwrap();
    for token in [forged, expired] {
        let status = TableServiceClient::with_interceptor(
            h.channel.clone(),
            BearerToken::new(&token).unwrap(),
        )
        .close_betting(pb::CloseBettingRequest {
            table_id: t01(),
            command_id: id(),
        })
        .await
        .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{}", status.message());
    }

    let unknown = h
        .croupier()
        .close_betting(pb::CloseBettingRequest {
            table_id: "T99".to_owned(),
            command_id: id(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains("T99"), "{}", unknown.message());
    let unknown = h
        .player("pia")
        .place_bets(pb::PlaceBetsRequest {
            table_id: "T99".to_owned(),
            round_id: "T99-S0001-H001".to_owned(),
            bets: vec![bet(pb::BetKind::Player, 500)],
            idempotency_key: "x".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);

    let unknown = h
        .player("pia")
        .subscribe(pb::SubscribeRequest {
            table_id: "T99".to_owned(),
            resume_from_seq: 0,
        })
        .await
        .err()
        .unwrap();
    assert_eq!(unknown.code(), Code::NotFound);
    // A player cannot mute anyone: MutePlayer is the croupier's.
    let mute_bob = || pb::MutePlayerRequest {
        table_id: t01(),
        command_id: id(),
        player_id: "bob".to_owned(),
        minutes: 5,
        reason: "spam".to_owned(),
    };
    let denied =
        TableServiceClient::with_interceptor(h.channel.clone(), h.token("pia", Role::Player))
            .mute_player(mute_bob())
            .await
            .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);
    // WatchVideo is a player's; an unknown table is named.
    let unknown = h
        .player("pia")
        .watch_video(pb::WatchVideoRequest {
            table_id: "T99".to_owned(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(unknown.code(), Code::NotFound);
    // The camera's service token may watch the table (for its overlay), and do nothing
    // else there.
    let mut camera =
        TableServiceClient::with_interceptor(h.channel.clone(), h.token("camera", Role::Service));
    camera
        .watch_table(pb::WatchTableRequest { table_id: t01() })
        .await
        .unwrap();
    let denied = camera.mute_player(mute_bob()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);
    h.stop().await;
}

#[tokio::test]
async fn watch_table_sees_each_change_in_order() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut watch = watch_t01(&mut c).await;
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.shoe_state(), pb::ShoeState::NoShoe);

    let mut replies = vec![open_shoe(&mut c).await, burn(&mut c, "7H").await];
    replies.push(open_betting(&mut c).await);
    replies.push(close_betting(&mut c).await);
    for card in ["9S", "2H"] {
        replies.push(deal(&mut c, card).await);
    }
    // A refusal publishes nothing.
    let misread = deal(&mut c, "9S").await;
    assert_eq!(refusal_code(&misread), pb::RefusalCode::Misread);
    let mut seen = Vec::new();
    while seen.len() < replies.len() {
        let state = tokio::time::timeout(Duration::from_secs(5), watch.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push(state);
    }
    let got: Vec<(u64, pb::TablePhase, usize)> = seen
        .iter()
        .map(|s| (s.seq, s.phase(), s.cards.len()))
        .collect();
    let want: Vec<(u64, pb::TablePhase, usize)> = replies
        .iter()
        .map(|r| (r.seq, state(r).phase(), state(r).cards.len()))
        .collect();
    assert_eq!(got, want);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    // GetTable answers once what WatchTable shows now; an unknown table is named.
    let now = c
        .get_table(pb::GetTableRequest { table_id: t01() })
        .await
        .unwrap()
        .into_inner();
    let last = seen.last().unwrap();
    assert_eq!(
        (now.seq, &now.round_id, now.phase(), &now.cards),
        (last.seq, &last.round_id, last.phase(), &last.cards)
    );
    // It also shows the refusal that published nothing.
    assert_eq!(
        now.last_refusal.as_ref().map(pb::Refusal::code),
        Some(pb::RefusalCode::Misread)
    );
    let unknown = c
        .get_table(pb::GetTableRequest {
            table_id: "T99".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains("T99"), "{unknown:?}");
    h.stop().await;
}

#[tokio::test]
async fn exact_stakes_bettors_results_and_round_checks() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut pia = h.player("pia");
    let mut max = h.player("max");
    let round = to_betting(&mut c).await;

    place(
        &mut pia,
        &round,
        vec![bet(pb::BetKind::Player, 1_000)],
        "p1",
    )
    .await;
    place(&mut pia, &round, vec![bet(pb::BetKind::Tie, 500)], "p2").await;
    place(&mut max, &round, vec![bet(pb::BetKind::Player, 700)], "m1").await;
    // A refused request still reports what the player has in play.
    let over = place(
        &mut pia,
        &round,
        vec![bet(pb::BetKind::Banker, 20_000)],
        "p3",
    )
    .await;
    let balance = over.balance.unwrap();
    assert_eq!(balance.in_play_minor, 1_500);
    assert_eq!(balance.available_minor, WELCOME - 1_500);
    let all = pia
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (all.available_minor, all.in_play_minor),
        (WELCOME - 1_500, 1_500)
    );

    // max clears his bets: the reply has nothing in play, pia's stakes stay.
    let cleared = max
        .clear_bets(pb::ClearBetsRequest {
            table_id: t01(),
            round_id: round.clone(),
            idempotency_key: "m2".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cleared.balance.unwrap().in_play_minor, 0);
    // A clear naming another round is refused by the table.
    let stale = max
        .clear_bets(pb::ClearBetsRequest {
            table_id: t01(),
            round_id: "T01-S0001-H000".to_owned(),
            idempotency_key: "m3".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Code::FailedPrecondition);
    assert!(
        stale.message().contains("T01-S0001-H000"),
        "{}",
        stale.message()
    );

    // Bettors are distinct players: pia on two positions counts once.
    place(&mut max, &round, vec![bet(pb::BetKind::Banker, 600)], "m4").await;
    let closed = close_betting(&mut c).await;
    assert_eq!(state(&closed).bettors, 2);

    // A void naming another round is refused by the table, which keeps the round.
    let stale = c
        .void_round(pb::VoidRoundRequest {
            table_id: t01(),
            command_id: id(),
            round_id: "T01-S0001-H000".to_owned(),
            reason: "scanner".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(refusal_code(&stale), pb::RefusalCode::WrongRound);
    assert_eq!(stale.refusal.as_ref().unwrap().field, "round_id");
    assert_eq!(state(&stale).phase(), pb::TablePhase::BettingClosed);

    for card in ["9S", "2H", "KD", "3C"] {
        assert!(deal(&mut c, card).await.refusal.is_none());
    }
    assert!(confirm(&mut c, &round).await.refusal.is_none());
    let all = pia
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.in_play_minor, 0, "settled: nothing in play");

    // The round's result is on the shoe's scoreboard; a voided round adds none.
    let next = open_betting(&mut c).await;
    let next_round = state(&next).round_id.clone();
    let voided = c
        .void_round(pb::VoidRoundRequest {
            table_id: t01(),
            command_id: id(),
            round_id: next_round,
            reason: "scanner".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(voided.refusal.is_none(), "{:?}", voided.refusal);
    let results = pia
        .last_results(pb::LastResultsRequest { table_id: t01() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(results.last_results, [i32::from(pb::Winner::Player)]);
    assert_eq!(results.roads.unwrap().bead_plate, "P");
    let tables = pia
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        tables.tables[0].last_results,
        [i32::from(pb::Winner::Player)]
    );
    h.stop().await;
}

/// PlaceBets decides a request whole, as player.proto says: one bet over the maximum and
/// none of the request is placed or debited; the over-maximum bet carries its own reason
/// and field, the other says it was not placed because of it; sent again alone, the other
/// is taken.
#[tokio::test]
async fn a_bet_request_is_decided_whole() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut pia = h.player("pia");
    let round = to_betting(&mut c).await;
    let both = vec![
        bet(pb::BetKind::Player, 1_000),
        bet(pb::BetKind::Banker, 20_000),
    ];
    let reply = place(&mut pia, &round, both, "p1").await;
    assert_eq!(reply.decisions.len(), 2);
    let (player, banker) = (
        decision_refusal(&reply.decisions[0]),
        decision_refusal(&reply.decisions[1]),
    );
    assert_eq!(banker.code(), pb::RefusalCode::AboveMaximum, "{banker:?}");
    assert_eq!(banker.field, "bets[1].stake_minor");
    assert_eq!(player.code(), pb::RefusalCode::NotAllowed, "{player:?}");
    assert_eq!(player.field, "bets[0]");
    assert!(
        player
            .message
            .starts_with("player not placed: a request is taken all or nothing, and "),
        "{player:?}"
    );
    let balance = reply.balance.unwrap();
    assert_eq!(
        (balance.available_minor, balance.in_play_minor),
        (WELCOME, 0),
        "nothing taken"
    );
    let alone = place(
        &mut pia,
        &round,
        vec![bet(pb::BetKind::Player, 1_000)],
        "p2",
    )
    .await;
    assert!(
        matches!(
            alone.decisions[0].decision,
            Some(pb::bet_decision::Decision::Accepted(_))
        ),
        "{alone:?}"
    );
    assert_eq!(alone.balance.unwrap().in_play_minor, 1_000);
    h.stop().await;
}
