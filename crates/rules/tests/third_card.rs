//! The whole third-card tableau, transcribed here from docs/src/rules/drawing.md independently of
//! draw.rs, and checked both against draw.rs and by dealing real cards through `Coup`.
//!
//! Every Player two-card total (0–9) × Banker two-card total (0–9) × Player third card
//! (none, or a value 0–9 when Player draws) is dealt, each total realised by different
//! concrete cards so that ranks and suits vary.

#![allow(clippy::unwrap_used)]

use banco_rules::coup::{Coup, Due, JudgeError};
use banco_rules::draw;
use banco_rules::{Card, Rank, Suit};

/// Player's two-card total → draws? (index = total). 8 and 9 are naturals: never draw.
const PLAYER_DRAWS: [bool; 10] = [
    true, true, true, true, true, true, // 0–5 draw
    false, false, // 6–7 stand
    false, false, // 8–9 natural
];

/// Banker's two-card total → draws? when Player stood on two cards. Same rule as Player.
const BANKER_DRAWS_PLAYER_STOOD: [bool; 10] = [
    true, true, true, true, true, true, false, false, false, false,
];

/// Banker's two-card total (row) × value of Player's third card (column 0–9): `D` draws,
/// `S` stands. Rows 8 and 9 are naturals and never reach the tableau (`-`).
const BANKER_TABLEAU: [&str; 10] = [
    //         t = 0123456789
    /* 0 */ "DDDDDDDDDD",
    /* 1 */ "DDDDDDDDDD",
    /* 2 */ "DDDDDDDDDD",
    /* 3 */ "DDDDDDDDSD",
    /* 4 */ "SSDDDDDDSS",
    /* 5 */ "SSSSDDDDSS",
    /* 6 */ "SSSSSSDDSS",
    /* 7 */ "SSSSSSSSSS",
    /* 8 */ "----------",
    /* 9 */ "----------",
];

fn tableau(banker_total: u8, third: u8) -> bool {
    match BANKER_TABLEAU[usize::from(banker_total)].as_bytes()[usize::from(third)] {
        b'D' => true,
        b'S' => false,
        other => panic!(
            "tableau row {banker_total} consulted at t={third}: `{}`",
            other as char
        ),
    }
}

fn is_natural(total: u8) -> bool {
    total == 8 || total == 9
}

/// A card of `value`; `k` picks among the ranks of that value (the four of 0) and the suit.
fn card_of(value: u8, k: usize) -> Card {
    let ranks: &[Rank] = match value {
        0 => &[Rank::Ten, Rank::Jack, Rank::Queen, Rank::King],
        v => &Rank::ALL[usize::from(v) - 1..usize::from(v)],
    };
    Card::new(ranks[k % ranks.len()], Suit::ALL[(k / 3) % 4])
}

/// Two cards totalling `total`; `k` varies the split (0+7, 1+6, …) and the ranks.
fn two_cards(total: u8, k: usize) -> [Card; 2] {
    let first = (k % 10) as u8;
    let second = (total + 10 - first) % 10;
    [card_of(first, k), card_of(second, k + 1)]
}

/// One tableau case and what must happen.
#[derive(Debug)]
struct Case {
    player_total: u8,
    banker_total: u8,
    player_third: Option<u8>,
    player_draws: bool,
    banker_draws: bool,
}

/// Every case, with expectations from the tables above only.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for player_total in 0..10u8 {
        for banker_total in 0..10u8 {
            let natural = is_natural(player_total) || is_natural(banker_total);
            if natural || !PLAYER_DRAWS[usize::from(player_total)] {
                let banker_draws = !natural && BANKER_DRAWS_PLAYER_STOOD[usize::from(banker_total)];
                out.push(Case {
                    player_total,
                    banker_total,
                    player_third: None,
                    player_draws: false,
                    banker_draws,
                });
            } else {
                for t in 0..10u8 {
                    out.push(Case {
                        player_total,
                        banker_total,
                        player_third: Some(t),
                        player_draws: true,
                        banker_draws: tableau(banker_total, t),
                    });
                }
            }
        }
    }
    out
}

#[test]
fn the_case_list_is_the_whole_tableau() {
    let cases = cases();
    // Player 0–5 against Banker 0–7 draw a third card of ten values; the other
    // 100 − 6×8 = 52 total pairs have no Player third card.
    assert_eq!(cases.len(), 6 * 8 * 10 + 52);
    // Some famous cells, read off docs/src/rules/drawing.md by eye.
    assert!(tableau(3, 9) && !tableau(3, 8));
    assert!(tableau(4, 2) && !tableau(4, 1) && !tableau(4, 8));
    assert!(tableau(5, 4) && !tableau(5, 3));
    assert!(tableau(6, 6) && tableau(6, 7) && !tableau(6, 5));
    assert!((0..10).all(|t| !tableau(7, t) && tableau(0, t)));
}

#[test]
fn draw_rs_agrees_with_the_transcribed_tableau() {
    for total in 0..10u8 {
        assert_eq!(
            draw::is_natural(total),
            is_natural(total),
            "natural {total}"
        );
    }
    for total in 0..8u8 {
        assert_eq!(
            draw::player_draws(total),
            PLAYER_DRAWS[usize::from(total)],
            "player on {total}"
        );
        assert_eq!(
            draw::banker_draws(total, None),
            BANKER_DRAWS_PLAYER_STOOD[usize::from(total)],
            "banker on {total}, player stood"
        );
        for t in 0..10u8 {
            assert_eq!(
                draw::banker_draws(total, Some(t)),
                tableau(total, t),
                "banker on {total}, player third {t}"
            );
        }
    }
}

#[test]
fn dealing_real_cards_follows_the_tableau() {
    for (k, case) in cases().into_iter().enumerate() {
        let [p0, p1] = two_cards(case.player_total, k);
        let [b0, b1] = two_cards(case.banker_total, k + 5);
        let mut dealt = vec![p0, b0, p1, b1];
        let mut coup = Coup::new();
        let mut due = Due::PlayerCard;
        for &card in &dealt {
            due = coup.deal(card).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
        assert_eq!(
            (coup.player_total(), coup.banker_total()),
            (case.player_total, case.banker_total),
            "{case:?} realised by {dealt:?}"
        );

        if case.player_draws {
            assert_eq!(due, Due::PlayerCard, "{case:?} {dealt:?}");
            let third = card_of(case.player_third.unwrap(), k + 7);
            due = coup.deal(third).unwrap();
            dealt.push(third);
        }
        if case.banker_draws {
            assert_eq!(due, Due::BankerCard, "{case:?} {dealt:?}");
            let third = card_of((k % 10) as u8, k + 11);
            due = coup.deal(third).unwrap();
            dealt.push(third);
        }
        assert_eq!(due, Due::Complete, "{case:?} {dealt:?}");
        assert_eq!(
            coup.player_cards().len(),
            2 + usize::from(case.player_draws)
        );
        assert_eq!(
            coup.banker_cards().len(),
            2 + usize::from(case.banker_draws)
        );

        // A card after the last is refused, and judging the cards agrees with the deal.
        let extra = card_of(3, k);
        assert!(coup.deal(extra).is_err(), "{case:?} {dealt:?}");
        let result = coup.result().unwrap();
        assert_eq!(Coup::judge(&dealt), Ok(result), "{case:?}");
        assert_eq!(result.cards().collect::<Vec<_>>(), dealt);

        let mut one_more = dealt.clone();
        one_more.push(extra);
        assert!(
            matches!(
                Coup::judge(&one_more),
                Err(JudgeError::TooManyCards { position, .. }) if position == dealt.len() + 1
            ),
            "{case:?}"
        );
        let last_due = if case.banker_draws {
            Due::BankerCard
        } else if case.player_draws {
            Due::PlayerCard
        } else {
            Due::BankerCard // the fourth card
        };
        assert_eq!(
            Coup::judge(&dealt[..dealt.len() - 1]),
            Err(JudgeError::TooFewCards {
                have: dealt.len() - 1,
                due: last_due
            }),
            "{case:?}"
        );
    }
}

#[test]
fn a_natural_overrides_everything() {
    // (player cards, banker cards): Player on 0 would draw, Banker on 0 would draw,
    // but a natural on the other side stops both.
    for (player, banker) in [
        (["KS", "TH"], ["4D", "4C"]),  // 0 v natural 8
        (["KS", "QH"], ["9D", "KC"]),  // 0 v natural 9
        (["5S", "3H"], ["JD", "QC"]),  // natural 8 v 0
        (["4S", "5H"], ["AD", "2C"]),  // natural 9 v 3
        (["6S", "2H"], ["7D", "2C"]),  // natural 8 v natural 9
        (["9S", "KH"], ["9D", "TC"]),  // natural 9 v natural 9
        (["AS", "4H"], ["3D", "5C"]),  // 5 v natural 8
        (["3S", "3H"], ["AD", "7C"]),  // 6 v natural 8
        (["2S", "2H"], ["10D", "9C"]), // 4 v natural 9
    ] {
        let [p0, p1] = player.map(|c| Card::parse(c).unwrap());
        let [b0, b1] = banker.map(|c| Card::parse(c).unwrap());
        let mut coup = Coup::new();
        for card in [p0, b0, p1] {
            coup.deal(card).unwrap();
        }
        assert_eq!(coup.deal(b1), Ok(Due::Complete), "{player:?} {banker:?}");
        let result = Coup::judge(&[p0, b0, p1, b1]).unwrap();
        assert!(result.is_natural());
        assert_eq!(result.cards_dealt(), 4);
    }
}
