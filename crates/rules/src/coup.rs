//! One coup (hand) being dealt, and the judgement of a finished one.
//!
//! A live croupier scans cards one at a time, so [`Coup`] is a small state machine that
//! always knows which card is due next and refuses one that is not: the console shows the
//! prompt, the validator refuses a card too many. An auditor replaying the archive has
//! whole hands instead, so [`Coup::judge`] checks a complete dealing order in one call,
//! without allocating, fast enough to replay millions of hands.
//!
//! Both paths ask [`crate::draw`] for every draw decision; neither knows the tableau.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::card::{Card, Rank, Suit};
use crate::draw;
use crate::outcome::{Side, Winner};

/// Filler for unused card slots. Always reset to this, so that two coups holding the same
/// cards compare equal whatever was dealt and taken back before.
const BLANK: Card = Card::new(Rank::Ace, Suit::Spades);

/// The first four cards alternate, Player first.
const OPENING: [Due; 4] = [
    Due::PlayerCard,
    Due::BankerCard,
    Due::PlayerCard,
    Due::BankerCard,
];

/// What the next card out of the shoe is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Due {
    PlayerCard,
    BankerCard,
    /// Both hands stand: no card is due.
    Complete,
}

impl Due {
    /// The hand the next card goes to; `None` when the hand is complete.
    pub const fn side(self) -> Option<Side> {
        match self {
            Due::PlayerCard => Some(Side::Player),
            Due::BankerCard => Some(Side::Banker),
            Due::Complete => None,
        }
    }

    /// The prompt a croupier reads on the console.
    pub const fn prompt(self) -> &'static str {
        match self {
            Due::PlayerCard => "PLAYER CARD",
            Due::BankerCard => "BANKER CARD",
            Due::Complete => "COMPLETE",
        }
    }
}

impl fmt::Display for Due {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Due::PlayerCard => "player card",
            Due::BankerCard => "banker card",
            Due::Complete => "complete",
        })
    }
}

/// A card offered when none is due. The coup is left exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DealError {
    #[error(
        "no card is due: the hand is complete (Banker {banker_total} – Player {player_total}); {card} refused"
    )]
    HandComplete {
        card: Card,
        player_total: u8,
        banker_total: u8,
    },
}

/// Why a list of cards is not one legal hand in dealing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    /// `position` is 1-based; `given` is how many cards were offered in all.
    #[error(
        "card {position} of {given} ({card}) is one too many: the hand was complete after {} cards (Banker {banker_total} – Player {player_total})",
        position - 1
    )]
    TooManyCards {
        position: usize,
        card: Card,
        given: usize,
        player_total: u8,
        banker_total: u8,
    },
    #[error("the hand is incomplete: {have} cards given, a {due} is due next")]
    TooFewCards { have: usize, due: Due },
}

/// A coup in progress: the cards dealt so far, in dealing order and by hand.
///
/// Copy and heap-free, so a table actor can snapshot it, and a refused card or an undo is
/// checkable by comparing whole values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coup {
    order: [Card; 6],
    player: [Card; 3],
    banker: [Card; 3],
    len: u8,
    player_len: u8,
}

impl Default for Coup {
    fn default() -> Coup {
        Coup::new()
    }
}

impl Coup {
    /// No cards dealt; a Player card is due.
    pub const fn new() -> Coup {
        Coup {
            order: [BLANK; 6],
            player: [BLANK; 3],
            banker: [BLANK; 3],
            len: 0,
            player_len: 0,
        }
    }

    /// Deals `cards` in order into a new coup, which may be left incomplete (a journal
    /// replay after a restart). A card too many is refused with the error of [`Coup::deal`].
    pub fn replay(cards: &[Card]) -> Result<Coup, DealError> {
        let mut coup = Coup::new();
        for &card in cards {
            coup.deal(card)?;
        }
        Ok(coup)
    }

    /// What the next card is for.
    pub fn due(&self) -> Due {
        let len = usize::from(self.len);
        if len < 4 {
            return OPENING[len];
        }
        let player = self.player_two_card_total();
        let banker = self.banker_two_card_total();
        if draw::is_natural(player) || draw::is_natural(banker) {
            return Due::Complete;
        }
        let player_drew = self.player_len == 3;
        match len {
            4 if draw::player_draws(player) => Due::PlayerCard,
            4 if draw::banker_draws(banker, None) => Due::BankerCard,
            5 if player_drew && draw::banker_draws(banker, Some(self.player[2].value())) => {
                Due::BankerCard
            }
            _ => Due::Complete,
        }
    }

    /// Puts `card` into the hand it is due for and says what is due next. When the hand is
    /// complete the card is refused and nothing changes.
    pub fn deal(&mut self, card: Card) -> Result<Due, DealError> {
        match self.due() {
            Due::PlayerCard => {
                self.player[usize::from(self.player_len)] = card;
                self.player_len += 1;
            }
            Due::BankerCard => {
                self.banker[usize::from(self.banker_len())] = card;
            }
            Due::Complete => {
                return Err(DealError::HandComplete {
                    card,
                    player_total: self.player_total(),
                    banker_total: self.banker_total(),
                });
            }
        }
        self.order[usize::from(self.len)] = card;
        self.len += 1;
        Ok(self.due())
    }

    /// Takes back the last card dealt (a croupier's correction of a misscan); `None` when
    /// no card has been dealt. The coup is then exactly as it was before that card.
    pub fn undo(&mut self) -> Option<Card> {
        let last = usize::from(self.len.checked_sub(1)?);
        let card = self.order[last];
        // Card 5 is Player's only if Player drew; card 6 is always Banker's.
        let players = match last {
            0..=3 => last % 2 == 0,
            4 => self.player_len == 3,
            _ => false,
        };
        if players {
            self.player_len -= 1;
            self.player[usize::from(self.player_len)] = BLANK;
        } else {
            self.banker[usize::from(self.banker_len() - 1)] = BLANK;
        }
        self.order[last] = BLANK;
        self.len -= 1;
        Some(card)
    }

    /// The cards dealt so far, in dealing order.
    pub fn cards(&self) -> &[Card] {
        &self.order[..usize::from(self.len)]
    }

    pub fn cards_dealt(&self) -> usize {
        usize::from(self.len)
    }

    pub fn player_cards(&self) -> &[Card] {
        &self.player[..usize::from(self.player_len)]
    }

    pub fn banker_cards(&self) -> &[Card] {
        &self.banker[..usize::from(self.banker_len())]
    }

    /// Player's total so far (0 before any card).
    pub fn player_total(&self) -> u8 {
        draw::total(self.player_cards().iter().map(|c| c.value()))
    }

    /// Banker's total so far (0 before any card).
    pub fn banker_total(&self) -> u8 {
        draw::total(self.banker_cards().iter().map(|c| c.value()))
    }

    pub fn is_complete(&self) -> bool {
        self.due() == Due::Complete
    }

    /// The judged hand, once complete.
    pub fn result(&self) -> Option<CoupResult> {
        self.is_complete().then(|| CoupResult {
            player: self.player,
            banker: self.banker,
            player_len: self.player_len,
            banker_len: self.banker_len(),
            player_total: self.player_total(),
            banker_total: self.banker_total(),
        })
    }

    /// Judges a whole hand given in dealing order: every card must be due, and the hand
    /// must be complete. No allocation; this is the auditor's replay path.
    ///
    /// It walks the tableau directly instead of looping over [`Coup::deal`]: that loop
    /// measured 18.8 M hands/s against 57 M for this path, and auditors replay whole
    /// archives. Both ask `draw.rs` every question, and `tests/coup_props.rs` checks that
    /// they agree on every hand, errors included.
    pub fn judge(cards: &[Card]) -> Result<CoupResult, JudgeError> {
        let &[p0, b0, p1, b1, ..] = cards else {
            return Err(JudgeError::TooFewCards {
                have: cards.len(),
                due: OPENING[cards.len()],
            });
        };
        let mut player_total = (p0.value() + p1.value()) % 10;
        let mut banker_total = (b0.value() + b1.value()) % 10;
        let mut result = CoupResult {
            player: [p0, p1, BLANK],
            banker: [b0, b1, BLANK],
            player_len: 2,
            banker_len: 2,
            player_total,
            banker_total,
        };
        let mut used = 4;
        if !draw::is_natural(player_total) && !draw::is_natural(banker_total) {
            let mut player_third = None;
            if draw::player_draws(player_total) {
                let Some(&card) = cards.get(used) else {
                    return Err(JudgeError::TooFewCards {
                        have: used,
                        due: Due::PlayerCard,
                    });
                };
                result.player[2] = card;
                result.player_len = 3;
                player_total = (player_total + card.value()) % 10;
                player_third = Some(card.value());
                used += 1;
            }
            if draw::banker_draws(banker_total, player_third) {
                let Some(&card) = cards.get(used) else {
                    return Err(JudgeError::TooFewCards {
                        have: used,
                        due: Due::BankerCard,
                    });
                };
                result.banker[2] = card;
                result.banker_len = 3;
                banker_total = (banker_total + card.value()) % 10;
                used += 1;
            }
        }
        if let Some(&card) = cards.get(used) {
            return Err(JudgeError::TooManyCards {
                position: used + 1,
                card,
                given: cards.len(),
                player_total,
                banker_total,
            });
        }
        result.player_total = player_total;
        result.banker_total = banker_total;
        Ok(result)
    }

    fn banker_len(&self) -> u8 {
        self.len - self.player_len
    }

    fn player_two_card_total(&self) -> u8 {
        (self.player[0].value() + self.player[1].value()) % 10
    }

    fn banker_two_card_total(&self) -> u8 {
        (self.banker[0].value() + self.banker[1].value()) % 10
    }
}

/// A complete, legal hand and everything the bets are settled on.
///
/// Serializes as the record an auditor reads: `player`, `banker` (canonical cards),
/// `player_total`, `banker_total`, `winner`, `natural`, `player_pair`, `banker_pair`,
/// `perfect_pair`, `cards_dealt`. Deserializing re-judges the cards and refuses a record
/// whose derived fields disagree with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoupResult {
    player: [Card; 3],
    banker: [Card; 3],
    player_len: u8,
    banker_len: u8,
    player_total: u8,
    banker_total: u8,
}

impl CoupResult {
    pub fn player_cards(&self) -> &[Card] {
        &self.player[..usize::from(self.player_len)]
    }

    pub fn banker_cards(&self) -> &[Card] {
        &self.banker[..usize::from(self.banker_len)]
    }

    /// The cards in dealing order: P B P B, then Player's third, then Banker's third.
    pub fn cards(&self) -> impl Iterator<Item = Card> + '_ {
        let [p0, p1, _] = self.player;
        let [b0, b1, _] = self.banker;
        [p0, b0, p1, b1]
            .into_iter()
            .chain(self.player_cards().get(2).copied())
            .chain(self.banker_cards().get(2).copied())
    }

    pub const fn player_total(&self) -> u8 {
        self.player_total
    }

    pub const fn banker_total(&self) -> u8 {
        self.banker_total
    }

    pub fn winner(&self) -> Winner {
        Winner::from_totals(self.player_total, self.banker_total)
    }

    /// Either hand's first two cards total 8 or 9.
    pub fn is_natural(&self) -> bool {
        let player = (self.player[0].value() + self.player[1].value()) % 10;
        let banker = (self.banker[0].value() + self.banker[1].value()) % 10;
        draw::is_natural(player) || draw::is_natural(banker)
    }

    /// Player's first two cards share a rank (T, J, Q, K are four different ranks).
    pub fn player_pair(&self) -> bool {
        self.player[0].rank() == self.player[1].rank()
    }

    /// Banker's first two cards share a rank.
    pub fn banker_pair(&self) -> bool {
        self.banker[0].rank() == self.banker[1].rank()
    }

    /// Player's first two cards are the same card (rank and suit), possible in a multi-deck shoe.
    pub fn player_perfect_pair(&self) -> bool {
        self.player[0] == self.player[1]
    }

    pub fn banker_perfect_pair(&self) -> bool {
        self.banker[0] == self.banker[1]
    }

    /// Either hand is a perfect pair (the Perfect Pair bet pays once even if both are).
    pub fn perfect_pair(&self) -> bool {
        self.player_perfect_pair() || self.banker_perfect_pair()
    }

    /// Player Pair or Banker Pair or both (the Either Pair bet pays once).
    pub fn either_pair(&self) -> bool {
        self.player_pair() || self.banker_pair()
    }

    /// 4, 5 or 6: what the Big and Small bets are settled on.
    pub const fn cards_dealt(&self) -> usize {
        (self.player_len + self.banker_len) as usize
    }
}

/// The wire form of [`CoupResult`]; the derived fields are optional on input so that a
/// record holding only the cards can be read, but checked when present.
/// Generic over the card lists so that writing one borrows the cards.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CoupRecord<Cards> {
    player: Cards,
    banker: Cards,
    #[serde(default)]
    player_total: Option<u8>,
    #[serde(default)]
    banker_total: Option<u8>,
    #[serde(default)]
    winner: Option<Winner>,
    #[serde(default)]
    natural: Option<bool>,
    #[serde(default)]
    player_pair: Option<bool>,
    #[serde(default)]
    banker_pair: Option<bool>,
    #[serde(default)]
    perfect_pair: Option<bool>,
    #[serde(default)]
    cards_dealt: Option<usize>,
}

impl Serialize for CoupResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CoupRecord {
            player: self.player_cards(),
            banker: self.banker_cards(),
            player_total: Some(self.player_total),
            banker_total: Some(self.banker_total),
            winner: Some(self.winner()),
            natural: Some(self.is_natural()),
            player_pair: Some(self.player_pair()),
            banker_pair: Some(self.banker_pair()),
            perfect_pair: Some(self.perfect_pair()),
            cards_dealt: Some(self.cards_dealt()),
        }
        .serialize(serializer)
    }
}

/// A derived field given in a record must be what the cards give.
fn agree<T: PartialEq + fmt::Display>(
    name: &str,
    given: Option<T>,
    actual: T,
) -> Result<(), String> {
    match given {
        Some(given) if given != actual => {
            Err(format!("`{name}` is {given} but the cards give {actual}"))
        }
        _ => Ok(()),
    }
}

impl<'de> Deserialize<'de> for CoupResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CoupResult, D::Error> {
        let record = CoupRecord::<Vec<Card>>::deserialize(deserializer)?;
        let (player, banker) = (&record.player, &record.banker);
        if !(2..=3).contains(&player.len()) || !(2..=3).contains(&banker.len()) {
            return Err(D::Error::custom(format!(
                "a hand holds 2 or 3 cards: player has {}, banker has {}",
                player.len(),
                banker.len()
            )));
        }
        let mut order = vec![player[0], banker[0], player[1], banker[1]];
        order.extend(player.get(2));
        order.extend(banker.get(2));
        let result = Coup::judge(&order).map_err(|e| {
            D::Error::custom(format!(
                "player {player:?} banker {banker:?} is not a legal hand: {e}"
            ))
        })?;
        if result.player_cards() != player.as_slice() {
            return Err(D::Error::custom(format!(
                "player {player:?} banker {banker:?} is not a legal hand: the third cards belong to the other hand"
            )));
        }
        let r = &result;
        agree("player_total", record.player_total, r.player_total)
            .and(agree("banker_total", record.banker_total, r.banker_total))
            .and(agree("winner", record.winner, r.winner()))
            .and(agree("natural", record.natural, r.is_natural()))
            .and(agree("player_pair", record.player_pair, r.player_pair()))
            .and(agree("banker_pair", record.banker_pair, r.banker_pair()))
            .and(agree("perfect_pair", record.perfect_pair, r.perfect_pair()))
            .and(agree("cards_dealt", record.cards_dealt, r.cards_dealt()))
            .map_err(D::Error::custom)?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::parse_cards;

    fn cards(text: &str) -> Vec<Card> {
        parse_cards(text).expect("test cards")
    }

    fn names(cards: &[Card]) -> String {
        cards
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// (dealing order, player, banker, player total, banker total, winner, natural, pp, bp, perfect)
    #[allow(clippy::type_complexity)]
    const FAMOUS: &[(&str, &str, &str, u8, u8, Winner, bool, bool, bool, bool)] = &[
        // Banker natural 8 beats Player 4, who may not draw.
        (
            "QC 8D 4C TH",
            "QC 4C",
            "8D TH",
            4,
            8,
            Winner::Banker,
            true,
            false,
            false,
            false,
        ),
        // Player natural 9 over Banker 7.
        (
            "4S 3H 5D 4C",
            "4S 5D",
            "3H 4C",
            9,
            7,
            Winner::Player,
            true,
            false,
            false,
            false,
        ),
        // Both stand on 7: tie with four cards, no natural.
        (
            "3S 2H 4D 5C",
            "3S 4D",
            "2H 5C",
            7,
            7,
            Winner::Tie,
            false,
            false,
            false,
            false,
        ),
        // Player 5 draws an 8; Banker 3 stands on a Player 8: a three-all tie.
        (
            "2S KH 3D 3C 8H",
            "2S 3D 8H",
            "KH 3C",
            3,
            3,
            Winner::Tie,
            false,
            false,
            false,
            false,
        ),
        // Player stands on 6; Banker 4 draws as Player stood.
        (
            "3S 2H 3D 2C 5S",
            "3S 3D",
            "2H 2C 5S",
            6,
            9,
            Winner::Banker,
            false,
            true,
            true,
            false,
        ),
        // Both draw; Banker 6 draws on a Player 7; perfect pair on the Player side.
        (
            "AH 3S AH 3C 7D 2C",
            "AH AH 7D",
            "3S 3C 2C",
            9,
            8,
            Winner::Player,
            false,
            true,
            true,
            true,
        ),
        // T and K are different ranks, so no pair; `10H` is read as `TH`.
        (
            "TS 9H KS 10H",
            "TS KS",
            "9H TH",
            0,
            9,
            Winner::Banker,
            true,
            false,
            false,
            false,
        ),
    ];

    #[test]
    fn famous_hands() {
        for &(dealt, player, banker, pt, bt, winner, natural, pp, bp, perfect) in FAMOUS {
            let dealt = cards(dealt);
            let result = Coup::judge(&dealt).unwrap_or_else(|e| panic!("{dealt:?}: {e}"));
            assert_eq!(
                names(result.player_cards()),
                names(&cards(player)),
                "{dealt:?}"
            );
            assert_eq!(
                names(result.banker_cards()),
                names(&cards(banker)),
                "{dealt:?}"
            );
            assert_eq!(result.player_total(), pt, "{dealt:?}");
            assert_eq!(result.banker_total(), bt, "{dealt:?}");
            assert_eq!(result.winner(), winner, "{dealt:?}");
            assert_eq!(result.is_natural(), natural, "{dealt:?}");
            assert_eq!(result.player_pair(), pp, "{dealt:?}");
            assert_eq!(result.banker_pair(), bp, "{dealt:?}");
            assert_eq!(result.perfect_pair(), perfect, "{dealt:?}");
            assert_eq!(result.cards_dealt(), dealt.len(), "{dealt:?}");
            assert_eq!(result.cards().collect::<Vec<_>>(), dealt);
            assert_eq!(
                Coup::replay(&dealt).ok().and_then(|c| c.result()),
                Some(result)
            );
        }
    }

    #[test]
    fn the_prompt_follows_the_deal() {
        // Player 5 draws, Banker 3 draws on a Player 2.
        let mut coup = Coup::new();
        let mut seen = vec![coup.due()];
        for card in cards("2S KH 3D 3C 2H 4D") {
            seen.push(coup.deal(card).expect("due"));
        }
        use Due::*;
        assert_eq!(
            seen,
            [
                PlayerCard, BankerCard, PlayerCard, BankerCard, PlayerCard, BankerCard, Complete
            ]
        );
        assert_eq!((coup.player_total(), coup.banker_total()), (7, 7));
        assert_eq!(coup.due().prompt(), "COMPLETE");
        assert_eq!(Due::BankerCard.to_string(), "banker card");
        assert_eq!(
            serde_json::to_string(&Due::PlayerCard).expect("json"),
            "\"player_card\""
        );
    }

    #[test]
    fn errors_name_the_card_and_the_state() {
        let mut coup = Coup::replay(&cards("QC 8D 4C TH")).expect("legal");
        let before = coup;
        let err = coup.deal(cards("KH")[0]).expect_err("complete");
        assert_eq!(
            err.to_string(),
            "no card is due: the hand is complete (Banker 8 – Player 4); KH refused"
        );
        assert_eq!(coup, before);

        let err = Coup::judge(&cards("QC 8D 4C TH KH 2S")).expect_err("too many");
        assert_eq!(
            err.to_string(),
            "card 5 of 6 (KH) is one too many: the hand was complete after 4 cards (Banker 8 – Player 4)"
        );
        let err = Coup::judge(&cards("2S KH 3D 3C")).expect_err("too few");
        assert_eq!(
            err.to_string(),
            "the hand is incomplete: 4 cards given, a player card is due next"
        );
        let err = Coup::judge(&cards("2S KH 3D 3C 2H")).expect_err("too few");
        assert_eq!(
            err,
            JudgeError::TooFewCards {
                have: 5,
                due: Due::BankerCard
            }
        );
        let err = Coup::judge(&[]).expect_err("empty");
        assert_eq!(
            err.to_string(),
            "the hand is incomplete: 0 cards given, a player card is due next"
        );
    }

    #[test]
    fn undo_walks_back_to_empty() {
        let dealt = cards("AH 3S AH 3C 7D 2C");
        let mut states = vec![Coup::new()];
        let mut coup = Coup::new();
        for &card in &dealt {
            coup.deal(card).expect("due");
            states.push(coup);
        }
        for &card in dealt.iter().rev() {
            states.pop();
            assert_eq!(coup.undo(), Some(card));
            assert_eq!(Some(&coup), states.last());
        }
        assert_eq!(coup.undo(), None);
        assert_eq!(coup, Coup::new());
    }

    #[test]
    fn result_serializes_as_the_audit_record() {
        let result = Coup::judge(&cards("QC 8D 4C TH")).expect("legal");
        let json = serde_json::to_string(&result).expect("json");
        assert_eq!(
            json,
            r#"{"player":["QC","4C"],"banker":["8D","TH"],"player_total":4,"banker_total":8,"winner":"banker","natural":true,"player_pair":false,"banker_pair":false,"perfect_pair":false,"cards_dealt":4}"#
        );
        let back: CoupResult = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, result);
        let bare: CoupResult =
            serde_json::from_str(r#"{"player":["QC","4C"],"banker":["8D","10H"]}"#).expect("bare");
        assert_eq!(bare, result);
        for bad in [
            r#"{"player":["QC","4C"],"banker":["8D","TH"],"winner":"player"}"#,
            r#"{"player":["QC","4C","2S"],"banker":["8D","TH"]}"#,
            r#"{"player":["2S","3D"],"banker":["KH","3C","8H"]}"#,
            r#"{"player":["QC"],"banker":["8D","TH"]}"#,
        ] {
            assert!(serde_json::from_str::<CoupResult>(bad).is_err(), "{bad}");
        }
    }
}
