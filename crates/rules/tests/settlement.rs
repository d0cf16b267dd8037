//! Every payout of every bet, under each preset paytable, worked out by hand.

#![allow(clippy::unwrap_used)]

use banco_rules::coup::{Coup, CoupResult};
use banco_rules::settle::{
    Bet, BetOutcome, Rounding, SettleError, Settlement, bet_outcome, settle, settle_bet,
};
use banco_rules::{BetKind, Paytable, parse_cards};

use BetKind::*;
use BetOutcome::{Lose, Push, Win};

/// Player natural 9 (9S KD) beats Banker 7 (7H KC). Four cards, no pairs.
const PLAYER_9_V_7: &str = "9S 7H KD KC";
/// Player stands on 6 (4S 2D), Banker stands on 7 (3H 4C). Four cards, no pairs.
const BANKER_7_V_6: &str = "4S 3H 2D 4C";
/// Player 5 (2S 3D) draws TH: 5. Banker 6 (3H 3C) stands on a Player 0. Five cards,
/// Banker Pair (not perfect).
const BANKER_6_V_5: &str = "2S 3H 3D 3C TH";
/// Player 2 (AH AH) draws 6D: 8. Banker 6 (3S 3C) draws on a 6: 2C, 8. A six-card tie;
/// Player Perfect Pair, Banker Pair.
const TIE_8_BOTH_PAIRS: &str = "AH 3S AH 3C 6D 2C";
/// Both stand on 7: a four-card tie, no pairs.
const TIE_7_SMALL: &str = "3S 2H 4D 5C";
/// Player 5 (2S 3S) draws 4H: 9. Banker 0 (5D 5D) draws 8C: 8. Six cards; Banker Perfect Pair.
const PLAYER_9_V_8_BANKER_PERFECT: &str = "2S 5D 3S 5D 4H 8C";

fn hand(cards: &str) -> CoupResult {
    Coup::judge(&parse_cards(cards).unwrap()).unwrap_or_else(|e| panic!("{cards}: {e}"))
}

fn paytables(which: &str) -> Vec<Paytable> {
    match which {
        "*" => Paytable::PRESETS
            .iter()
            .map(|name| Paytable::preset(name).unwrap())
            .collect(),
        name => vec![Paytable::preset(name).unwrap()],
    }
}

/// (paytable or `*` for all three, hand, bet, stake,
///  outcome, ratio applied, winnings, returned, kept fraction of a minor unit (rem, den))
type Row = (
    &'static str,
    &'static str,
    BetKind,
    i64,
    BetOutcome,
    &'static str,
    i64,
    i64,
    (i64, i64),
);

const EXACT: (i64, i64) = (0, 1);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // Player 1:1 everywhere; pushes on a tie.
    ("*", PLAYER_9_V_7, Player, 1, Win, "1:1", 1, 2, EXACT),
    ("*", PLAYER_9_V_7, Player, 12_345, Win, "1:1", 12_345, 24_690, EXACT),
    ("*", PLAYER_9_V_8_BANKER_PERFECT, Player, 101, Win, "1:1", 101, 202, EXACT),
    ("*", BANKER_7_V_6, Player, 500, Lose, "", 0, 0, EXACT),
    ("*", TIE_8_BOTH_PAIRS, Player, 500, Push, "", 0, 500, EXACT),
    ("*", TIE_7_SMALL, Player, 7, Push, "", 0, 7, EXACT),
    // Banker 0.95:1 (standard, tie-9): commission rounds down, the rest is recorded.
    ("standard", BANKER_7_V_6, Banker, 1, Win, "0.95:1", 0, 1, (19, 20)),
    ("standard", BANKER_7_V_6, Banker, 10, Win, "0.95:1", 9, 19, (1, 2)),
    ("standard", BANKER_7_V_6, Banker, 100, Win, "0.95:1", 95, 195, EXACT),
    ("standard", BANKER_7_V_6, Banker, 1005, Win, "0.95:1", 954, 1959, (3, 4)),
    ("standard", BANKER_7_V_6, Banker, 2_000, Win, "0.95:1", 1_900, 3_900, EXACT),
    ("standard", BANKER_6_V_5, Banker, 101, Win, "0.95:1", 95, 196, (19, 20)),
    ("tie-9", BANKER_7_V_6, Banker, 1005, Win, "0.95:1", 954, 1959, (3, 4)),
    ("tie-9", BANKER_6_V_5, Banker, 33, Win, "0.95:1", 31, 64, (7, 20)),
    // No commission: 1:1, but a Banker win on 6 pays 1:2.
    ("no-commission", BANKER_7_V_6, Banker, 101, Win, "1:1", 101, 202, EXACT),
    ("no-commission", BANKER_6_V_5, Banker, 1, Win, "1:2", 0, 1, (1, 2)),
    ("no-commission", BANKER_6_V_5, Banker, 100, Win, "1:2", 50, 150, EXACT),
    ("no-commission", BANKER_6_V_5, Banker, 101, Win, "1:2", 50, 151, (1, 2)),
    ("*", PLAYER_9_V_7, Banker, 100, Lose, "", 0, 0, EXACT),
    ("*", TIE_8_BOTH_PAIRS, Banker, 100, Push, "", 0, 100, EXACT),
    ("*", TIE_7_SMALL, Banker, 7, Push, "", 0, 7, EXACT),
    // Tie 8:1, or 9:1 on tie-9.
    ("standard", TIE_8_BOTH_PAIRS, Tie, 5, Win, "8:1", 40, 45, EXACT),
    ("standard", TIE_7_SMALL, Tie, 1, Win, "8:1", 8, 9, EXACT),
    ("no-commission", TIE_7_SMALL, Tie, 5, Win, "8:1", 40, 45, EXACT),
    ("tie-9", TIE_8_BOTH_PAIRS, Tie, 5, Win, "9:1", 45, 50, EXACT),
    ("tie-9", TIE_7_SMALL, Tie, 3, Win, "9:1", 27, 30, EXACT),
    ("*", PLAYER_9_V_7, Tie, 5, Lose, "", 0, 0, EXACT),
    ("*", BANKER_6_V_5, Tie, 5, Lose, "", 0, 0, EXACT),
    // Pairs 11:1, whatever the main outcome (here on a tie).
    ("*", TIE_8_BOTH_PAIRS, PlayerPair, 10, Win, "11:1", 110, 120, EXACT),
    ("*", PLAYER_9_V_7, PlayerPair, 10, Lose, "", 0, 0, EXACT),
    ("*", BANKER_6_V_5, PlayerPair, 10, Lose, "", 0, 0, EXACT),
    ("*", BANKER_6_V_5, BankerPair, 10, Win, "11:1", 110, 120, EXACT),
    ("*", TIE_8_BOTH_PAIRS, BankerPair, 3, Win, "11:1", 33, 36, EXACT),
    ("*", PLAYER_9_V_8_BANKER_PERFECT, BankerPair, 1, Win, "11:1", 11, 12, EXACT),
    ("*", BANKER_7_V_6, BankerPair, 10, Lose, "", 0, 0, EXACT),
    // Either Pair 5:1, paid once when both hands pair.
    ("*", TIE_8_BOTH_PAIRS, EitherPair, 10, Win, "5:1", 50, 60, EXACT),
    ("*", BANKER_6_V_5, EitherPair, 7, Win, "5:1", 35, 42, EXACT),
    ("*", PLAYER_9_V_7, EitherPair, 10, Lose, "", 0, 0, EXACT),
    // Perfect Pair 25:1 on either hand, paid once; a plain pair loses.
    ("*", TIE_8_BOTH_PAIRS, PerfectPair, 10, Win, "25:1", 250, 260, EXACT),
    ("*", PLAYER_9_V_8_BANKER_PERFECT, PerfectPair, 4, Win, "25:1", 100, 104, EXACT),
    ("*", BANKER_6_V_5, PerfectPair, 10, Lose, "", 0, 0, EXACT),
    // Big 0.54:1 on five or six cards.
    ("*", TIE_8_BOTH_PAIRS, Big, 100, Win, "0.54:1", 54, 154, EXACT),
    ("*", BANKER_6_V_5, Big, 1, Win, "0.54:1", 0, 1, (27, 50)),
    ("*", BANKER_6_V_5, Big, 25, Win, "0.54:1", 13, 38, (1, 2)),
    ("*", PLAYER_9_V_8_BANKER_PERFECT, Big, 7, Win, "0.54:1", 3, 10, (39, 50)),
    ("*", PLAYER_9_V_7, Big, 100, Lose, "", 0, 0, EXACT),
    ("*", TIE_7_SMALL, Big, 100, Lose, "", 0, 0, EXACT),
    // Small 1.5:1 on exactly four cards.
    ("*", PLAYER_9_V_7, Small, 1, Win, "1.5:1", 1, 2, (1, 2)),
    ("*", BANKER_7_V_6, Small, 3, Win, "1.5:1", 4, 7, (1, 2)),
    ("*", PLAYER_9_V_7, Small, 100, Win, "1.5:1", 150, 250, EXACT),
    ("*", TIE_7_SMALL, Small, 1001, Win, "1.5:1", 1501, 2502, (1, 2)),
    ("*", TIE_8_BOTH_PAIRS, Small, 100, Lose, "", 0, 0, EXACT),
    ("*", BANKER_6_V_5, Small, 100, Lose, "", 0, 0, EXACT),
];

#[test]
fn every_payout() {
    for &(table, cards, kind, stake, outcome, ratio, winnings, returned, (rem, den)) in ROWS {
        let result = hand(cards);
        for paytable in paytables(table) {
            let what = format!("{kind} {stake} on {cards} at {}", paytable.name);
            let settled = settle_bet(Bet { kind, stake }, &result, &paytable)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(bet_outcome(kind, &result), outcome, "{what}");
            assert_eq!(
                settled,
                Settlement {
                    kind,
                    stake,
                    outcome,
                    payout: (!ratio.is_empty()).then(|| ratio.parse().unwrap()),
                    winnings,
                    returned,
                    rounding: Rounding {
                        remainder: rem,
                        denominator: den
                    },
                },
                "{what}"
            );
        }
    }
}

#[test]
fn every_kind_has_a_winning_row_under_every_paytable() {
    for name in Paytable::PRESETS {
        for kind in BetKind::ALL {
            assert!(
                ROWS.iter()
                    .any(|r| (r.0 == "*" || r.0 == name) && r.2 == kind && r.4 == Win),
                "{kind} under {name}"
            );
        }
    }
}

/// Winnings plus the kept fraction are exactly stake × ratio, for every stake up to 2 000
/// of every bet on a variety of hands, under every paytable.
#[test]
fn nothing_is_lost_but_the_recorded_rounding() {
    let hands = [
        PLAYER_9_V_7,
        BANKER_7_V_6,
        BANKER_6_V_5,
        TIE_8_BOTH_PAIRS,
        TIE_7_SMALL,
        PLAYER_9_V_8_BANKER_PERFECT,
    ]
    .map(hand);
    for paytable in paytables("*") {
        for result in &hands {
            for kind in BetKind::ALL {
                for stake in 1..=2_000i64 {
                    let s = settle_bet(Bet { kind, stake }, result, &paytable).unwrap();
                    let r = s.rounding;
                    assert!(0 <= r.remainder && r.remainder < r.denominator, "{s:?}");
                    match s.outcome {
                        Win => {
                            let p = s.payout.unwrap();
                            let (num, den) =
                                (i128::from(p.numerator()), i128::from(p.denominator()));
                            // (winnings + rem/rden) × den == stake × num
                            let lhs = (i128::from(s.winnings) * i128::from(r.denominator)
                                + i128::from(r.remainder))
                                * den;
                            let rhs = i128::from(stake) * num * i128::from(r.denominator);
                            assert_eq!(lhs, rhs, "{s:?}");
                            assert_eq!(s.returned, stake + s.winnings, "{s:?}");
                            assert_eq!(s.net(), s.winnings);
                        }
                        Push => {
                            assert_eq!((s.winnings, s.returned, s.net()), (0, stake, 0));
                            assert!(kind.is_main() && s.payout.is_none() && r.is_exact());
                        }
                        Lose => {
                            assert_eq!((s.winnings, s.returned, s.net()), (0, 0, -stake));
                            assert!(s.payout.is_none() && r.is_exact());
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn bad_stakes_are_refused_naming_the_bet() {
    let banker_wins = hand(BANKER_7_V_6);
    let standard = Paytable::standard();
    let no_commission = Paytable::no_commission();
    let max = i64::MAX;
    for (paytable, kind, stake, message) in [
        (
            &standard,
            Banker,
            0,
            "banker bet of 0: a stake must be a positive number of minor units",
        ),
        (
            &standard,
            PlayerPair,
            -500,
            "player_pair bet of -500: a stake must be a positive number of minor units",
        ),
        (
            &standard,
            Tie,
            i64::MIN,
            "tie bet of -9223372036854775808: a stake must be a positive number of minor units",
        ),
        // Refused even though the bet loses: a bet that could not be paid is no bet.
        (
            &standard,
            Player,
            max,
            "player bet of 9223372036854775807: its winnings would exceed the largest amount an account can hold",
        ),
        (
            &standard,
            Player,
            max / 2 + 1,
            "player bet of 4611686018427387904: its winnings would exceed the largest amount an account can hold",
        ),
        (
            &standard,
            PerfectPair,
            max / 26 + 1,
            "perfect_pair bet of 354745078340568301: its winnings would exceed the largest amount an account can hold",
        ),
        (
            &no_commission,
            Banker,
            max / 2 + 1,
            "banker bet of 4611686018427387904: its winnings would exceed the largest amount an account can hold",
        ),
    ] {
        let err = settle_bet(Bet { kind, stake }, &banker_wins, paytable).unwrap_err();
        assert_eq!(err.to_string(), message);
        let expected = if stake <= 0 {
            SettleError::NonPositiveStake { kind, stake }
        } else {
            SettleError::Overflow { kind, stake }
        };
        assert_eq!(err, expected);
    }
    // The largest stakes that still fit.
    let tie = hand(TIE_8_BOTH_PAIRS);
    let s = settle_bet(Bet::new(PerfectPair, max / 26), &tie, &standard).unwrap();
    assert_eq!(s.returned, max / 26 * 26);
    let s = settle_bet(Bet::new(Banker, max / 2), &banker_wins, &standard).unwrap();
    assert_eq!(s.winnings, max / 2 / 20 * 19 + (max / 2 % 20) * 19 / 20);
    assert_eq!(s.returned, max / 2 + s.winnings);
    let s = settle_bet(Bet::new(Player, max / 2), &hand(PLAYER_9_V_7), &standard).unwrap();
    assert_eq!(s.returned, max - 1);
}

#[test]
fn a_round_settles_all_or_nothing() {
    let result = hand(TIE_8_BOTH_PAIRS);
    let paytable = Paytable::standard();
    let bets = [
        Bet::new(Player, 100),
        Bet::new(Tie, 10),
        Bet::new(PlayerPair, 5),
        Bet::new(Small, 5),
    ];
    let settled = settle(&bets, &result, &paytable).unwrap();
    let summary: Vec<_> = settled
        .iter()
        .map(|s| (s.kind, s.outcome, s.returned))
        .collect();
    assert_eq!(
        summary,
        [
            (Player, Push, 100),
            (Tie, Win, 90),
            (PlayerPair, Win, 60),
            (Small, Lose, 0)
        ]
    );

    let mut bad = bets.to_vec();
    bad.insert(2, Bet::new(Banker, 0));
    assert_eq!(
        settle(&bad, &result, &paytable),
        Err(SettleError::NonPositiveStake {
            kind: Banker,
            stake: 0
        })
    );
    assert_eq!(settle(&[], &result, &paytable), Ok(vec![]));
}

#[test]
fn settlements_are_records() {
    let s = settle_bet(
        Bet::new(Banker, 1005),
        &hand(BANKER_7_V_6),
        &Paytable::standard(),
    )
    .unwrap();
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"banker","stake":1005,"outcome":"win","payout":"0.95:1","winnings":954,"returned":1959,"rounding":{"remainder":3,"denominator":4}}"#
    );
    assert_eq!(serde_json::from_str::<Settlement>(&json).unwrap(), s);
    let lost = settle_bet(Bet::new(Tie, 5), &hand(BANKER_7_V_6), &Paytable::standard()).unwrap();
    let json = serde_json::to_string(&lost).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"tie","stake":5,"outcome":"lose","winnings":0,"returned":0,"rounding":{"remainder":0,"denominator":1}}"#
    );
    assert_eq!(serde_json::from_str::<Settlement>(&json).unwrap(), lost);
}

#[test]
fn rounding_reads_as_a_fraction_of_a_minor_unit() {
    for (remainder, denominator, text) in [
        (0, 1, "none"),
        (1, 2, "0.5 of a minor unit"),
        (19, 20, "0.95 of a minor unit"),
        (3, 4, "0.75 of a minor unit"),
        (27, 50, "0.54 of a minor unit"),
        (1, 3, "1/3 of a minor unit"),
    ] {
        let r = Rounding {
            remainder,
            denominator,
        };
        assert_eq!(r.to_string(), text);
    }
}
