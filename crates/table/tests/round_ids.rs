//! Commands that name a round are refused for any other round; the shoe's end keeps its
//! reason; the snapshot counts distinct bettors and keeps the shoe's results.
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::shoe::BurnRule;
use banco_rules::{BetKind, Winner};
use banco_table::{Command, Event, Phase, Refusal, RoundId};
use support::*;

/// `r` refuses `action` for naming a round other than the one under way.
fn assert_wrong_round(r: &Refusal, action: &str) {
    assert!(
        matches!(r, Refusal::WrongRound { action: refused, .. } if *refused == action),
        "{r}"
    );
}

fn confirm_round(round: &RoundId, now_ms: u64) -> Command {
    Command::ConfirmResult {
        round_id: round.clone(),
        by: CROUPIER.into(),
        now_ms,
    }
}

fn void_round(round: &RoundId, now_ms: u64) -> Command {
    Command::VoidRound {
        round_id: round.clone(),
        reason: "scanner fault".into(),
        by: CROUPIER.into(),
        now_ms,
    }
}

#[test]
fn confirm_and_void_name_the_round_in_play() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    let stale: RoundId = "T01-S0001-H000".into();
    // Before any round.
    let r = refused(&mut t, confirm_round(&stale, 1));
    assert_eq!(
        r,
        Refusal::WrongRound {
            action: "confirm the result",
            asked: stale.clone(),
            current: None,
        }
    );
    assert!(r.to_string().contains("no round has been opened"), "{r}");
    let round = open(&mut t, 2);
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Banker, 1_000)], "a", 3),
    );
    ok(&mut t, close_betting(4));
    for c in BANKER_NATURAL {
        ok(&mut t, deal(c, 5));
    }
    let before = t.clone();
    let r = refused(&mut t, confirm_round(&stale, 6));
    assert_eq!(
        r.to_string(),
        "cannot confirm the result: round T01-S0001-H000 is not the round in play \
         (that is T01-S0001-H001)"
    );
    let r = refused(&mut t, void_round(&stale, 6));
    assert_wrong_round(&r, "void the round");
    assert_eq!(t, before, "a refusal changes nothing");
    ok(&mut t, confirm_round(&round, 7));
    assert_eq!(t.phase(), Phase::Settled);
    // The next round: the settled one can no longer be voided or confirmed again.
    let next = open(&mut t, 8);
    let r = refused(&mut t, void_round(&round, 9));
    assert_eq!(
        r,
        Refusal::WrongRound {
            action: "void the round",
            asked: round.clone(),
            current: Some(next.clone()),
        }
    );
    ok(&mut t, void_round(&next, 10));
}

#[test]
fn clear_and_rebet_may_name_the_round() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    let first = open(&mut t, 1);
    ok(
        &mut t,
        bets("alice", &first, &[(BetKind::Player, 1_000)], "a", 2),
    );
    finish(&mut t, 3, &BANKER_NATURAL);
    let second = open(&mut t, 10);
    let rebet = |round: &RoundId, key: &str| Command::Rebet {
        player: "alice".into(),
        round_id: Some(round.clone()),
        key: key.into(),
        now_ms: 11,
    };
    let r = refused(&mut t, rebet(&first, "r1"));
    assert_wrong_round(&r, "place bets");
    ok(&mut t, rebet(&second, "r2"));
    assert_eq!(t.stakes_in_play("alice")[&BetKind::Player], 1_000);
    let clear = |round: &RoundId, key: &str| Command::ClearBets {
        player: "alice".into(),
        round_id: Some(round.clone()),
        key: key.into(),
        now_ms: 12,
    };
    let r = refused(&mut t, clear(&first, "c1"));
    assert_wrong_round(&r, "clear bets");
    ok(&mut t, clear(&second, "c2"));
    assert!(t.stakes_in_play("alice").is_empty());
}

#[test]
fn end_shoe_needs_and_keeps_a_reason() {
    let mut t = live_table_with(&[]);
    let end = |reason: &str| Command::EndShoe {
        reason: reason.into(),
        by: CROUPIER.into(),
        now_ms: 5,
    };
    assert_eq!(
        refused(&mut t, end(" ")),
        Refusal::Missing { field: "reason" }
    );
    let events = ok(&mut t, end("cards marked"));
    assert_eq!(
        events,
        [Event::ShoeEnded {
            shoe: 1,
            by: Some(CROUPIER.into()),
            reason: Some("cards marked".into()),
            at: 5,
            shuffle_key: None,
        }]
    );
    // Journaled as JSON and read back with the reason.
    let json = journaled(&end("cards marked"));
    assert!(json.contains(r#""reason":"cards marked""#), "{json}");
    assert_eq!(from_journal(&json), end("cards marked"));
}

#[test]
fn bettors_are_distinct_players_and_stakes_are_exact() {
    let mut t = live_table_with(&[("alice", 50_000), ("bob", 50_000), ("carol", 50_000)]);
    let round = open(&mut t, 1);
    let place =
        |player: &str, bets_: &[(BetKind, i64)], key: &str| bets(player, &round, bets_, key, 2);
    ok(
        &mut t,
        place(
            "alice",
            &[(BetKind::Player, 1_000), (BetKind::Tie, 500)],
            "a1",
        ),
    );
    ok(&mut t, place("alice", &[(BetKind::Player, 500)], "a2"));
    ok(&mut t, place("bob", &[(BetKind::Player, 2_000)], "b1"));
    let snap = t.snapshot();
    assert_eq!(
        snap.bettors, 2,
        "alice twice and on two positions counts once"
    );
    assert_eq!(snap.bet_totals[&BetKind::Player].bettors, 2);
    let alice = t.stakes_in_play("alice");
    assert_eq!(alice.values().sum::<i64>(), 2_000);
    assert_eq!(alice[&BetKind::Player], 1_500);
    ok(&mut t, place("carol", &[(BetKind::Banker, 700)], "c1"));
    assert_eq!(t.snapshot().bettors, 3);
    ok(
        &mut t,
        Command::ClearBets {
            player: "bob".into(),
            round_id: None,
            key: "b2".into(),
            now_ms: 3,
        },
    );
    assert_eq!(t.snapshot().bettors, 2);
    assert!(t.stakes_in_play("bob").is_empty());
    assert_eq!(t.check_books(), Ok(()));
    finish(&mut t, 4, &BANKER_NATURAL);
    // Settled: nothing is in play any more (the snapshot still shows the round's book).
    assert!(t.stakes_in_play("alice").is_empty());
    assert_eq!(t.snapshot().bettors, 2);
    open(&mut t, 10);
    assert_eq!(t.snapshot().bettors, 0);
}

#[test]
fn the_shoe_keeps_its_results_without_voided_rounds() {
    let mut t = live_table_with(&[]);
    assert!(t.snapshot().last_results().is_empty());
    for n in 0..3 {
        open(&mut t, n * 10);
        finish_nth(&mut t, n * 10 + 1, n);
    }
    let round = open(&mut t, 100);
    ok(&mut t, void_round(&round, 101));
    assert_eq!(t.snapshot().last_results(), [Winner::Banker; 3]);
    assert_eq!(t.scoreboard().results().len(), 3);
    // A whole shoe (a seeded shuffle, no burn): the snapshot shows its last 59 results,
    // the scoreboard all of them, in order.
    let mut t = table(banco_table::Pacing::Live);
    let config = shoe_config(8, BurnRule::None);
    ok(&mut t, open_shoe(config, 0));
    let mut dealer = Dealer::new(config, 7);
    let mut winners = Vec::new();
    let mut now = 1;
    while t.shoe().is_some() {
        open(&mut t, now);
        ok(&mut t, close_betting(now + 1));
        let mut events = dealer.deal_coup(&mut t, now + 2);
        let cmd = confirm(&t, now + 3);
        events.extend(ok(&mut t, cmd));
        winners.extend(events.iter().find_map(|e| match e {
            Event::Result { result, .. } => Some(result.winner()),
            _ => None,
        }));
        now += 10;
    }
    assert_eq!(t.scoreboard().results(), winners.as_slice());
    let played = winners.len();
    assert!(played > 59, "{played} results");
    assert_eq!(t.snapshot().last_results(), &winners[played - 59..]);
    // Its roads are drawn from every result, not only the strip of 59.
    assert_eq!(t.snapshot().results, winners);
    // The shoe has run out; its results stay until a new shoe starts a new scoreboard.
    assert_eq!(
        t.scoreboard().results().len(),
        played,
        "kept until a new shoe"
    );
    ok(&mut t, open_shoe(shoe_config(8, BurnRule::None), 10_001));
    assert!(t.snapshot().last_results().is_empty());
    assert!(t.scoreboard().results().is_empty());
}

#[test]
fn a_new_shoe_shows_no_round_of_the_shoe_before() {
    let mut t = live_table_with(&[("alice", 10_000)]);
    let round = open(&mut t, 1);
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Banker, 1_000)], "a", 2),
    );
    finish(&mut t, 3, &BANKER_NATURAL);
    ok(
        &mut t,
        Command::EndShoe {
            reason: "shift change".into(),
            by: CROUPIER.into(),
            now_ms: 10,
        },
    );
    // Ended: its last hand stays on show.
    let ended = t.snapshot();
    assert_eq!(ended.round_id.as_ref(), Some(&round));
    assert_eq!(ended.cards.len(), 4);
    ok(&mut t, open_shoe(shoe_config(8, BurnRule::None), 20));
    let fresh = t.snapshot();
    assert_eq!(fresh.shoe, Some(2));
    assert_eq!(fresh.round_id, None, "the old shoe's round is gone");
    assert!(fresh.cards.is_empty());
    assert!(fresh.bet_totals.is_empty());
    assert_eq!(fresh.bettors, 0);
    assert_eq!(fresh.totals, None);
    assert_eq!((fresh.player_total, fresh.banker_total), (0, 0));
    assert!(fresh.results.is_empty());
}

#[test]
fn the_snapshot_shows_the_burn_and_what_a_finished_round_moved() {
    let mut t = table(banco_table::Pacing::Live);
    for (p, amount) in [("alice", 10_000), ("bob", 10_000)] {
        fund(&mut t, p, amount);
    }
    ok(
        &mut t,
        open_shoe(shoe_config(8, BurnRule::ExposeAndBurn), 0),
    );
    assert_eq!(t.snapshot().burn, None, "not burned yet");
    ok(
        &mut t,
        Command::Burn {
            exposed: card("7H"),
            by: CROUPIER.into(),
            now_ms: 1,
        },
    );
    let burn = t.snapshot().burn.unwrap();
    assert_eq!((burn.exposed, burn.face_down), (card("7H"), 7));

    let round = open(&mut t, 2);
    ok(
        &mut t,
        bets("alice", &round, &[(BetKind::Banker, 2_000)], "a", 3),
    );
    ok(
        &mut t,
        bets("bob", &round, &[(BetKind::Player, 1_000)], "b", 3),
    );
    assert_eq!(t.snapshot().totals, None, "not before the round is over");
    // Banker wins with 9: alice gets 2,000 + 1,900, bob loses 1,000.
    finish(&mut t, 4, &BANKER_NATURAL);
    let totals = t.snapshot().totals.unwrap();
    assert_eq!((totals.staked, totals.returned), (3_000, 3_900));
    assert_eq!(totals.house_result(), -900);
    assert_eq!(t.snapshot().burn, Some(burn), "kept for the whole shoe");

    let round = open(&mut t, 10);
    assert_eq!(t.snapshot().totals, None, "a new round moved nothing yet");
    ok(
        &mut t,
        bets(
            "bob",
            &round,
            &[(BetKind::Tie, 500), (BetKind::Player, 500)],
            "b2",
            11,
        ),
    );
    ok(&mut t, void_round(&round, 12));
    let totals = t.snapshot().totals.unwrap();
    assert_eq!((totals.staked, totals.returned), (1_000, 1_000));
    assert_eq!(totals.house_result(), 0);
}
