//! Seats: taking and leaving them (every refusal), the seat a bet needs, passing a hand
//! within its window, and the early close of betting on automated seated tables.
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::BetKind::{Banker, Player};
use banco_table::{Command, Event, Pacing, Phase, Refusal, RoundId, Table};
use support::*;

fn seated_table(pacing: Pacing, seats: u8, players: &[(&str, i64)]) -> Table {
    let mut cfg = config(pacing);
    cfg.policy.seats = seats;
    let mut t = Table::new(cfg).unwrap();
    ready(&mut t, players);
    t
}

fn take(player: &str, seat: u8) -> Command {
    Command::TakeSeat {
        player: player.into(),
        seat,
        now_ms: 0,
    }
}

fn leave(player: &str) -> Command {
    Command::LeaveSeat {
        player: player.into(),
        now_ms: 0,
    }
}

fn pass(player: &str, round: &RoundId, now_ms: u64) -> Command {
    Command::PassHand {
        player: player.into(),
        round_id: round.clone(),
        now_ms,
    }
}

fn rebet(player: &str, key: &str, now_ms: u64) -> Command {
    Command::Rebet {
        player: player.into(),
        round_id: None,
        key: key.into(),
        now_ms,
    }
}

fn closed(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::BettingClosed { .. }))
}

/// What a step should do: be accepted with these events, or refused with this refusal and
/// message.
enum Want {
    Events(Vec<Event>),
    Refused(Refusal, &'static str),
}

#[test]
fn taking_and_leaving_seats() {
    use Want::*;
    let mut t = seated_table(Pacing::Live, 3, &[("alice", 100_000)]);
    let seat_taken = |player: &str, seat| Event::SeatTaken {
        player: player.into(),
        seat,
    };
    let steps: Vec<(Command, Want)> = vec![
        (take("alice", 2), Events(vec![seat_taken("alice", 2)])),
        (
            take("bob", 2),
            Refused(
                Refusal::SeatTaken { seat: 2 },
                "seat 2 is taken; choose another seat, or seat 0 for any free one",
            ),
        ),
        (
            take("bob", 4),
            Refused(
                Refusal::NoSuchSeat { seat: 4, seats: 3 },
                "seat 4 does not exist: this table has seats 1 to 3",
            ),
        ),
        (
            take("alice", 1),
            Refused(
                Refusal::AlreadySeated {
                    player: "alice".into(),
                    seat: 2,
                },
                "alice is already seated, at seat 2",
            ),
        ),
        (
            take("", 1),
            Refused(
                Refusal::Missing { field: "player" },
                "player is required and must not be empty",
            ),
        ),
        // Seat 0: the lowest free seat.
        (take("bob", 0), Events(vec![seat_taken("bob", 1)])),
        (take("carol", 0), Events(vec![seat_taken("carol", 3)])),
        (
            take("dave", 0),
            Refused(
                Refusal::TableFull { seats: 3 },
                "the table is full: all 3 seats are taken",
            ),
        ),
        (
            leave("dave"),
            Refused(
                Refusal::NotSeated {
                    player: "dave".into(),
                },
                "dave is not seated at this table",
            ),
        ),
        (
            leave("carol"),
            Events(vec![Event::SeatLeft {
                player: "carol".into(),
                seat: 3,
            }]),
        ),
        (take("dave", 0), Events(vec![seat_taken("dave", 3)])),
    ];
    for (i, (cmd, want)) in steps.into_iter().enumerate() {
        match want {
            Events(events) => assert_eq!(ok(&mut t, cmd), events, "step {i}"),
            Refused(refusal, message) => {
                let got = refused(&mut t, cmd);
                assert_eq!(got, refusal, "step {i}");
                assert_eq!(got.to_string(), message, "step {i}");
            }
        }
    }
    assert_eq!(
        t.seats(),
        vec![
            Some("bob".into()),
            Some("alice".into()),
            Some("dave".into())
        ]
    );
    // Who holds a taken seat is never told.
    assert!(
        !refused(&mut t, take("erin", 2))
            .to_string()
            .contains("alice")
    );
    assert_eq!(t.seat_of("alice"), Some(2));
    assert_eq!(t.seat_of("erin"), None);

    // Not with stakes in the round under way; once it is settled, yes.
    let round = open(&mut t, 1_000);
    ok(
        &mut t,
        bets("alice", &round, &[(Banker, 1_000)], "a1", 1_100),
    );
    let r = refused(&mut t, leave("alice"));
    assert_eq!(
        r,
        Refusal::LeavingWithStakes {
            player: "alice".into(),
            seat: 2,
            round_id: round.clone(),
        }
    );
    assert_eq!(
        r.to_string(),
        "alice cannot leave seat 2: their bets on round T01-S0001-H001 are in play; leave once it is settled"
    );
    // A seated player without stakes leaves mid-round.
    ok(&mut t, leave("bob"));
    finish(&mut t, 2_000, &BANKER_NATURAL);
    ok(&mut t, leave("alice"));
    assert_eq!(t.seats(), vec![None, None, Some("dave".into())]);
}

#[test]
fn a_table_without_seats_refuses_seat_commands_and_takes_bets_from_anyone() {
    let mut t = seated_table(Pacing::Live, 0, &[("alice", 10_000)]);
    let round = open(&mut t, 1_000);
    let cases = [
        (take("alice", 1), "take a seat"),
        (leave("alice"), "leave a seat"),
        (pass("alice", &round, 1_100), "pass a hand"),
    ];
    for (cmd, action) in cases {
        let r = refused(&mut t, cmd);
        assert_eq!(r, Refusal::NoSeats { action });
        assert_eq!(
            r.to_string(),
            format!("cannot {action}: this table has no seats (everyone bets behind)")
        );
    }
    assert!(t.seats().is_empty());
    ok(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "b", 1_200),
    );
}

#[test]
fn a_bet_needs_a_seat_at_a_seated_table() {
    let mut t = seated_table(Pacing::Live, 5, &[("alice", 100_000)]);
    let round = open(&mut t, 1_000);
    let r = refused(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "b1", 1_100),
    );
    assert_eq!(
        r,
        Refusal::SeatNeeded {
            player: "alice".into(),
            seats: 5
        }
    );
    assert_eq!(
        r.to_string(),
        "alice needs a seat to bet at this table: take one of its 5 seats first"
    );
    ok(&mut t, take("alice", 0));
    ok(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "b1", 1_200),
    );
    finish(&mut t, 2_000, &BANKER_NATURAL);
    // Rebet too needs the seat.
    ok(&mut t, leave("alice"));
    open(&mut t, 3_000);
    let r = refused(&mut t, rebet("alice", "r1", 3_100));
    assert!(matches!(r, Refusal::SeatNeeded { .. }), "{r}");
    ok(&mut t, take("alice", 4));
    ok(&mut t, rebet("alice", "r1", 3_200));
}

#[test]
fn passing_a_hand() {
    let mut t = seated_table(
        Pacing::Live,
        3,
        &[("alice", 100_000), ("bob", 100_000), ("carol", 1)],
    );
    ok(&mut t, take("alice", 1));
    ok(&mut t, take("bob", 2));
    let r = refused(&mut t, pass("alice", &"T01-S0001-H001".into(), 500));
    assert_eq!(
        r,
        Refusal::PassNotNow {
            player: "alice".into(),
            phase: Phase::Idle
        }
    );
    assert_eq!(
        r.to_string(),
        "alice cannot pass: betting is not open (the table is idle)"
    );
    let round = open(&mut t, 1_000);

    // The window is judged by the command's server clock: 15 s after betting opened.
    let r = refused(&mut t, pass("alice", &round, 16_000));
    assert_eq!(
        r,
        Refusal::PassTooLate {
            player: "alice".into(),
            round_id: round.clone(),
            window_ms: 15_000,
            opened_at: 1_000,
            now_ms: 16_000,
        }
    );
    assert_eq!(
        r.to_string(),
        "alice cannot pass round T01-S0001-H001: passing is allowed within 15 s of betting \
         opening; betting opened at 1970-01-01T00:00:01.000Z (server clock \
         1970-01-01T00:00:16.000Z)"
    );
    let r = refused(&mut t, pass("alice", &"T01-S0001-H009".into(), 1_100));
    assert!(matches!(r, Refusal::WrongRound { .. }), "{r}");
    let r = refused(&mut t, pass("carol", &round, 1_100));
    assert_eq!(
        r,
        Refusal::NotSeated {
            player: "carol".into()
        }
    );
    assert_eq!(
        ok(&mut t, pass("alice", &round, 15_999)),
        vec![Event::HandPassed {
            player: "alice".into(),
            round_id: round.clone(),
            seat: 1,
        }]
    );
    let r = refused(&mut t, pass("alice", &round, 16_000));
    assert!(matches!(r, Refusal::PassTooLate { .. }), "{r}");
    let r = refused(&mut t, pass("alice", &round, 2_000));
    assert_eq!(
        r,
        Refusal::AlreadyPassed {
            player: "alice".into(),
            round_id: round.clone()
        }
    );
    assert_eq!(r.to_string(), "alice already passed round T01-S0001-H001");
    let r = refused(
        &mut t,
        bets("alice", &round, &[(Player, 1_000)], "a", 2_000),
    );
    assert_eq!(
        r,
        Refusal::BetAfterPass {
            player: "alice".into(),
            round_id: round.clone()
        }
    );
    assert_eq!(
        r.to_string(),
        "alice passed round T01-S0001-H001: no bets on it"
    );

    // Bob bets: no pass, until he clears.
    ok(&mut t, bets("bob", &round, &[(Player, 1_000)], "b", 2_000));
    let r = refused(&mut t, pass("bob", &round, 2_100));
    assert_eq!(
        r,
        Refusal::PassAfterBet {
            player: "bob".into(),
            round_id: round.clone()
        }
    );
    assert_eq!(
        r.to_string(),
        "bob cannot pass round T01-S0001-H001: they have bets on it; clear them first"
    );
    let clear = Command::ClearBets {
        player: "bob".into(),
        round_id: None,
        key: "c".into(),
        now_ms: 2_200,
    };
    ok(&mut t, clear);
    ok(&mut t, pass("bob", &round, 2_300));
    // A live table waits for the croupier even when every seat has decided.
    assert!(matches!(t.phase(), Phase::BettingOpen { .. }));

    // A new round forgets the passes.
    let cmd = void(&t, "test", 3_000);
    ok(&mut t, cmd);
    let next = open(&mut t, 4_000);
    ok(
        &mut t,
        bets("alice", &next, &[(Player, 1_000)], "a2", 4_100),
    );
}

#[test]
fn the_pass_window_is_configurable() {
    let mut cfg = config(Pacing::Live);
    cfg.policy.seats = 5;
    cfg.policy.pass_window_ms = 2_500;
    let mut t = Table::new(cfg).unwrap();
    ready(&mut t, &[]);
    ok(&mut t, take("alice", 0));
    let round = open(&mut t, 10_000);
    let r = refused(&mut t, pass("alice", &round, 12_500));
    assert!(
        r.to_string().contains("within 2.5 s of betting opening"),
        "{r}"
    );
    ok(&mut t, pass("alice", &round, 12_499));
}

#[test]
fn automated_seated_tables_close_betting_once_every_seat_has_decided() {
    for pacing in [Pacing::AutomatedMultiplayer, Pacing::SinglePlayer] {
        let players = [("alice", 100_000), ("bob", 100_000), ("carol", 100_000)];
        let mut t = seated_table(pacing, 5, &players);
        ok(&mut t, take("alice", 1));
        ok(&mut t, take("bob", 3));
        let round = open(&mut t, 1_000);
        let events = ok(
            &mut t,
            bets("alice", &round, &[(Player, 1_000)], "a", 1_100),
        );
        assert!(!closed(&events), "{pacing}: bob has not decided");
        // The last seat to decide closes betting in the same command, as a CloseBetting would.
        let events = ok(&mut t, pass("bob", &round, 1_200));
        let draw_at = (pacing == Pacing::AutomatedMultiplayer).then_some(1_200 + 5_000);
        assert_eq!(
            events,
            vec![
                Event::HandPassed {
                    player: "bob".into(),
                    round_id: round.clone(),
                    seat: 3
                },
                Event::BettingClosed {
                    round_id: round.clone(),
                    closed_at: 1_200,
                    draw_at,
                }
            ],
            "{pacing}"
        );
        assert_eq!(
            t.phase(),
            Phase::BettingClosed {
                closed_at: 1_200,
                draw_at
            }
        );
        assert_eq!(t.due(), Some(banco_rules::Due::PlayerCard));
    }
}

#[test]
fn early_close_needs_a_bet_and_every_seat() {
    let players = [("alice", 100_000), ("bob", 100_000)];
    let mut t = seated_table(Pacing::AutomatedMultiplayer, 5, &players);
    // No seat taken: nothing closes early (nobody can bet anyway).
    let round = open(&mut t, 1_000);
    ok(&mut t, take("alice", 1));
    ok(&mut t, take("bob", 2));
    // Everyone passed, nobody bet: betting stays open until its timer.
    ok(&mut t, pass("alice", &round, 1_100));
    let events = ok(&mut t, pass("bob", &round, 1_200));
    assert!(!closed(&events));
    assert_eq!(t.next_deadline(), Some(21_000));
    let cmd = void(&t, "test", 2_000);
    ok(&mut t, cmd);

    // The last undecided player leaving closes betting.
    let round = open(&mut t, 3_000);
    ok(
        &mut t,
        bets("alice", &round, &[(Banker, 1_000)], "a", 3_100),
    );
    let events = ok(&mut t, leave("bob"));
    assert!(closed(&events), "{events:?}");

    // A bet that completes the seats closes betting, and its retry answers the same.
    let cmd = void(&t, "test", 4_000);
    ok(&mut t, cmd);
    ok(&mut t, take("bob", 2));
    let round = open(&mut t, 5_000);
    ok(&mut t, pass("alice", &round, 5_100));
    let last = bets("bob", &round, &[(Player, 1_000)], "b", 5_200);
    let events = ok(&mut t, last.clone());
    assert!(closed(&events), "{events:?}");
    let retry = t.apply(&last).unwrap();
    assert_eq!(
        retry,
        vec![Event::Replayed {
            player: "bob".into(),
            key: "b".into(),
            // The answer the wallet's debit decided, after the request went out.
            original: events[1..].to_vec()
        }]
    );
}

#[test]
fn the_seat_policy_defaults_and_old_configs_read() {
    let cfg: banco_table::TableConfig = serde_json::from_str(
        r#"{"table_id":"T01","pacing":"live","policy":{"limits":{"min":100,"max":1000}}}"#,
    )
    .unwrap();
    assert_eq!(cfg.policy.seats, 0);
    assert_eq!(cfg.policy.pass_window_ms, 15_000);
    assert_eq!(cfg.policy.chat.max_chars, 200);
    assert_eq!(cfg.policy.chat.burst, 5);
    assert_eq!(cfg.policy.chat.window_ms, 10_000);
    assert!(cfg.policy.chat.blocked_words.is_empty());
}
