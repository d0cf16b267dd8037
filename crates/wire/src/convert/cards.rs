//! Cards as canonical strings, and judged hands.

use banco_rules::{Card, Coup, CoupResult, Due, JudgeError};

use super::{ConversionError, at, enums};
use crate::pb;

/// The canonical text of a card, `TH`.
pub fn card_to_pb(card: Card) -> String {
    card.to_string()
}

/// Canonical texts of cards, in order.
pub fn cards_to_pb(cards: impl IntoIterator<Item = Card>) -> Vec<String> {
    cards.into_iter().map(card_to_pb).collect()
}

/// Reads a card strictly: exactly its canonical two characters (`AS`, `TH`, `KD`). The
/// friendlier forms people type (`10H`, `th`, `K♦`, a shoe-reader index, spaces) are
/// refused on the wire, so that every record spells a card one way.
pub fn card(field: &str, text: &str) -> Result<Card, ConversionError> {
    if text.is_empty() {
        return Err(ConversionError::missing(field));
    }
    let invalid = |why: String| ConversionError::invalid(field, format!("{text:?}"), why);
    let parsed = Card::parse(text).map_err(|err| invalid(err.to_string()))?;
    let canonical = parsed.to_string();
    if canonical != text {
        return Err(invalid(format!(
            "cards are sent in canonical notation: write `{canonical}`"
        )));
    }
    Ok(parsed)
}

/// Reads a repeated card field; the error names the element (`cards[3]`).
pub fn cards(field: &str, texts: &[String]) -> Result<Vec<Card>, ConversionError> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| card(&at(field, i), text))
        .collect()
}

impl From<CoupResult> for pb::HandResult {
    fn from(result: CoupResult) -> pb::HandResult {
        pb::HandResult::from(&result)
    }
}

impl From<&CoupResult> for pb::HandResult {
    fn from(result: &CoupResult) -> pb::HandResult {
        pb::HandResult {
            player_cards: cards_to_pb(result.player_cards().iter().copied()),
            banker_cards: cards_to_pb(result.banker_cards().iter().copied()),
            player_total: u32::from(result.player_total()),
            banker_total: u32::from(result.banker_total()),
            winner: pb::Winner::from(result.winner()).into(),
            natural: result.is_natural(),
            player_pair: result.player_pair(),
            banker_pair: result.banker_pair(),
            player_perfect_pair: result.player_perfect_pair(),
            banker_perfect_pair: result.banker_perfect_pair(),
            cards_dealt: u32::try_from(result.cards_dealt()).unwrap_or(u32::MAX),
        }
    }
}

/// Re-judges the cards with [`Coup::judge`] and refuses the message unless every derived
/// field (totals, winner, natural, pairs, cards dealt) agrees with them: a hand result is
/// what bets are settled on, so it is never taken on trust.
impl TryFrom<pb::HandResult> for CoupResult {
    type Error = ConversionError;

    fn try_from(hand: pb::HandResult) -> Result<CoupResult, ConversionError> {
        let player = cards("player_cards", &hand.player_cards)?;
        let banker = cards("banker_cards", &hand.banker_cards)?;
        for (field, got) in [("player_cards", &player), ("banker_cards", &banker)] {
            if !(2..=3).contains(&got.len()) {
                return Err(ConversionError::invalid(
                    field,
                    format!("{} cards", got.len()),
                    "a hand holds 2 or 3 cards",
                ));
            }
        }
        // Dealing order: P B P B, then Player's third, then Banker's third.
        let order: Vec<Card> = [player[0], banker[0], player[1], banker[1]]
            .into_iter()
            .chain(player.get(2).copied())
            .chain(banker.get(2).copied())
            .collect();
        let dealt = || format!("{:?}", cards_to_pb(order.iter().copied()).join(" "));
        let result = Coup::judge(&order).map_err(|err| {
            // Name the hand that is short of a card, or that holds the card too many: the
            // fifth card is Player's if Player has three, the sixth always Banker's.
            let players = match err {
                JudgeError::TooFewCards { due, .. } => due == Due::PlayerCard,
                JudgeError::TooManyCards { position, .. } => position == 5 && player.len() == 3,
            };
            let field = if players {
                "player_cards"
            } else {
                "banker_cards"
            };
            ConversionError::invalid(
                field,
                dealt(),
                format!("not a legal hand in dealing order ({err})"),
            )
        })?;
        // Judged in this order, a third card may still land in the other hand than the one
        // that holds it: name the hand that holds it.
        if result.player_cards() != player.as_slice() || result.banker_cards() != banker.as_slice()
        {
            return Err(ConversionError::invalid(
                if player.len() == 3 {
                    "player_cards"
                } else {
                    "banker_cards"
                },
                dealt(),
                "the third-card rule gives a third card to the other hand",
            ));
        }
        let expected = pb::HandResult::from(&result);
        agree("player_total", hand.player_total, expected.player_total)?;
        agree("banker_total", hand.banker_total, expected.banker_total)?;
        agree(
            "winner",
            enums::winner("winner", hand.winner)?,
            result.winner(),
        )?;
        agree("natural", hand.natural, expected.natural)?;
        agree("player_pair", hand.player_pair, expected.player_pair)?;
        agree("banker_pair", hand.banker_pair, expected.banker_pair)?;
        agree(
            "player_perfect_pair",
            hand.player_perfect_pair,
            expected.player_perfect_pair,
        )?;
        agree(
            "banker_perfect_pair",
            hand.banker_perfect_pair,
            expected.banker_perfect_pair,
        )?;
        agree("cards_dealt", hand.cards_dealt, expected.cards_dealt)?;
        Ok(result)
    }
}

/// A derived field of a received hand result must be what the cards give.
fn agree<T: PartialEq + std::fmt::Display>(
    field: &str,
    got: T,
    want: T,
) -> Result<(), ConversionError> {
    if got == want {
        return Ok(());
    }
    Err(ConversionError::invalid(
        field,
        got.to_string(),
        format!("the cards give {want}"),
    ))
}
