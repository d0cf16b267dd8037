//! The bet book and its policies: timing, limits, raise/reject, the wallet's answer, the
//! tie rule, side bets, the progression cap, all-or-nothing requests, clear, rebet, and
//! idempotent retries. (The balance and the self-limit are the wallet's: `banco-wallet`.)
#![allow(clippy::unwrap_used, clippy::field_reassign_with_default)]

mod support;

use banco_rules::BetKind::{self, Banker, Big, Player, PlayerPair, Tie};
use banco_table::book::{PositionRefusal, PositionTotal, Raise};
use banco_table::table::REMEMBERED_REQUESTS;
use banco_table::{
    BetRefusal, Command, Currency, Event, Limits, Pacing, Refusal, RoundId, Table, TablePolicy,
    UnderMinimum,
};
use banco_wallet::WalletError;
use support::*;

const EUR: Currency = Currency::EUR;

fn with_policy(policy: TablePolicy, players: &[(&str, i64)]) -> Table {
    let mut cfg = config(Pacing::Live);
    cfg.policy = policy;
    let mut t = Table::new(cfg).unwrap();
    ready(&mut t, players);
    t
}

fn position_refusals(r: Refusal) -> Vec<PositionRefusal> {
    match r {
        Refusal::Bets { reasons, .. } => reasons.0,
        other => panic!("not a bet refusal: {other}"),
    }
}

fn accepted(events: &[Event]) -> (Vec<(BetKind, i64)>, Vec<Raise>) {
    events
        .iter()
        .find_map(|e| match e {
            Event::BetsAccepted { bets, raised, .. } => Some((bets.clone(), raised.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("not accepted: {events:?}"))
}

#[test]
fn a_bet_at_closes_at_is_late() {
    let mut policy = TablePolicy::default();
    policy.live_betting_ms = Some(20_000);
    let mut t = with_policy(policy, &[("alice", 100_000)]);
    let round = open(&mut t, 1_000);
    let r = refused(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "late", 21_000),
    );
    assert_eq!(
        r,
        Refusal::BettingClosedAt {
            closes_at: 21_000,
            now_ms: 21_000
        }
    );
    assert_eq!(
        r.to_string(),
        "betting closed at 1970-01-01T00:00:21.000Z (server clock 1970-01-01T00:00:21.000Z)"
    );
    ok(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "in-time", 20_999),
    );
    // A late clear is refused too.
    let clear = Command::ClearBets {
        player: "alice".into(),
        round_id: None,
        key: "c".into(),
        now_ms: 21_000,
    };
    assert!(matches!(
        refused(&mut t, clear),
        Refusal::BettingClosedAt { .. }
    ));
    ok(&mut t, close_betting(21_001));
    let r = refused(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "after", 21_002),
    );
    assert!(matches!(r, Refusal::BettingNotOpen { .. }), "{r}");
    // Before any round, and for another round.
    let mut t = live_table_with(&[("alice", 100_000)]);
    let r = refused(
        &mut t,
        bets(
            "alice",
            &"T01-S0001-H001".into(),
            &[(Player, 1_000)],
            "k",
            1,
        ),
    );
    assert!(matches!(r, Refusal::BettingNotOpen { .. }));
    open(&mut t, 1);
    let r = refused(
        &mut t,
        bets(
            "alice",
            &"T01-S0001-H009".into(),
            &[(Player, 1_000)],
            "k",
            2,
        ),
    );
    assert!(matches!(r, Refusal::WrongRound { .. }), "{r}");
    let current = t.round_id().unwrap().clone();
    let r = refused(&mut t, bets("alice", &current, &[], "k", 2));
    assert_eq!(r, Refusal::NoBetsGiven);
}

#[test]
fn under_the_minimum_is_raised_by_default() {
    let mut t = live_table_with(&[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let events = ok(
        &mut t,
        bets("alice", &round, &[(Player, 100), (Big, 700)], "k", 2),
    );
    let (bets_done, raised) = accepted(&events);
    assert_eq!(bets_done, vec![(Player, 500), (Big, 700)]);
    assert_eq!(
        raised,
        vec![Raise {
            kind: Player,
            asked: 100,
            accepted: 500
        }]
    );
    assert_eq!(t.balance("alice"), Some(100_000 - 1_200));
    // Adding chips to a position that already holds the minimum is not raised.
    let events = ok(&mut t, bets("alice", &round, &[(Player, 100)], "k2", 3));
    assert_eq!(accepted(&events), (vec![(Player, 100)], vec![]));
    assert_eq!(t.stakes("alice").unwrap()[&Player], 600);
}

#[test]
fn under_the_minimum_is_refused_in_reject_mode() {
    let mut policy = TablePolicy::default();
    policy.under_minimum = UnderMinimum::Reject;
    let mut t = with_policy(policy, &[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let r = refused(&mut t, bets("alice", &round, &[(Player, 499)], "k", 2));
    assert_eq!(
        position_refusals(r),
        vec![PositionRefusal::UnderMinimum {
            kind: Player,
            total: 499,
            min: 500,
            currency: EUR,
        }]
    );
    ok(&mut t, bets("alice", &round, &[(Player, 500)], "k", 2));
}

#[test]
fn over_the_maximum_and_over_the_balance() {
    let mut t = live_table_with(&[("alice", 100_000), ("poor", 900)]);
    let round = open(&mut t, 1);
    let r = refused(&mut t, bets("alice", &round, &[(Banker, 10_201)], "k", 2));
    assert_eq!(
        position_refusals(r.clone()),
        vec![PositionRefusal::OverMaximum {
            kind: Banker,
            total: 10_201,
            max: 10_200,
            currency: EUR,
        }]
    );
    assert_eq!(
        r.to_string(),
        "bets of alice refused: banker: €102.01 is over the table maximum of €102.00"
    );
    ok(&mut t, bets("alice", &round, &[(Banker, 10_200)], "k", 2));
    // The maximum is on the total of the position.
    let r = refused(&mut t, bets("alice", &round, &[(Banker, 1)], "k2", 3));
    assert!(matches!(
        &position_refusals(r)[..],
        [PositionRefusal::OverMaximum { total: 10_201, .. }]
    ));
    // The balance is the wallet's to decide: the request passes the table's checks, then
    // its debits are refused, all of them, and cancelled.
    let events = ok(
        &mut t,
        bets("poor", &round, &[(Player, 500), (Big, 500)], "p", 3),
    );
    assert_eq!(
        wallet_refusal(&events),
        Some(WalletError::InsufficientFunds {
            needed: 1_000,
            available: 900,
        })
    );
    // The raise counts against the balance.
    let events = ok(
        &mut t,
        bets("poor", &round, &[(Player, 400), (Big, 450)], "p2", 3),
    );
    assert!(
        matches!(
            wallet_refusal(&events),
            Some(WalletError::InsufficientFunds { needed: 1_000, .. })
        ),
        "{events:?}"
    );
    assert_eq!(
        t.stakes("poor"),
        None,
        "nothing of a refused request is taken"
    );
    ok(&mut t, bets("poor", &round, &[(Player, 900)], "p3", 3));
    assert_eq!(t.balance("poor"), Some(0));
}

#[test]
fn tie_only_with_a_main_bet_unless_configured() {
    let mut t = live_table_with(&[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let r = refused(&mut t, bets("alice", &round, &[(Tie, 500)], "k", 2));
    assert_eq!(
        position_refusals(r),
        vec![PositionRefusal::TieWithoutMainBet]
    );
    ok(
        &mut t,
        bets("alice", &round, &[(Tie, 500), (Banker, 500)], "k", 2),
    );
    // Once a main bet is in, a tie may be added alone.
    ok(&mut t, bets("alice", &round, &[(Tie, 500)], "k2", 3));
    // Side bets need no main bet.
    let mut t = live_table_with(&[("bob", 100_000)]);
    let round = open(&mut t, 1);
    ok(
        &mut t,
        bets("bob", &round, &[(PlayerPair, 500), (Big, 500)], "k", 2),
    );
    // Configured off.
    let mut policy = TablePolicy::default();
    policy.tie_needs_main_bet = false;
    let mut t = with_policy(policy, &[("carol", 100_000)]);
    let round = open(&mut t, 1);
    ok(&mut t, bets("carol", &round, &[(Tie, 500)], "k", 2));
}

#[test]
fn a_request_is_all_or_nothing_with_every_reason() {
    let mut policy = TablePolicy::default();
    policy.under_minimum = UnderMinimum::Reject;
    policy.position_limits.insert(
        PlayerPair,
        Limits {
            min: 100,
            max: 2_000,
        },
    );
    let mut t = with_policy(policy, &[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let r = refused(
        &mut t,
        bets(
            "alice",
            &round,
            &[
                (Player, 1_000),
                (PlayerPair, 2_500),
                (Big, 10),
                (Banker, -5),
            ],
            "k",
            2,
        ),
    );
    assert_eq!(
        position_refusals(r),
        vec![
            PositionRefusal::NonPositive {
                kind: Banker,
                amount: -5,
                currency: EUR,
            },
            PositionRefusal::OverMaximum {
                kind: PlayerPair,
                total: 2_500,
                max: 2_000,
                currency: EUR,
            },
            PositionRefusal::UnderMinimum {
                kind: Big,
                total: 10,
                min: 500,
                currency: EUR,
            },
        ]
    );
    assert_eq!(t.stakes("alice"), None);
    // Duplicated positions in one request add up.
    let events = ok(
        &mut t,
        bets(
            "alice",
            &round,
            &[(Player, 300), (Player, 300), (PlayerPair, 100)],
            "k",
            2,
        ),
    );
    assert_eq!(accepted(&events).0, vec![(Player, 600), (PlayerPair, 100)]);
}

/// Plays one settled round (a Banker natural) with `alice` betting `stake` on Player.
fn round_with(t: &mut Table, now: u64, stake: Option<i64>) -> Result<(), Refusal> {
    let round = open(t, now);
    let result = match stake {
        Some(s) => try_apply(
            t,
            &bets("alice", &round, &[(Player, s)], &format!("k{now}"), now + 1),
        )
        .map(|_| ()),
        None => Ok(()),
    };
    finish_nth(t, now + 2, now / 100);
    result
}

fn cap_table() -> Table {
    let mut policy = TablePolicy::default();
    policy.limits = Limits {
        min: 100,
        max: 100_000,
    };
    policy.progression_cap = Some(true);
    with_policy(policy, &[("alice", 1_000_000)])
}

#[test]
fn progression_cap_from_the_fourth_consecutive_round() {
    let mut t = cap_table();
    for (i, stake) in [100, 150, 225].into_iter().enumerate() {
        round_with(&mut t, 100 * i as u64 + 100, Some(stake)).unwrap();
    }
    // 4th consecutive round: at most 225 + floor(225 / 2) = 337.
    let round = open(&mut t, 1_000);
    let r = refused(&mut t, bets("alice", &round, &[(Player, 400)], "a", 1_001));
    assert_eq!(
        position_refusals(r),
        vec![PositionRefusal::ProgressionCap {
            kind: Player,
            total: 400,
            previous: 225,
            cap: 337,
            currency: EUR,
        }]
    );
    let r = refused(&mut t, bets("alice", &round, &[(Player, 338)], "a", 1_001));
    assert!(matches!(
        &position_refusals(r)[..],
        [PositionRefusal::ProgressionCap { cap: 337, .. }]
    ));
    ok(&mut t, bets("alice", &round, &[(Player, 337)], "b", 1_002));
    // Banker is its own chance: no streak there.
    ok(
        &mut t,
        bets("alice", &round, &[(Banker, 5_000)], "c", 1_003),
    );
    finish_nth(&mut t, 1_004, 10);
    // 5th: 337 + 168 = 505.
    let round = open(&mut t, 2_000);
    assert!(try_apply(&mut t, &bets("alice", &round, &[(Player, 506)], "d", 2_001)).is_err());
    ok(&mut t, bets("alice", &round, &[(Player, 505)], "e", 2_002));
    finish_nth(&mut t, 2_003, 11);
    // A round without a Player bet breaks the streak; a voided round does not count.
    round_with(&mut t, 3_000, None).unwrap();
    round_with(&mut t, 4_000, Some(100)).unwrap();
    round_with(&mut t, 5_000, Some(1_000)).unwrap();
    round_with(&mut t, 6_000, Some(10_000)).unwrap();
    let round = open(&mut t, 7_000);
    let cmd = void(&t, "malfunction", 7_001);
    ok(&mut t, cmd);
    let _ = round;
    let round = open(&mut t, 8_000);
    let r = refused(
        &mut t,
        bets("alice", &round, &[(Player, 15_001)], "f", 8_001),
    );
    assert!(matches!(
        &position_refusals(r)[..],
        [PositionRefusal::ProgressionCap {
            previous: 10_000,
            cap: 15_000,
            ..
        }]
    ));
}

#[test]
fn progression_cap_defaults_by_pacing() {
    let policy = TablePolicy::default();
    assert!(!policy.progression_cap_on(Pacing::Live));
    assert!(policy.progression_cap_on(Pacing::AutomatedMultiplayer));
    assert!(policy.progression_cap_on(Pacing::SinglePlayer));
    let mut policy = TablePolicy::default();
    policy.limits = Limits {
        min: 100,
        max: 100_000,
    };
    let mut t = with_policy(policy, &[("alice", 1_000_000)]);
    for (i, stake) in [100, 200, 400, 800, 1_600].into_iter().enumerate() {
        round_with(&mut t, 100 * i as u64 + 100, Some(stake)).unwrap();
    }
}

#[test]
fn a_retried_request_returns_its_original_result() {
    let mut t = live_table_with(&[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let first = ok(&mut t, bets("alice", &round, &[(Player, 100)], "req-1", 2));
    // The answer is the wallet's, after the request went out to it.
    assert!(matches!(&first[0], Event::BetsPending { .. }));
    let first = first[1..].to_vec();
    let after_first = t.clone();
    let again = ok(&mut t, bets("alice", &round, &[(Player, 100)], "req-1", 3));
    assert_eq!(
        again,
        vec![Event::Replayed {
            player: "alice".into(),
            key: "req-1".into(),
            original: first.clone()
        }]
    );
    assert_eq!(t, after_first, "a retry changes nothing");
    assert_eq!(t.balance("alice"), Some(99_500));
    // Even after betting closed, the retry gets its answer.
    ok(&mut t, close_betting(4));
    assert!(matches!(
        &ok(&mut t, bets("alice", &round, &[(Player, 100)], "req-1", 5))[0],
        Event::Replayed { .. }
    ));
    // The same key for a different request is refused.
    let r = refused(&mut t, bets("alice", &round, &[(Player, 200)], "req-1", 5));
    assert!(matches!(r, Refusal::KeyReused { .. }), "{r}");
    // Keys are per player.
    let mut t = live_table_with(&[("alice", 100_000), ("bob", 100_000)]);
    let round = open(&mut t, 1);
    ok(&mut t, bets("alice", &round, &[(Player, 500)], "same", 2));
    let events = ok(&mut t, bets("bob", &round, &[(Player, 500)], "same", 2));
    assert!(matches!(&events[1], Event::BetsAccepted { .. }));
}

#[test]
fn clear_and_rebet() {
    let mut t = live_table_with(&[("alice", 100_000)]);
    let round = open(&mut t, 1);
    let clear = |key: &str, now_ms| Command::ClearBets {
        player: "alice".into(),
        round_id: None,
        key: key.into(),
        now_ms,
    };
    let rebet = |key: &str, now_ms| Command::Rebet {
        player: "alice".into(),
        round_id: None,
        key: key.into(),
        now_ms,
    };
    assert!(matches!(
        refused(&mut t, clear("c0", 2)),
        Refusal::NoBets { .. }
    ));
    assert!(matches!(
        refused(&mut t, rebet("r0", 2)),
        Refusal::NoPreviousBets { .. }
    ));
    ok(
        &mut t,
        bets("alice", &round, &[(Player, 1_000), (Big, 500)], "b1", 2),
    );
    let events = ok(&mut t, clear("c1", 3));
    assert!(
        matches!(&events[0], Event::BetsCleared { refunded, .. } if refunded.values().sum::<i64>() == 1_500)
    );
    assert_eq!(t.balance("alice"), Some(100_000));
    assert!(matches!(
        &ok(&mut t, clear("c1", 4))[0],
        Event::Replayed { .. }
    ));
    ok(
        &mut t,
        bets("alice", &round, &[(Banker, 2_000), (Tie, 500)], "b2", 5),
    );
    ok(&mut t, bets("alice", &round, &[(Banker, 300)], "b3", 6));
    let finished = finish(&mut t, 7, &BANKER_NATURAL);
    // The record says which request staked what, and when; the cleared request is gone.
    let placements: Vec<(BetKind, i64, &str, u64)> = finished
        .iter()
        .find_map(|e| match e {
            Event::RoundFinished(r) => Some(&r.placements["alice"]),
            _ => None,
        })
        .unwrap()
        .iter()
        .map(|p| (p.kind, p.amount, p.key.as_str(), p.at))
        .collect();
    assert_eq!(
        placements,
        [
            (Banker, 2_000, "b2", 5),
            (Tie, 500, "b2", 5),
            (Banker, 300, "b3", 6)
        ]
    );
    let round: RoundId = open(&mut t, 10);
    let events = ok(&mut t, rebet("r1", 11));
    assert_eq!(accepted(&events).0, vec![(Banker, 2_300), (Tie, 500)]);
    assert_eq!(t.stakes("alice").unwrap()[&Banker], 2_300);
    let _ = round;
}

#[test]
fn a_key_forgotten_after_the_remembered_requests_is_a_new_request() {
    let mut t = live_table_with(&[("alice", 1_000_000)]);
    let round = open(&mut t, 1);
    let first = bets("alice", &round, &[(Player, 500)], "k0", 2);
    ok(&mut t, first.clone());
    for i in 1..=REMEMBERED_REQUESTS {
        ok(
            &mut t,
            bets("alice", &round, &[(Player, 100)], &format!("k{i}"), 2),
        );
    }
    // `k0` is forgotten: the same key with the same bets is a new request, debited again
    // (and `ok` checks that the ledger moved the money the book now holds).
    let events = ok(&mut t, first);
    assert!(
        matches!(&events[1], Event::BetsAccepted { .. }),
        "{events:?}"
    );
    let staked = 500 + 100 * REMEMBERED_REQUESTS as i64 + 500;
    assert_eq!(t.stakes("alice").unwrap()[&Player], staked);
    assert_eq!(t.balance("alice"), Some(1_000_000 - staked));
}

#[test]
fn bet_totals_follow_bets_and_clears() {
    let mut t = live_table_with(&[("alice", 100_000), ("bob", 100_000)]);
    let round = open(&mut t, 1);
    ok(
        &mut t,
        bets("alice", &round, &[(Player, 1_000), (Tie, 500)], "a", 2),
    );
    ok(&mut t, bets("bob", &round, &[(Player, 2_000)], "b", 2));
    ok(&mut t, bets("bob", &round, &[(Player, 500)], "b2", 2));
    let total = |amount, bettors| PositionTotal { amount, bettors };
    assert_eq!(
        t.snapshot().bet_totals.into_iter().collect::<Vec<_>>(),
        vec![(Player, total(3_500, 2)), (Tie, total(500, 1))]
    );
    let events = ok(
        &mut t,
        Command::ClearBets {
            player: "alice".into(),
            round_id: None,
            key: "c".into(),
            now_ms: 3,
        },
    );
    let expected = vec![(Player, total(2_500, 1))];
    assert_eq!(
        t.snapshot().bet_totals.into_iter().collect::<Vec<_>>(),
        expected
    );
    assert!(matches!(
        &events[2],
        Event::BetTotals { totals, .. } if totals.clone().into_iter().collect::<Vec<_>>() == expected
    ));
}

/// Why the wallet refused the bet request answered in `events`, if it did.
fn wallet_refusal(events: &[Event]) -> Option<WalletError> {
    events.iter().find_map(|e| match e {
        Event::BetsRefused {
            why: BetRefusal::Wallet { error },
            ..
        } => Some(error.clone()),
        _ => None,
    })
}
