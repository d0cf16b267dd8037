//! The rules authority the actor asks about every card and every settlement.
//!
//! The table checks cards and settles bets itself too; the authority (the validator
//! service, or [`LocalRules`] in-process) is the certified second opinion: a card it
//! refuses is not dealt, and a settlement that differs from its answer is not paid.
//! Whoever cannot answer gets the card refused, never accepted unchecked.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use banco_rules::{Bet, Card, Composition, Coup, NotInShoe, Paytable, Settlement};

/// A boxed `Send` future, so that [`Rules`] is object safe (`Arc<dyn Rules>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why the authority refused a card (mirrors the wire's `RefusalCode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// Every copy of the card has been seen already: a misread.
    Misread,
    /// No card is due: the hand is complete.
    HandComplete,
    BurnPending,
    NoShoe,
    WrongPhase,
    /// Any other reason the authority gave.
    Other,
}

impl fmt::Display for RefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RefusalKind::Misread => "misread",
            RefusalKind::HandComplete => "hand complete",
            RefusalKind::BurnPending => "burn pending",
            RefusalKind::NoShoe => "no shoe",
            RefusalKind::WrongPhase => "wrong phase",
            RefusalKind::Other => "refused",
        })
    }
}

/// The authority's answer about one card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardCheck {
    Accepted,
    Refused { code: RefusalKind, message: String },
}

/// The authority could not give an answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// Not reachable in time (connection refused, timeout, transport error).
    #[error("validator unreachable: {0}")]
    Unreachable(String),
    /// It answered, but refused the question or gave an answer that cannot be read.
    #[error("validator answer unusable: {0}")]
    BadAnswer(String),
}

/// The rules authority.
pub trait Rules: Send + Sync + 'static {
    /// Is `card` possible in this shoe and due now? `shoe` is what the shoe could still
    /// hold before the hand under way (`hand` are that hand's cards so far, in order);
    /// `decks` is the shoe's size.
    fn check_card(
        &self,
        shoe: &Composition,
        decks: u8,
        hand: &[Card],
        card: Card,
    ) -> BoxFuture<'_, Result<CardCheck, RulesError>>;

    /// Judges the complete hand `cards` and settles `bets` (one settlement per bet, in
    /// order).
    fn settle(
        &self,
        paytable: &Paytable,
        cards: &[Card],
        bets: &[Bet],
    ) -> BoxFuture<'_, Result<Vec<Settlement>, RulesError>>;
}

/// The authority in-process: `banco_rules` called directly (tests, and `banco up`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalRules;

impl LocalRules {
    /// The answer of [`Rules::check_card`], synchronously.
    pub fn check(
        shoe: &Composition,
        decks: u8,
        hand: &[Card],
        card: Card,
    ) -> Result<CardCheck, RulesError> {
        let mut unseen = shoe.clone();
        for &seen in hand {
            unseen.remove(seen, decks).map_err(|e| {
                RulesError::BadAnswer(format!("hand card {seen} is not in the shoe: {e}"))
            })?;
        }
        let mut coup = Coup::replay(hand)
            .map_err(|e| RulesError::BadAnswer(format!("hand {hand:?} is not legal: {e}")))?;
        // A complete hand is the more basic refusal: no card at all may be dealt to it.
        if let Err(err) = coup.deal(card) {
            return Ok(CardCheck::Refused {
                code: RefusalKind::HandComplete,
                message: err.to_string(),
            });
        }
        if unseen.count(card) == 0 {
            let err = NotInShoe {
                card,
                decks_worth: u16::from(decks),
            };
            return Ok(CardCheck::Refused {
                code: RefusalKind::Misread,
                message: err.to_string(),
            });
        }
        Ok(CardCheck::Accepted)
    }

    /// The answer of [`Rules::settle`], synchronously.
    pub fn settle_now(
        paytable: &Paytable,
        cards: &[Card],
        bets: &[Bet],
    ) -> Result<Vec<Settlement>, RulesError> {
        let result = Coup::judge(cards)
            .map_err(|e| RulesError::BadAnswer(format!("cannot judge {cards:?}: {e}")))?;
        banco_rules::settle(bets, &result, paytable)
            .map_err(|e| RulesError::BadAnswer(format!("cannot settle: {e}")))
    }
}

impl Rules for LocalRules {
    fn check_card(
        &self,
        shoe: &Composition,
        decks: u8,
        hand: &[Card],
        card: Card,
    ) -> BoxFuture<'_, Result<CardCheck, RulesError>> {
        let answer = LocalRules::check(shoe, decks, hand, card);
        Box::pin(async move { answer })
    }

    fn settle(
        &self,
        paytable: &Paytable,
        cards: &[Card],
        bets: &[Bet],
    ) -> BoxFuture<'_, Result<Vec<Settlement>, RulesError>> {
        let answer = LocalRules::settle_now(paytable, cards, bets);
        Box::pin(async move { answer })
    }
}
