//! The answers of RulesService, without a socket.
#![allow(clippy::unwrap_used)]

use banco_rules::Paytable;
use banco_validator::rules::{check_card, judge_hand, next_due, odds, settle_bets};
use banco_wire::pb;

fn strings(cards: &[&str]) -> Vec<String> {
    cards.iter().map(|c| (*c).to_owned()).collect()
}

fn seen(decks: u32, cards: &[&str]) -> Option<pb::check_card_request::Shoe> {
    Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
        decks,
        cards: strings(cards),
    }))
}

#[test]
fn the_ninth_ace_of_spades_of_an_eight_deck_shoe_is_a_misread() {
    let answer = check_card(pb::CheckCardRequest {
        shoe: seen(8, &["AS"; 7]),
        hand: strings(&["AS"]),
        card: "AS".into(),
    })
    .unwrap();
    assert!(!answer.accepted);
    let refusal = answer.refusal.clone().unwrap();
    assert_eq!(refusal.code(), pb::RefusalCode::Misread);
    assert!(
        refusal
            .message
            .contains("a ninth A♠ in an 8-deck shoe: misread?"),
        "{}",
        refusal.message
    );
    // Nothing moved: the hand still waits for its Banker card.
    assert_eq!(answer.due(), pb::Due::BankerCard);

    let eighth = check_card(pb::CheckCardRequest {
        shoe: seen(8, &["AS"; 6]),
        hand: strings(&["AS"]),
        card: "AS".into(),
    })
    .unwrap();
    assert!(eighth.accepted, "{:?}", eighth.refusal);
    assert_eq!(eighth.due(), pb::Due::PlayerCard);
}

#[test]
fn a_card_when_none_is_due_is_refused_with_the_hand() {
    let answer = check_card(pb::CheckCardRequest {
        shoe: seen(8, &[]),
        hand: strings(&["QC", "8D", "4C", "TH"]),
        card: "KH".into(),
    })
    .unwrap();
    assert!(!answer.accepted);
    let refusal = answer.refusal.clone().unwrap();
    assert_eq!(refusal.code(), pb::RefusalCode::HandComplete);
    assert!(
        refusal.message.contains("no card is due"),
        "{}",
        refusal.message
    );
    assert_eq!(answer.due(), pb::Due::Complete);
    assert_eq!((answer.player_total, answer.banker_total), (4, 8));
}

#[test]
fn the_card_that_completes_a_hand_returns_its_result() {
    let answer = check_card(pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Unseen(
            (&banco_rules::Composition::full(6).unwrap()).into(),
        )),
        hand: strings(&["QC", "8D", "4C"]),
        card: "TH".into(),
    })
    .unwrap();
    assert!(answer.accepted);
    let result = answer.result.unwrap();
    assert_eq!(result.winner(), pb::Winner::Banker);
    assert_eq!(result.cards_dealt, 4);
}

#[test]
fn malformed_requests_name_the_field() {
    let cases: Vec<(pb::CheckCardRequest, &str)> = vec![
        (
            pb::CheckCardRequest {
                shoe: None,
                hand: vec![],
                card: "AS".into(),
            },
            "shoe",
        ),
        (
            pb::CheckCardRequest {
                shoe: seen(9, &[]),
                hand: vec![],
                card: "AS".into(),
            },
            "seen.decks",
        ),
        (
            pb::CheckCardRequest {
                shoe: seen(8, &["AS", "1H"]),
                hand: vec![],
                card: "AS".into(),
            },
            "seen.cards[1]",
        ),
        (
            pb::CheckCardRequest {
                shoe: seen(1, &["AS"]),
                hand: strings(&["AS"]),
                card: "KD".into(),
            },
            "hand[0]",
        ),
        (
            pb::CheckCardRequest {
                shoe: seen(8, &[]),
                hand: vec![],
                card: "10H".into(),
            },
            "card",
        ),
        (
            pb::CheckCardRequest {
                shoe: seen(8, &[]),
                hand: strings(&["QC", "8D", "4C", "TH", "KH"]),
                card: "AS".into(),
            },
            "hand",
        ),
    ];
    for (request, field) in cases {
        let err = check_card(request).unwrap_err();
        assert_eq!(err.field(), field, "{err}");
    }
}

#[test]
fn next_due_judge_settle_and_odds() {
    let due = next_due(pb::NextDueRequest {
        cards: strings(&["6H", "2H", "5S", "TD"]),
    })
    .unwrap();
    assert_eq!(due.due(), pb::Due::PlayerCard);
    assert_eq!((due.player_total, due.banker_total), (1, 2));

    let judged = judge_hand(pb::JudgeHandRequest {
        cards: strings(&["6H", "2H", "5S", "TD", "8S", "7C"]),
    })
    .unwrap();
    assert_eq!(judged.result.unwrap().winner(), pb::Winner::Tie);
    assert_eq!(
        judge_hand(pb::JudgeHandRequest {
            cards: strings(&["6H", "2H", "5S"])
        })
        .unwrap_err()
        .field(),
        "cards"
    );

    let settled = settle_bets(pb::SettleRequest {
        paytable: Some(Paytable::standard().into()),
        cards: strings(&["QC", "8D", "4C", "TH"]),
        bets: vec![
            pb::Bet {
                kind: pb::BetKind::Banker.into(),
                stake_minor: 1005,
            },
            pb::Bet {
                kind: pb::BetKind::Player.into(),
                stake_minor: 500,
            },
            pb::Bet {
                kind: pb::BetKind::Small.into(),
                stake_minor: 101,
            },
        ],
    })
    .unwrap();
    let returned: Vec<i64> = settled
        .settlements
        .iter()
        .map(|s| s.returned_minor)
        .collect();
    // Banker 1005 × 0.95 = 954.75 → 954 won; Player loses; Small 101 × 1.5 = 151.5 → 151.
    assert_eq!(returned, [1005 + 954, 0, 101 + 151]);
    assert_eq!(settled.total_stake_minor, 1606);
    assert_eq!(settled.total_returned_minor, 1959 + 252);
    let bad_stake = settle_bets(pb::SettleRequest {
        paytable: Some(Paytable::standard().into()),
        cards: strings(&["QC", "8D", "4C", "TH"]),
        bets: vec![
            pb::Bet {
                kind: pb::BetKind::Tie.into(),
                stake_minor: 5,
            },
            pb::Bet {
                kind: pb::BetKind::Tie.into(),
                stake_minor: 0,
            },
        ],
    })
    .unwrap_err();
    assert!(bad_stake.field().starts_with("bets[1]"), "{bad_stake}");

    let o = odds(pb::OddsRequest {
        decks: 8,
        removed: vec![],
        paytable: Some(Paytable::standard().into()),
    })
    .unwrap();
    let twice = odds(pb::OddsRequest {
        decks: 1,
        removed: strings(&["AS", "AS"]),
        paytable: Some(Paytable::standard().into()),
    })
    .unwrap_err();
    assert_eq!(twice.field(), "removed[1]", "{twice}");
    assert_eq!(o.cards_left, 416);
    assert!((o.probabilities.unwrap().banker - 0.458597).abs() < 5e-7);
    assert_eq!(
        odds(pb::OddsRequest {
            decks: 8,
            removed: vec![],
            paytable: None
        })
        .unwrap_err()
        .field(),
        "paytable"
    );
}
