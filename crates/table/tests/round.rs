//! Round phases, cards, corrections, voids, the shoe's life and the three pacings.
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::shoe::BurnRule;
use banco_rules::{BetKind, BetOutcome, Due, ShoeState, Side, Winner};
use banco_table::{
    BalanceReason, CardSource, Command, Event, Pacing, Phase, Refusal, Table, TableConfig,
};
use support::*;

#[test]
fn a_full_round() {
    let mut t = live_table_with(&[("alice", 10_000), ("bob", 10_000)]);
    assert_eq!(t.phase(), Phase::Idle);
    let events = ok(&mut t, open_betting(1_000));
    let round = t.round_id().unwrap().clone();
    assert_eq!(round.as_str(), "T01-S0001-H001");
    assert_eq!(
        events,
        vec![Event::BettingOpened {
            round_id: round.clone(),
            opened_at: 1_000,
            closes_at: None,
            last_hand: false
        }]
    );
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Player, 1_000)], "a1", 1_100),
    );
    ok(
        &mut t,
        bets(
            "bob",
            &round,
            &[(BetKind::Banker, 2_000), (BetKind::Tie, 500)],
            "b1",
            1_200,
        ),
    );
    assert_eq!(t.balance("alice"), Some(9_000));
    assert_eq!(t.balance("bob"), Some(7_500));
    assert_eq!(t.ledger().in_play(), 3_500);
    let snap = t.snapshot();
    assert_eq!(snap.bet_totals[&BetKind::Player].amount, 1_000);
    assert_eq!(snap.bet_totals[&BetKind::Banker].bettors, 1);

    ok(&mut t, close_betting(2_000));
    assert_eq!(t.snapshot().due, Some(Due::PlayerCard));
    let dealt = ok(&mut t, deal("2S", 2_100));
    assert!(matches!(
        &dealt[0],
        Event::CardDealt {
            to: Side::Player,
            due_next: Due::BankerCard,
            source: CardSource::Scanner,
            ..
        }
    ));
    assert_eq!(t.phase(), Phase::Dealing);
    ok(&mut t, deal("4H", 2_200));
    ok(&mut t, deal("3S", 2_300));
    let last = ok(&mut t, deal("5H", 2_400));
    assert_eq!(t.phase(), Phase::Result);
    let Some(Event::Result { result, .. }) = last.last() else {
        panic!("no result: {last:?}")
    };
    assert_eq!(result.winner(), Winner::Banker);

    let cmd = confirm(&t, 3_000);
    let events = ok(&mut t, cmd);
    assert_eq!(t.phase(), Phase::Settled);
    // Alice loses 1000; Bob's Banker wins 1900 (0.95:1), his Tie loses 500.
    assert_eq!(t.balance("alice"), Some(9_000));
    assert_eq!(t.balance("bob"), Some(11_400));
    assert_eq!(t.ledger().house(), -400);
    assert_eq!(t.ledger().in_play(), 0);
    let Event::Settled {
        players, house_net, ..
    } = &events[0]
    else {
        panic!("{events:?}")
    };
    assert_eq!(*house_net, -400);
    assert_eq!(players["bob"][0].outcome, BetOutcome::Win);
    assert_eq!(players["bob"][0].winnings, 1_900);
    // Bob staked 2_000 + 500 and gets 2_000 + 1_900 back: a credit of 3_900, owed at the
    // settlement and credited once the wallet acknowledges it.
    assert!(events.contains(&Event::BalanceChanged {
        player: "bob".into(),
        balance: 7_500,
        delta: 0,
        in_play: 0,
        pending: 3_900,
        reason: BalanceReason::Settlement,
    }));
    assert!(events.contains(&Event::BalanceChanged {
        player: "bob".into(),
        balance: 11_400,
        delta: 3_900,
        in_play: 0,
        pending: 0,
        reason: BalanceReason::Settlement,
    }));
    let Some(Event::RoundFinished(record)) =
        events.iter().find(|e| matches!(e, Event::RoundFinished(_)))
    else {
        panic!("no round record")
    };
    assert_eq!(record.round_id, round);
    assert_eq!(record.betting_opened_at, 1_000);
    assert_eq!(record.betting_closed_at, Some(2_000));
    assert_eq!(record.cards.len(), 4);
    assert_eq!(record.cards[3].at, 2_400);
    assert!(record.void.is_none());
    assert_eq!(record.bets["bob"][&BetKind::Tie], 500);
    assert_eq!(record.settlements["alice"][0].outcome, BetOutcome::Lose);
    assert!(!record.entries.is_empty());
    // The record is serde-serializable for the outbox.
    let json = serde_json::to_string(record.as_ref()).unwrap();
    let back: banco_table::FinishedRound = serde_json::from_str(&json).unwrap();
    assert_eq!(back, **record);

    // The next round.
    let next = open(&mut t, 4_000);
    assert_eq!(next.as_str(), "T01-S0001-H002");
}

#[test]
fn card_refusals_name_the_reason_and_change_nothing() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    let r = refused(&mut t, deal("AS", 1));
    assert!(matches!(r, Refusal::NotNow { .. }), "{r}");
    open(&mut t, 10);
    let r = refused(&mut t, deal("AS", 11));
    assert_eq!(
        r.to_string(),
        "AS refused: betting is still open: close betting first"
    );
    ok(&mut t, close_betting(20));
    for c in BANKER_NATURAL {
        ok(&mut t, deal(c, 30));
    }
    let r = refused(&mut t, deal("KD", 40));
    assert!(
        r.to_string()
            .starts_with("no card is due: the hand is complete (Banker 9 – Player 5)"),
        "{r}"
    );
    let r = refused(&mut t, open_betting(41));
    assert!(
        matches!(
            r,
            Refusal::NotNow {
                action: "open betting",
                ..
            }
        ),
        "{r}"
    );
    let r = refused(
        &mut t,
        Command::EndShoe {
            reason: "cards damaged".into(),
            by: CROUPIER.into(),
            now_ms: 42,
        },
    );
    assert!(
        matches!(
            r,
            Refusal::NotNow {
                action: "end the shoe",
                ..
            }
        ),
        "{r}"
    );
}

#[test]
fn a_ninth_ace_of_spades_is_a_misread() {
    let mut t = table(Pacing::Live);
    let mut one_deck = shoe_config(1, BurnRule::None);
    one_deck.cut_card_from_end = 12;
    ok(&mut t, open_shoe(one_deck, 0));
    open(&mut t, 1);
    ok(&mut t, close_betting(2));
    ok(&mut t, deal("AS", 3));
    let r = refused(&mut t, deal("AS", 4));
    assert!(r.to_string().contains("misread"), "{r}");
    assert!(r.to_string().starts_with("AS cannot be dealt"), "{r}");
}

#[test]
fn confirm_undo_and_void_are_refused_when_not_due() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    open(&mut t, 1);
    let cmd = confirm(&t, 2);
    let r = refused(&mut t, cmd);
    assert!(
        matches!(
            r,
            Refusal::NotNow {
                action: "confirm the result",
                ..
            }
        ),
        "{r}"
    );
    ok(&mut t, close_betting(3));
    let undo = |reason: &str| Command::UndoLastCard {
        reason: reason.into(),
        by: CROUPIER.into(),
        now_ms: 5,
    };
    assert_eq!(refused(&mut t, undo("misscan")), Refusal::NothingToUndo);
    ok(&mut t, deal("2S", 4));
    assert_eq!(
        refused(&mut t, undo("  ")),
        Refusal::Missing { field: "reason" }
    );
    let cmd = void(&t, "", 6);
    assert_eq!(refused(&mut t, cmd), Refusal::Missing { field: "reason" });
    let cmd = confirm(&t, 7);
    let r = refused(&mut t, cmd);
    assert!(matches!(r, Refusal::NotNow { .. }), "{r}");
}

#[test]
fn undo_then_a_different_card() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    let round = open(&mut t, 1);
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Player, 1_000)], "k", 2),
    );
    ok(&mut t, close_betting(3));
    for c in ["2S", "4H", "3S"] {
        ok(&mut t, deal(c, 4));
    }
    let before_misscan = t.clone();
    ok(&mut t, deal("9H", 5)); // a misscan: the card on the table is 5H
    let events = ok(
        &mut t,
        Command::UndoLastCard {
            reason: "misscan: was 5H".into(),
            by: CROUPIER.into(),
            now_ms: 6,
        },
    );
    assert!(matches!(
        &events[0],
        Event::CardUndone { reason, due_next: Due::BankerCard, .. } if reason == "misscan: was 5H"
    ));
    assert_eq!(t.phase(), Phase::Dealing);
    assert_eq!(t.snapshot().cards, before_misscan.snapshot().cards);
    assert_eq!(
        t.shoe(),
        before_misscan.shoe(),
        "the shoe has the card back"
    );
    ok(&mut t, deal("5H", 7));
    assert_eq!(t.phase(), Phase::Result);
    let cmd = confirm(&t, 8);
    let events = ok(&mut t, cmd);
    let Some(Event::RoundFinished(record)) =
        events.iter().find(|e| matches!(e, Event::RoundFinished(_)))
    else {
        panic!()
    };
    assert_eq!(record.corrections.len(), 1);
    assert_eq!(record.corrections[0].card, card("9H"));
    assert_eq!(record.corrections[0].by, CROUPIER);
    assert_eq!(record.corrections[0].at, 6);
    assert_eq!(
        record
            .cards
            .iter()
            .map(|c| c.card.to_string())
            .collect::<Vec<_>>(),
        ["2S", "4H", "3S", "5H"]
    );

    // Undo from Result goes back to Dealing; undoing every card goes back to BettingClosed.
    let mut t = live_table_with(&[]);
    open(&mut t, 1);
    ok(&mut t, close_betting(2));
    for c in BANKER_NATURAL {
        ok(&mut t, deal(c, 3));
    }
    let undo = || Command::UndoLastCard {
        reason: "r".into(),
        by: "x".into(),
        now_ms: 4,
    };
    for expected in [Phase::Dealing, Phase::Dealing, Phase::Dealing] {
        ok(&mut t, undo());
        assert_eq!(t.phase(), expected);
    }
    ok(&mut t, undo());
    assert_eq!(
        t.phase(),
        Phase::BettingClosed {
            closed_at: 2,
            draw_at: None
        }
    );
    assert_eq!(t.shoe().unwrap().cards_dealt(), 0);
}

#[test]
fn void_from_every_phase_before_settled() {
    let deals: [&[&str]; 4] = [&[], &[], &["2S"], &BANKER_NATURAL];
    for (i, cards) in deals.iter().enumerate() {
        let mut t = live_table_with(&[("alice", 10_000)]);
        let round = open(&mut t, 1);
        ok(
            &mut t,
            bets(
                "alice",
                &round,
                &[(BetKind::Player, 1_000), (BetKind::Big, 600)],
                "k",
                2,
            ),
        );
        if i > 0 {
            ok(&mut t, close_betting(3));
        }
        for c in *cards {
            ok(&mut t, deal(c, 4));
        }
        let cmd = void(&t, "scanner malfunction", 5);
        let events = ok(&mut t, cmd);
        assert_eq!(t.phase(), Phase::Voided);
        assert_eq!(t.balance("alice"), Some(10_000));
        let Event::RoundVoided { refunds, void, .. } = &events[0] else {
            panic!()
        };
        assert_eq!(refunds["alice"], 1_600);
        assert_eq!(void.reason, "scanner malfunction");
        let Some(Event::RoundFinished(record)) =
            events.iter().find(|e| matches!(e, Event::RoundFinished(_)))
        else {
            panic!()
        };
        assert_eq!(record.void.as_ref().unwrap().reason, "scanner malfunction");
        assert!(record.settlements.is_empty());
        assert_eq!(t.shoe().unwrap().hand_cards(), &[] as &[banco_rules::Card]);
        // The next round gets the next id.
        assert_eq!(open(&mut t, 10).as_str(), "T01-S0001-H002");
    }
    let mut t = live_table_with(&[]);
    open(&mut t, 1);
    finish(&mut t, 2, &BANKER_NATURAL);
    let cmd = void(&t, "too late", 9);
    let r = refused(&mut t, cmd);
    assert!(matches!(
        r,
        Refusal::NotNow {
            action: "void the round",
            ..
        }
    ));
}

#[test]
fn burn_comes_first() {
    let mut t = table(Pacing::Live);
    ok(
        &mut t,
        open_shoe(shoe_config(8, BurnRule::ExposeAndBurn), 0),
    );
    assert!(matches!(
        refused(&mut t, open_betting(1)),
        Refusal::BurnPending { shoe: 1, .. }
    ));
    let events = ok(
        &mut t,
        Command::Burn {
            exposed: card("7D"),
            by: CROUPIER.into(),
            now_ms: 2,
        },
    );
    assert!(matches!(&events[0], Event::Burned { burn, .. } if burn.face_down == 7));
    assert_eq!(t.shoe().unwrap().cards_left(), 416 - 8);
    let r = refused(
        &mut t,
        Command::Burn {
            exposed: card("7D"),
            by: CROUPIER.into(),
            now_ms: 3,
        },
    );
    assert!(matches!(r, Refusal::Shoe(_)), "{r}");
    open(&mut t, 4);
    assert!(matches!(
        refused(&mut t, open_shoe(shoe_config(8, BurnRule::None), 5)),
        Refusal::NotNow { .. }
    ));
}

#[test]
fn cut_card_then_last_hand_then_shoe_ended() {
    let mut t = table(Pacing::Live);
    let cfg = shoe_config(1, BurnRule::ExposeAndBurn);
    let mut dealer = Dealer::new(cfg, 7);
    ok(&mut t, open_shoe(cfg, 0));
    ok(&mut t, dealer.burn(1));
    let mut now = 10;
    let mut seen = Vec::new();
    loop {
        let events = ok(&mut t, open_betting(now));
        let Event::BettingOpened { last_hand, .. } = &events[0] else {
            panic!()
        };
        seen.push(if *last_hand { "open(last)" } else { "open" });
        ok(&mut t, close_betting(now + 1));
        for e in dealer.deal_coup(&mut t, now + 2) {
            if matches!(e, Event::CutCardOut { .. }) {
                seen.push("cut");
            }
        }
        let cmd = confirm(&t, now + 3);
        for e in ok(&mut t, cmd) {
            match e {
                Event::LastHand { .. } => seen.push("last"),
                Event::ShoeEnded { by: None, .. } => seen.push("ended"),
                _ => {}
            }
        }
        now += 10;
        if t.shoe().is_none() {
            break;
        }
        assert!(seen.len() < 100);
    }
    let tail = &seen[seen.len() - 5..];
    assert_eq!(tail, ["open", "cut", "last", "open(last)", "ended"]);
    assert_eq!(seen.iter().filter(|s| **s == "cut").count(), 1);
    let r = refused(&mut t, open_betting(now));
    assert!(matches!(r, Refusal::NoShoe { .. }), "{r}");
    ok(&mut t, open_shoe(cfg, now));
    assert_eq!(t.snapshot().shoe, Some(2));
}

#[test]
fn automated_multiplayer_is_driven_by_ticks_and_the_shuffler() {
    let mut t = table(Pacing::AutomatedMultiplayer);
    ready(&mut t, &[("alice", 10_000)]);
    let mut dealer = Dealer::new(shoe_config(8, BurnRule::None), 42);
    let round = open(&mut t, 100_000);
    assert_eq!(t.next_deadline(), Some(120_000));
    assert_eq!(ok(&mut t, Command::Tick { now_ms: 119_999 }), vec![]);
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Banker, 1_000)], "k", 119_999),
    );
    // Betting closes at closes_at even if the tick comes late; the draw is 5 s later.
    let events = ok(&mut t, Command::Tick { now_ms: 120_700 });
    assert_eq!(
        events,
        vec![Event::BettingClosed {
            round_id: round.clone(),
            closed_at: 120_000,
            draw_at: Some(125_000)
        }]
    );
    assert_eq!(t.next_deadline(), Some(125_000));
    let early = dealer.next_card(124_999);
    let r = refused(&mut t, early.clone());
    assert!(
        matches!(
            r,
            Refusal::BeforeDraw {
                draw_at: 125_000,
                ..
            }
        ),
        "{r}"
    );
    dealer.next -= 1;
    dealer.deal_coup(&mut t, 125_000);
    assert_eq!(t.phase(), Phase::Result);
    let round_id = current(&t);
    ok(
        &mut t,
        Command::ConfirmResult {
            round_id,
            by: "auto".into(),
            now_ms: 126_000,
        },
    );
    assert_eq!(t.ledger().in_play(), 0);
}

#[test]
fn single_player_deal_closes_betting() {
    let mut t = table(Pacing::SinglePlayer);
    ready(&mut t, &[("solo", 10_000)]);
    let round = open(&mut t, 1);
    assert_eq!(t.next_deadline(), None);
    let deal_cmd = |now_ms| Command::Deal {
        player: "solo".into(),
        now_ms,
    };
    assert!(matches!(
        refused(&mut t, deal_cmd(2)),
        Refusal::NoBets { .. }
    ));
    ok(
        &mut t,
        bets("solo", &round, &[(BetKind::Player, 500)], "k", 3),
    );
    let events = ok(&mut t, deal_cmd(4));
    assert!(matches!(
        &events[0],
        Event::BettingClosed {
            closed_at: 4,
            draw_at: None,
            ..
        }
    ));
    let mut live = live_table_with(&[]);
    open(&mut live, 1);
    assert!(matches!(
        refused(&mut live, deal_cmd(2)),
        Refusal::WrongPacing { .. }
    ));
}

#[test]
fn live_auto_close_and_snapshot() {
    let mut cfg = config(Pacing::Live);
    cfg.policy.live_betting_ms = Some(30_000);
    let mut t = Table::new(cfg).unwrap();
    ready(&mut t, &[]);
    open(&mut t, 1_000);
    assert_eq!(
        t.phase(),
        Phase::BettingOpen {
            opened_at: 1_000,
            closes_at: Some(31_000)
        }
    );
    ok(&mut t, Command::Tick { now_ms: 31_000 });
    assert!(matches!(
        t.phase(),
        Phase::BettingClosed {
            closed_at: 31_000,
            ..
        }
    ));
    ok(&mut t, deal("2S", 31_500));
    let snap = t.snapshot();
    assert_eq!(snap.round_id.unwrap().as_str(), "T01-S0001-H001");
    assert_eq!(snap.due, Some(Due::BankerCard));
    assert_eq!(snap.player_total, 2);
    assert_eq!(snap.shoe_state, Some(ShoeState::InPlay));
    assert_eq!(snap.cards_left, Some(415));
}

#[test]
fn bad_configs_are_refused() {
    assert!(Table::new(TableConfig::new("T-01", Pacing::Live)).is_err());
    let mut cfg = config(Pacing::Live);
    cfg.policy.limits.min = 0;
    assert!(Table::new(cfg).is_err());
    let mut t = table(Pacing::Live);
    let mut bad = shoe_config(8, BurnRule::None);
    bad.cut_card_from_end = 3;
    assert!(matches!(
        refused(&mut t, open_shoe(bad, 0)),
        Refusal::ShoeConfig(_)
    ));
}

#[test]
fn commands_and_events_round_trip_through_json() {
    let cmd = bets(
        "alice",
        &"T01-S0001-H001".into(),
        &[(BetKind::Tie, 500)],
        "k1",
        9,
    );
    let json = journaled(&cmd);
    assert_eq!(
        json,
        r#"{"command":"place_bets","player":"alice","round_id":"T01-S0001-H001","bets":[["tie",500]],"key":"k1","now_ms":9}"#
    );
    assert_eq!(from_journal(&json), cmd);
    let open = open_shoe(shoe_config(6, BurnRule::ExposeAndBurn), 1);
    assert_eq!(from_journal(&journaled(&open)), open);
}
