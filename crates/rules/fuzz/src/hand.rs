//! Invariants of dealing: a table that takes arbitrary bytes as the croupier's scans and
//! corrections, running them through a [`Shoe`] and a [`Coup`] the way the validator does,
//! and checking after every step that the two agree with each other and with the rules.

use banco_rules::coup::{Coup, Due, JudgeError};
use banco_rules::shoe::{BurnRule, Procedure, Shoe, ShoeConfig, ShoeError, ShoeState};
use banco_rules::{Card, Winner};

/// What one input exercised, so that a seeded corpus can show it reached every path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub cards_dealt: u64,
    pub misreads: u64,
    pub refused_complete: u64,
    pub undos: u64,
    pub hands: u64,
    pub naturals: u64,
    pub six_card_hands: u64,
    pub cut_cards: u64,
    pub shoes_ended: u64,
    pub ran_dry: u64,
}

impl std::ops::AddAssign for Coverage {
    fn add_assign(&mut self, o: Coverage) {
        self.cards_dealt += o.cards_dealt;
        self.misreads += o.misreads;
        self.refused_complete += o.refused_complete;
        self.undos += o.undos;
        self.hands += o.hands;
        self.naturals += o.naturals;
        self.six_card_hands += o.six_card_hands;
        self.cut_cards += o.cut_cards;
        self.shoes_ended += o.shoes_ended;
        self.ran_dry += o.ran_dry;
    }
}

/// The first byte picks the table (decks, burn, procedure, cut card); each further byte
/// is a scan (`< 208`: the card `byte % 52`), an undo (`208..232`), or the croupier
/// pressing "hand finished" whether or not the hand is complete (`232..`).
pub fn check_hand(data: &[u8]) -> Coverage {
    let Some((&head, scans)) = data.split_first() else {
        return Coverage::default();
    };
    let config = ShoeConfig {
        decks: head % 8 + 1,
        cut_card_from_end: 12 + u16::from(head >> 3) % 29, // 12..=40: valid for any shoe
        burn: if head & 0x40 == 0 {
            BurnRule::None
        } else {
            BurnRule::ExposeAndBurn
        },
        procedure: if head & 0x80 == 0 {
            Procedure::CutCard
        } else {
            Procedure::ReshuffleEveryHand
        },
    };
    let mut table = Table::new(config);
    for &byte in scans {
        table.step(byte);
        table.check();
    }
    table.coverage
}

struct Table {
    config: ShoeConfig,
    shoe: Shoe,
    coup: Coup,
    /// Every card seen in this shoe, by index: our own count to hold the shoe to.
    seen: [u16; 52],
    coverage: Coverage,
}

impl Table {
    fn new(config: ShoeConfig) -> Table {
        Table {
            config,
            shoe: new_shoe(config),
            coup: Coup::new(),
            seen: [0; 52],
            coverage: Coverage::default(),
        }
    }

    fn step(&mut self, byte: u8) {
        if self.shoe.state() == ShoeState::Ended {
            assert_eq!(self.coup.cards_dealt(), 0, "a shoe ended mid-hand");
            self.shoe = new_shoe(self.config);
            self.seen = [0; 52];
        }
        match byte {
            0..208 => self.scan(Card::ALL[usize::from(byte % 52)]),
            208..232 => self.undo(),
            _ => self.finish(),
        }
    }

    fn scan(&mut self, card: Card) {
        if self.shoe.state() == ShoeState::AwaitingBurn {
            let burn = self.shoe.burn(card).expect("a fresh shoe burns");
            assert_eq!(burn.exposed, card);
            self.seen[usize::from(card.index())] += 1;
            return;
        }
        let (shoe_before, coup_before) = (self.shoe.clone(), self.coup);
        let due = self.coup.due();
        // The validator's two questions: is it possible in this shoe, and is it due?
        if let Err(err) = self.shoe.check(card) {
            match err {
                ShoeError::Misread(_) => self.coverage.misreads += 1,
                // Only once the last hand is complete may the shoe be empty: the cut card
                // is never so shallow that it runs dry mid-hand.
                ShoeError::Empty { .. } => {
                    assert_eq!(due, Due::Complete, "ran dry mid-hand");
                    self.coverage.ran_dry += 1;
                }
                other => panic!("{card} refused mid-shoe: {other}"),
            }
            assert!(err.to_string().contains(&card.to_string()), "{err}");
            assert_eq!(self.shoe.deal(card), Err(err));
            assert_eq!(self.shoe, shoe_before, "a refused card changed the shoe");
            return;
        }
        match self.coup.deal(card) {
            Ok(next) => {
                assert_ne!(due, Due::Complete, "{card} accepted into a complete hand");
                assert_eq!(next, self.coup.due());
                let state = self.shoe.deal(card).expect("checked just before");
                self.seen[usize::from(card.index())] += 1;
                self.coverage.cards_dealt += 1;
                if state == ShoeState::CutCardOut && shoe_before.state() == ShoeState::InPlay {
                    self.coverage.cut_cards += 1;
                }
            }
            Err(err) => {
                assert_eq!(due, Due::Complete, "{card} refused while {due:?} was due");
                assert_eq!(self.coup, coup_before, "a refused card changed the coup");
                assert!(err.to_string().contains(&card.to_string()), "{err}");
                self.coverage.refused_complete += 1;
            }
        }
    }

    fn undo(&mut self) {
        let before = (self.shoe.clone(), self.coup);
        match self.coup.undo() {
            Some(card) => {
                self.shoe.undo(card).expect("the shoe's hand is the coup's");
                self.seen[usize::from(card.index())] -= 1;
                self.coverage.undos += 1;
                // An undo is the exact inverse of the deal before it.
                let mut redo = (self.shoe.clone(), self.coup);
                redo.0.deal(card).expect("it was dealt a moment ago");
                redo.1.deal(card).expect("it was due a moment ago");
                assert_eq!(redo, before);
            }
            None => {
                assert_eq!(self.coup, Coup::new());
                assert!(self.shoe.hand_cards().is_empty());
            }
        }
    }

    fn finish(&mut self) {
        if !self.coup.is_complete() {
            return; // the table would refuse: a coup is finished only when complete
        }
        let state = self.shoe.state();
        let after = self.shoe.hand_finished().expect("a complete hand finishes");
        let want = match (self.config.procedure, state) {
            (Procedure::ReshuffleEveryHand, _) => ShoeState::Ended,
            (Procedure::CutCard, ShoeState::InPlay) => ShoeState::InPlay,
            (Procedure::CutCard, ShoeState::CutCardOut) => ShoeState::LastHand,
            (Procedure::CutCard, ShoeState::LastHand) => ShoeState::Ended,
            (_, other) => panic!("hand finished from {other:?}"),
        };
        assert_eq!(after, want);
        self.coverage.hands += 1;
        match self.coup.cards_dealt() {
            4 if self.coup.result().is_some_and(|r| r.is_natural()) => self.coverage.naturals += 1,
            6 => self.coverage.six_card_hands += 1,
            _ => {}
        }
        if after == ShoeState::Ended {
            self.coverage.shoes_ended += 1;
        }
        self.coup = Coup::new();
    }

    fn check(&self) {
        let coup = &self.coup;
        let cards = coup.cards();
        assert!(cards.len() <= 6);
        assert!(coup.player_cards().len() <= 3 && coup.banker_cards().len() <= 3);
        assert_eq!(
            coup.player_cards().len() + coup.banker_cards().len(),
            cards.len()
        );
        assert_eq!(Coup::replay(cards), Ok(*coup));
        // The shoe's hand in progress is the coup's cards.
        assert_eq!(self.shoe.hand_cards(), cards);
        match coup.result() {
            Some(result) => {
                assert_eq!(coup.due(), Due::Complete);
                assert!(cards.len() >= 4);
                assert_eq!(result.player_total(), coup.player_total());
                assert_eq!(result.banker_total(), coup.banker_total());
                assert_eq!(
                    result.winner(),
                    Winner::from_totals(result.player_total(), result.banker_total())
                );
                assert_eq!(result.cards_dealt(), cards.len());
                if result.is_natural() {
                    assert_eq!(cards.len(), 4);
                }
                // The auditor's path agrees with the croupier's.
                assert_eq!(Coup::judge(cards), Ok(result));
                let mut more = cards.to_vec();
                more.push(cards[0]);
                assert!(matches!(
                    Coup::judge(&more),
                    Err(JudgeError::TooManyCards { position, .. }) if position == cards.len() + 1
                ));
            }
            None => {
                assert_ne!(coup.due(), Due::Complete);
                assert!(matches!(
                    Coup::judge(cards),
                    Err(JudgeError::TooFewCards { have, due })
                        if have == cards.len() && due == coup.due()
                ));
            }
        }
        // The shoe never lets a card count past its decks, and agrees with our count.
        let decks = u16::from(self.config.decks);
        for card in Card::ALL {
            let seen = self.shoe.seen(card);
            assert!(seen <= decks, "{seen} × {card} from {decks} decks");
            assert_eq!(seen, self.seen[usize::from(card.index())], "{card}");
        }
        assert_eq!(
            self.shoe.cards_left() + self.shoe.cards_seen() + self.shoe.burned_face_down(),
            self.shoe.total_cards()
        );
    }
}

fn new_shoe(config: ShoeConfig) -> Shoe {
    Shoe::new(config).expect("check_hand builds only valid configs")
}
