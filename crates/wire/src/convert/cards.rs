//! Cards as canonical strings, and judged hands.

use banco_rules::{Card, Coup, CoupResult, Due, JudgeError, Winner};

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
    let quoted = || format!("{text:?}");
    let parsed = Card::parse(text)
        .map_err(|err| ConversionError::invalid(field, quoted(), format!("not a card ({err})")))?;
    let canonical = parsed.to_string();
    if canonical != text {
        return Err(ConversionError::invalid(
            field,
            quoted(),
            format!("cards are sent in canonical notation: write `{canonical}`"),
        ));
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
            // Name the hand that holds the card too many, or that is short of one.
            let players = match err {
                JudgeError::TooFewCards { due, .. } => due == Due::PlayerCard,
                JudgeError::TooManyCards { position, .. } => match position.saturating_sub(1) {
                    0 | 2 => true,
                    4 => player.len() == 3,
                    _ => false,
                },
            };
            ConversionError::invalid(
                if players {
                    "player_cards"
                } else {
                    "banker_cards"
                },
                dealt(),
                format!("not a legal hand in dealing order ({err})"),
            )
        })?;
        if result.player_cards() != player.as_slice() || result.banker_cards() != banker.as_slice()
        {
            return Err(ConversionError::invalid(
                "banker_cards",
                dealt(),
                "the third-card rule gives these cards to the other hand",
            ));
        }
        let expected = pb::HandResult::from(&result);
        let mismatch = |field: &str, got: String, want: String| {
            ConversionError::invalid(field, got, format!("the cards give {want}"))
        };
        if hand.player_total != expected.player_total {
            return Err(mismatch(
                "player_total",
                hand.player_total.to_string(),
                expected.player_total.to_string(),
            ));
        }
        if hand.banker_total != expected.banker_total {
            return Err(mismatch(
                "banker_total",
                hand.banker_total.to_string(),
                expected.banker_total.to_string(),
            ));
        }
        let winner: Winner = enums::winner("winner", hand.winner)?;
        if winner != result.winner() {
            return Err(mismatch(
                "winner",
                winner.to_string(),
                result.winner().to_string(),
            ));
        }
        for (field, got, want) in [
            ("natural", hand.natural, expected.natural),
            ("player_pair", hand.player_pair, expected.player_pair),
            ("banker_pair", hand.banker_pair, expected.banker_pair),
            (
                "player_perfect_pair",
                hand.player_perfect_pair,
                expected.player_perfect_pair,
            ),
            (
                "banker_perfect_pair",
                hand.banker_perfect_pair,
                expected.banker_perfect_pair,
            ),
        ] {
            if got != want {
                return Err(mismatch(field, got.to_string(), want.to_string()));
            }
        }
        if hand.cards_dealt != expected.cards_dealt {
            return Err(mismatch(
                "cards_dealt",
                hand.cards_dealt.to_string(),
                expected.cards_dealt.to_string(),
            ));
        }
        Ok(result)
    }
}
