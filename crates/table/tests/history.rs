//! Each player's own rounds ("my bets"): bets, clear, settlement, void, paging with
//! `before`, and the bound of [`HISTORY_PER_PLAYER`] finished rounds.
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::BetKind::{Banker, Player, Tie};
use banco_rules::{BetOutcome, Winner};
use banco_table::{Command, HISTORY_PER_PLAYER, HistoryEntry, RoundId, Table};
use support::*;

fn clear(player: &str, key: &str, now_ms: u64) -> Command {
    Command::ClearBets {
        player: player.into(),
        round_id: None,
        key: key.into(),
        now_ms,
    }
}

fn ids(entries: &[HistoryEntry]) -> Vec<String> {
    entries.iter().map(|e| e.round_id.to_string()).collect()
}

#[test]
fn bets_clear_settle_and_void() {
    let mut t = live_table_with(&[("alice", 100_000), ("bob", 100_000)]);
    assert!(t.history("alice", None, 10).is_empty());

    // Round 1: two requests make one entry, placed at the first.
    let r1 = open(&mut t, 1_000);
    ok(&mut t, bets("alice", &r1, &[(Player, 1_000)], "a1", 1_100));
    ok(
        &mut t,
        bets("alice", &r1, &[(Player, 500), (Tie, 500)], "a2", 1_200),
    );
    let open_entry = HistoryEntry {
        round_id: r1.clone(),
        placed_at: 1_100,
        bets: [(Player, 1_500), (Tie, 500)].into(),
        settlements: Vec::new(),
        result: None,
        voided: false,
        net: 0,
    };
    assert_eq!(t.history("alice", None, 10), vec![open_entry.clone()]);
    assert!(!open_entry.finished());
    // Bob bets, clears (no entry left), bets again: placed at the new first bet.
    ok(&mut t, bets("bob", &r1, &[(Banker, 2_000)], "b1", 1_300));
    ok(&mut t, clear("bob", "b2", 1_400));
    assert!(t.history("bob", None, 10).is_empty());
    ok(&mut t, bets("bob", &r1, &[(Banker, 2_000)], "b3", 1_500));
    finish(&mut t, 2_000, &BANKER_NATURAL);

    let alice = t.history("alice", None, 10);
    assert_eq!(alice.len(), 1);
    let e = &alice[0];
    assert!(e.finished());
    assert_eq!(e.result.unwrap().winner(), Winner::Banker);
    assert_eq!(e.settlements.len(), 2);
    assert!(e.settlements.iter().all(|s| s.outcome == BetOutcome::Lose));
    assert_eq!((e.net, e.placed_at, e.voided), (-2_000, 1_100, false));
    let bob = &t.history("bob", None, 10)[0];
    assert_eq!((bob.placed_at, bob.net), (1_500, 1_900));

    // Round 2: voided: every stake back, net 0, no result.
    let r2 = open(&mut t, 3_000);
    ok(&mut t, bets("alice", &r2, &[(Banker, 1_000)], "a3", 3_100));
    let cmd = void(&t, "table malfunction", 3_500);
    ok(&mut t, cmd);
    let e = &t.history("alice", None, 10)[0];
    assert_eq!(
        *e,
        HistoryEntry {
            round_id: r2,
            placed_at: 3_100,
            bets: [(Banker, 1_000)].into(),
            settlements: Vec::new(),
            result: None,
            voided: true,
            net: 0,
        }
    );
    // Bob sat round 2 out: his history has round 1 only.
    assert_eq!(ids(&t.history("bob", None, 10)), vec![r1.to_string()]);
}

/// Plays `n` rounds in which `player` stakes 1 000 on Banker and the round is voided (no
/// card dealt, so the shoe lasts): cheap rounds for the bound.
fn voided_rounds(t: &mut Table, player: &str, n: u64, from_ms: u64) -> Vec<RoundId> {
    (0..n)
        .map(|i| {
            let now = from_ms + i * 10;
            let round = open(t, now);
            ok(
                t,
                bets(
                    player,
                    &round,
                    &[(Banker, 1_000)],
                    &format!("v{now}"),
                    now + 1,
                ),
            );
            let cmd = void(t, "test", now + 2);
            ok(t, cmd);
            round
        })
        .collect()
}

#[test]
fn paging_with_before() {
    let mut t = live_table_with(&[("alice", 1_000_000)]);
    let rounds = voided_rounds(&mut t, "alice", 5, 1_000);
    let names: Vec<String> = rounds.iter().map(ToString::to_string).collect();
    assert_eq!(
        ids(&t.history("alice", None, 2)),
        vec![names[4].clone(), names[3].clone()]
    );
    assert_eq!(
        ids(&t.history("alice", Some(&rounds[3]), 2)),
        vec![names[2].clone(), names[1].clone()]
    );
    assert_eq!(
        ids(&t.history("alice", Some(&rounds[1]), 10)),
        vec![names[0].clone()]
    );
    assert!(t.history("alice", Some(&rounds[0]), 10).is_empty());
    assert!(t.history("alice", None, 0).is_empty());
    // A round id the player never had pages from where it would sort.
    assert_eq!(
        t.history("alice", Some(&"T01-S0001-H999".into()), 10).len(),
        5
    );
}

#[test]
fn at_most_history_per_player_finished_rounds_per_player() {
    let mut t = live_table_with(&[("alice", 10_000_000), ("bob", 10_000_000)]);
    let extra = 50;
    let rounds = voided_rounds(&mut t, "alice", HISTORY_PER_PLAYER as u64 + extra, 1_000);
    let all = t.history("alice", None, usize::MAX);
    assert_eq!(all.len(), HISTORY_PER_PLAYER);
    assert_eq!(all[0].round_id, *rounds.last().unwrap());
    assert_eq!(all.last().unwrap().round_id, rounds[extra as usize]);
    // The round under way comes on top of the finished ones, and is gone again if
    // cleared.
    let round = open(&mut t, 900_000);
    ok(
        &mut t,
        bets("alice", &round, &[(Banker, 1_000)], "x", 900_001),
    );
    assert_eq!(
        t.history("alice", None, usize::MAX).len(),
        HISTORY_PER_PLAYER + 1
    );
    ok(&mut t, clear("alice", "y", 900_002));
    let all = t.history("alice", None, usize::MAX);
    assert_eq!(all.len(), HISTORY_PER_PLAYER);
    assert_eq!(all[0].round_id, *rounds.last().unwrap());
    // Another player's history is their own.
    assert!(t.history("bob", None, 10).is_empty());
}

#[test]
fn a_replay_of_the_same_commands_gives_the_same_history() {
    let mut t = live_table_with(&[("alice", 1_000_000)]);
    let mut commands = Vec::new();
    for n in 0..6u64 {
        let now = 10_000 * (n + 1);
        let round = open(&mut t, now);
        commands.push(open_betting(now));
        let bet = bets(
            "alice",
            &round,
            &[(Player, 1_000 + 100 * n as i64)],
            &format!("k{n}"),
            now + 1,
        );
        ok(&mut t, bet.clone());
        commands.push(bet);
        let cards = banker_natural(n);
        commands.push(close_betting(now + 2));
        ok(&mut t, close_betting(now + 2));
        for c in &cards {
            ok(&mut t, deal(c, now + 3));
            commands.push(deal(c, now + 3));
        }
        let cmd = confirm(&t, now + 4);
        commands.push(cmd.clone());
        ok(&mut t, cmd);
    }
    let mut again = live_table_with(&[("alice", 1_000_000)]);
    for cmd in commands {
        ok(&mut again, cmd);
    }
    assert_eq!(
        again.history("alice", None, 100),
        t.history("alice", None, 100)
    );
    assert_eq!(t.history("alice", None, 100).len(), 6);
}
