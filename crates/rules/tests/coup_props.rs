//! Invariants of the coup state machine and of `Coup::judge`, over arbitrary card runs.

#![allow(clippy::unwrap_used)]

use banco_rules::coup::{Coup, CoupResult, DealError, Due, JudgeError};
use banco_rules::{Card, Winner};
use proptest::prelude::*;

fn card() -> impl Strategy<Value = Card> {
    (0u8..52).prop_map(|i| Card::from_index(i).unwrap())
}

/// Up to eight cards: enough for every complete hand and some cards too many.
fn run() -> impl Strategy<Value = Vec<Card>> {
    prop::collection::vec(card(), 0..=8)
}

fn total(cards: &[Card]) -> u8 {
    (cards.iter().map(|c| u32::from(c.value())).sum::<u32>() % 10) as u8
}

/// A complete hand: the first of six random cards that `Coup` accepts (six always suffice).
fn complete_hand() -> impl Strategy<Value = CoupResult> {
    prop::collection::vec(card(), 6).prop_map(|cards| {
        let mut coup = Coup::new();
        for card in cards {
            let _ = coup.deal(card);
        }
        coup.result().unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// `due()` says exactly what `deal` does: a card is taken iff something is due, it
    /// goes to the hand named, and a refused card changes nothing at all.
    #[test]
    fn due_is_what_deal_accepts(cards in run()) {
        let mut coup = Coup::new();
        let mut accepted = Vec::new();
        for card in cards {
            let before = coup;
            let due = coup.due();
            match coup.deal(card) {
                Ok(next) => {
                    prop_assert_ne!(due, Due::Complete);
                    prop_assert_eq!(next, coup.due());
                    let (grew, same, before_grew, before_same) = match due {
                        Due::PlayerCard => (coup.player_cards(), coup.banker_cards(),
                                            before.player_cards(), before.banker_cards()),
                        _ => (coup.banker_cards(), coup.player_cards(),
                              before.banker_cards(), before.player_cards()),
                    };
                    prop_assert_eq!(grew.len(), before_grew.len() + 1);
                    prop_assert_eq!(&grew[..before_grew.len()], before_grew);
                    prop_assert_eq!(grew.last(), Some(&card));
                    prop_assert_eq!(same, before_same);
                    accepted.push(card);
                }
                Err(DealError::HandComplete { card: refused, player_total, banker_total }) => {
                    prop_assert_eq!(due, Due::Complete);
                    prop_assert_eq!(refused, card);
                    prop_assert_eq!((player_total, banker_total),
                                    (coup.player_total(), coup.banker_total()));
                    prop_assert_eq!(coup, before);
                }
            }
            prop_assert!(coup.player_cards().len() <= 3);
            prop_assert!(coup.banker_cards().len() <= 3);
            prop_assert_eq!(coup.cards(), accepted.as_slice());
            prop_assert_eq!(coup.player_total(), total(coup.player_cards()));
            prop_assert_eq!(coup.banker_total(), total(coup.banker_cards()));
            prop_assert_eq!(coup.is_complete(), coup.result().is_some());
        }
    }

    /// Judging a run in one call is dealing it card by card.
    #[test]
    fn judge_is_dealing_one_by_one(cards in run()) {
        let mut coup = Coup::new();
        let mut refused_at = None;
        for (i, &card) in cards.iter().enumerate() {
            if coup.deal(card).is_err() {
                refused_at = Some(i);
                break;
            }
        }
        match (Coup::judge(&cards), refused_at) {
            (Err(JudgeError::TooManyCards { position, card, given, player_total, banker_total }), Some(i)) => {
                prop_assert_eq!(position, i + 1);
                prop_assert_eq!(card, cards[i]);
                prop_assert_eq!(given, cards.len());
                prop_assert_eq!((player_total, banker_total), (coup.player_total(), coup.banker_total()));
            }
            (Err(JudgeError::TooFewCards { have, due }), None) => {
                prop_assert_eq!(have, cards.len());
                prop_assert_eq!(due, coup.due());
                prop_assert_ne!(due, Due::Complete);
            }
            (Ok(result), None) => prop_assert_eq!(Some(result), coup.result()),
            (judged, refused) => prop_assert!(false, "judge {judged:?} but deal refused at {refused:?}"),
        }
    }

    /// Undo takes back the last card and restores the coup exactly as it was.
    #[test]
    fn undo_restores_each_previous_state(cards in run()) {
        let mut coup = Coup::new();
        let mut states = vec![coup];
        for card in cards {
            if coup.deal(card).is_ok() {
                states.push(coup);
            }
        }
        while let Some(state) = states.pop() {
            prop_assert_eq!(coup, state);
            let last = coup.cards().last().copied();
            prop_assert_eq!(coup.undo(), last);
        }
        prop_assert_eq!(coup, Coup::new());
    }

    /// The result agrees with the totals and the cards.
    #[test]
    fn outcome_agrees_with_totals(result in complete_hand()) {
        let (player, banker) = (result.player_cards(), result.banker_cards());
        prop_assert!((2..=3).contains(&player.len()) && (2..=3).contains(&banker.len()));
        prop_assert_eq!(result.player_total(), total(player));
        prop_assert_eq!(result.banker_total(), total(banker));
        let winner = match result.player_total().cmp(&result.banker_total()) {
            std::cmp::Ordering::Greater => Winner::Player,
            std::cmp::Ordering::Less => Winner::Banker,
            std::cmp::Ordering::Equal => Winner::Tie,
        };
        prop_assert_eq!(result.winner(), winner);
        let natural = total(&player[..2]) >= 8 || total(&banker[..2]) >= 8;
        prop_assert_eq!(result.is_natural(), natural);
        if natural {
            prop_assert_eq!(result.cards_dealt(), 4);
        }
        prop_assert_eq!(result.cards_dealt(), player.len() + banker.len());
        prop_assert_eq!(result.player_pair(), player[0].rank() == player[1].rank());
        prop_assert_eq!(result.banker_pair(), banker[0].rank() == banker[1].rank());
        prop_assert_eq!(result.perfect_pair(), player[0] == player[1] || banker[0] == banker[1]);
        prop_assert_eq!(result.either_pair(), result.player_pair() || result.banker_pair());
        let order: Vec<Card> = result.cards().collect();
        prop_assert_eq!(Coup::judge(&order), Ok(result));
        let json = serde_json::to_string(&result).unwrap();
        prop_assert_eq!(serde_json::from_str::<CoupResult>(&json).unwrap(), result);
    }
}
