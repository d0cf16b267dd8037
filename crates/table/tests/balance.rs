//! `BalanceChanged`: its delta, the stakes left in play and the reason, for every kind of
//! money movement. (That the deltas of every command add up to the balance change is
//! checked after every command of `ledger.rs`'s random sessions.)
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::BetKind::{Banker, Player};
use banco_table::{BalanceReason, Command, Event, Pacing, Table};
use support::*;

type Change = (String, i64, i64, i64, i64, BalanceReason);

/// `(player, balance, delta, in_play, pending, reason)` of every BalanceChanged in
/// `events`.
fn changes(events: &[Event]) -> Vec<Change> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::BalanceChanged {
                player,
                balance,
                delta,
                in_play,
                pending,
                reason,
            } => Some((
                player.clone(),
                *balance,
                *delta,
                *in_play,
                *pending,
                *reason,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn every_movement_tells_its_delta_and_reason() {
    use BalanceReason::*;
    let mut t = Table::new(config(Pacing::Live)).unwrap();
    ok(
        &mut t,
        open_shoe(shoe_config(8, banco_rules::shoe::BurnRule::None), 0),
    );
    let clear = |player: &str, key: &str| Command::ClearBets {
        player: player.into(),
        round_id: None,
        key: key.into(),
        now_ms: 1_500,
    };
    let r1 = "T01-S0001-H001".into();
    let r2 = "T01-S0001-H002".into();
    // (command, or a closure over the table for confirm/void/funding; expected changes,
    // the wallet's answers included)
    type Step = (
        Box<dyn Fn(&Table) -> Command>,
        Vec<(&'static str, i64, i64, i64, i64, BalanceReason)>,
    );
    let fixed = |c: Command| -> Box<dyn Fn(&Table) -> Command> { Box::new(move |_| c.clone()) };
    let steps: Vec<Step> = vec![
        (
            Box::new(|t: &Table| funding(t, "alice", 10_000)),
            vec![("alice", 10_000, 10_000, 0, 0, Elsewhere)],
        ),
        (
            Box::new(|t: &Table| funding(t, "bob", 5_000)),
            vec![("bob", 5_000, 5_000, 0, 0, Elsewhere)],
        ),
        (fixed(open_betting(1_000)), vec![]),
        (
            fixed(bets("alice", &r1, &[(Player, 1_000)], "a1", 1_100)),
            vec![("alice", 9_000, -1_000, 1_000, 0, Bet)],
        ),
        (
            fixed(bets("alice", &r1, &[(Banker, 500)], "a2", 1_200)),
            vec![("alice", 8_500, -500, 1_500, 0, Bet)],
        ),
        // Money in and out during a round: the stakes stay in play.
        (
            Box::new(|t: &Table| funding(t, "alice", 2_000)),
            vec![("alice", 10_500, 2_000, 1_500, 0, Elsewhere)],
        ),
        (
            Box::new(|t: &Table| funding(t, "alice", -1_000)),
            vec![("alice", 9_500, -1_000, 1_500, 0, Elsewhere)],
        ),
        (
            fixed(clear("alice", "c1")),
            // Owed at once, credited when the wallet acknowledges.
            vec![
                ("alice", 9_500, 0, 0, 1_500, Clear),
                ("alice", 11_000, 1_500, 0, 0, Clear),
            ],
        ),
        (
            fixed(bets("alice", &r1, &[(Banker, 1_000)], "a3", 1_600)),
            vec![("alice", 10_000, -1_000, 1_000, 0, Bet)],
        ),
        (
            fixed(bets("bob", &r1, &[(Player, 2_000)], "b1", 1_700)),
            vec![("bob", 3_000, -2_000, 2_000, 0, Bet)],
        ),
        (fixed(close_betting(2_000)), vec![]),
        (fixed(deal("2S", 2_100)), vec![]),
        (fixed(deal("4H", 2_100)), vec![]),
        (fixed(deal("3S", 2_100)), vec![]),
        (fixed(deal("5H", 2_100)), vec![]),
        // Banker wins: alice is owed 1 000 + 950, then credited; bob's lost bet is
        // settled with a credit of nothing, which the wallet needs to close it.
        (
            Box::new(|t: &Table| confirm(t, 2_200)),
            vec![
                ("alice", 10_000, 0, 0, 1_950, Settlement),
                ("bob", 3_000, 0, 0, 0, Settlement),
                ("alice", 11_950, 1_950, 0, 0, Settlement),
                ("bob", 3_000, 0, 0, 0, Settlement),
            ],
        ),
        (fixed(open_betting(3_000)), vec![]),
        (
            fixed(bets(
                "bob",
                &r2,
                &[(Player, 1_000), (Banker, 1_000)],
                "b2",
                3_100,
            )),
            vec![("bob", 1_000, -2_000, 2_000, 0, Bet)],
        ),
        (
            Box::new(|t: &Table| void(t, "scanner fault", 3_200)),
            vec![
                ("bob", 1_000, 0, 0, 2_000, VoidRefund),
                ("bob", 3_000, 2_000, 0, 0, VoidRefund),
            ],
        ),
    ];
    for (i, (cmd, want)) in steps.into_iter().enumerate() {
        let cmd = cmd(&t);
        let before_alice = t.balance("alice").unwrap_or(0);
        let before_bob = t.balance("bob").unwrap_or(0);
        let events = ok(&mut t, cmd);
        let want: Vec<_> = want
            .into_iter()
            .map(|(p, b, d, ip, pe, r)| (p.to_owned(), b, d, ip, pe, r))
            .collect();
        assert_eq!(changes(&events), want, "step {i}");
        let delta = |p: &str| {
            changes(&events)
                .iter()
                .filter(|c| c.0 == p)
                .map(|c| c.2)
                .sum::<i64>()
        };
        let after = |p: &str| t.balance(p).unwrap_or(0);
        assert_eq!(delta("alice"), after("alice") - before_alice, "step {i}");
        assert_eq!(delta("bob"), after("bob") - before_bob, "step {i}");
    }
}

#[test]
fn a_balance_change_is_private_and_reasons_read_as_snake_case() {
    let e = Event::BalanceChanged {
        player: "alice".into(),
        balance: 1,
        delta: 1,
        in_play: 0,
        pending: 0,
        reason: BalanceReason::VoidRefund,
    };
    assert_eq!(e.private_to(), Some("alice"));
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["reason"], "void_refund");
    assert_eq!(json["event"], "balance_changed");
}

/// Answers to one player's requests cross on their way back (a bet's debit answered
/// before a payout's credit, the credit's acknowledgement applied first): the table keeps
/// the newest balance the wallet told, by the account's version, and shows it.
#[test]
fn an_older_answer_never_replaces_a_newer_balance() {
    use banco_table::{DebitOutcome, WalletAck};
    let told = |balance, version| Command::WalletChanged {
        player: "alice".into(),
        balance,
        delta: balance,
        reason: "deposit".into(),
        version: Some(version),
        now_ms: 0,
    };
    let debited = |key: &str, balance, version| Command::WalletDebited {
        player: "alice".into(),
        key: key.into(),
        outcome: DebitOutcome::Taken {
            balance,
            version: Some(version),
        },
        now_ms: 1_200,
    };
    let mut t = live_table_with(&[]);
    t.apply(&told(10_000, 1)).unwrap();

    // Round 1: 10.00 on Player (debit: 90.00 left, version 2), and Player wins with a
    // natural 9: the table owes 20.00, not yet acknowledged.
    let r1 = open(&mut t, 1_000);
    t.apply(&bets("alice", &r1, &[(Player, 1_000)], "k1", 1_100))
        .unwrap();
    t.apply(&debited("k1", 9_000, 2)).unwrap();
    t.apply(&close_betting(2_000)).unwrap();
    for c in ["4S", "2H", "5S", "3H"] {
        t.apply(&deal(c, 2_100)).unwrap();
    }
    let confirm = confirm(&t, 2_200);
    let owed = t
        .apply(&confirm)
        .unwrap()
        .into_iter()
        .find_map(|e| match e {
            Event::WalletOwed { owed } => Some(owed),
            _ => None,
        })
        .unwrap();
    assert_eq!(owed.len(), 1);

    // Round 2: 5.00 on Banker. The wallet takes the debit (85.00, version 3), then the
    // payout (105.00, version 4); the table hears of the payout first.
    let r2 = open(&mut t, 3_000);
    t.apply(&bets("alice", &r2, &[(Banker, 500)], "k2", 3_100))
        .unwrap();
    let acked = t
        .apply(&Command::WalletAcked {
            acks: vec![WalletAck {
                number: owed[0].number,
                balance: Some(10_500),
                version: Some(4),
            }],
            now_ms: 3_200,
        })
        .unwrap();
    assert_eq!(changes(&acked)[0].1, 10_500);
    let accepted = t.apply(&debited("k2", 8_500, 3)).unwrap();
    assert!(matches!(accepted[0], Event::BetsAccepted { .. }));
    assert_eq!(
        changes(&accepted),
        vec![("alice".to_owned(), 10_500, -500, 500, 0, BalanceReason::Bet)]
    );
    assert_eq!(t.balance("alice"), Some(10_500));

    // A change elsewhere told late (read before those movements) shows nothing.
    assert_eq!(t.apply(&told(7_000, 2)).unwrap(), vec![]);
    assert_eq!(t.balance("alice"), Some(10_500));
    t.check_books().unwrap();
}

/// A wallet that does not number its answers (an operator's seamless wallet): the last
/// balance told is the one shown.
#[test]
fn without_versions_the_last_balance_told_is_shown() {
    let mut t = live_table_with(&[]);
    let told = |balance| Command::WalletChanged {
        player: "alice".into(),
        balance,
        delta: 0,
        reason: "deposit".into(),
        version: None,
        now_ms: 0,
    };
    t.apply(&told(1_000)).unwrap();
    t.apply(&told(700)).unwrap();
    assert_eq!(t.balance("alice"), Some(700));
}

/// The wallet's answers to several players' requests come back in one command: each is
/// decided as on its own (taken, or refused with its debits cancelled), an answer to a
/// request no longer pending changes nothing, and the others stand; each answer's events
/// start with its own `BetsAccepted` or `BetsRefused`.
#[test]
fn answers_to_many_requests_in_one_command() {
    use banco_table::{DebitAnswer, DebitOutcome};
    use banco_wallet::WalletError;
    let mut t = table(Pacing::Live);
    ok(
        &mut t,
        open_shoe(shoe_config(8, banco_rules::shoe::BurnRule::None), 0),
    );
    for player in ["alice", "bob", "carol"] {
        let funded = funding(&t, player, 10_000);
        t.apply(&funded).unwrap();
    }
    let round = open(&mut t, 1_000);
    for (player, key) in [("alice", "a1"), ("bob", "b1"), ("carol", "c1")] {
        let pending = t
            .apply(&bets(player, &round, &[(Player, 1_000)], key, 1_100))
            .unwrap();
        assert!(matches!(pending[..], [Event::BetsPending { .. }]));
    }
    let answer = |player: &str, key: &str, outcome| DebitAnswer {
        player: player.into(),
        key: key.into(),
        outcome,
    };
    let taken = |balance| DebitOutcome::Taken {
        balance,
        version: None,
    };
    let many = Command::WalletDebitedMany {
        answers: vec![
            answer("alice", "a1", taken(9_000)),
            answer(
                "bob",
                "b1",
                DebitOutcome::Refused {
                    error: WalletError::AccountBlocked,
                },
            ),
            // Never asked: nothing to decide.
            answer("dave", "d1", taken(0)),
            answer("carol", "c1", taken(9_000)),
        ],
        now_ms: 1_200,
    };
    let events = t.apply(&many).unwrap();
    let decided: Vec<(&str, &str, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::BetsAccepted { player, key, .. } => Some((player.as_str(), key.as_str(), true)),
            Event::BetsRefused { player, key, .. } => Some((player.as_str(), key.as_str(), false)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![
            ("alice", "a1", true),
            ("bob", "b1", false),
            ("carol", "c1", true)
        ]
    );
    assert!(matches!(events[0], Event::BetsAccepted { .. }));
    // Bob's debit is owed back as a cancel; the others' stakes are in play.
    let cancels: usize = events
        .iter()
        .map(|e| match e {
            Event::WalletOwed { owed } => owed.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(cancels, 1);
    assert_eq!(t.ledger().in_play(), 2_000);
    assert_eq!(t.balance("alice"), Some(9_000));
    assert!(t.wallet().pending_requests().next().is_none());
    // The same answers again: nothing is pending any more, nothing changes.
    assert_eq!(t.apply(&many).unwrap(), vec![]);
    t.check_books().unwrap();
}
