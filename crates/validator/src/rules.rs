//! One pure function per RulesService call. Malformed input is a [`ConversionError`]
//! naming the field (INVALID_ARGUMENT on the wire); a well-formed card the rules refuse is
//! an ordinary answer with a [`pb::Refusal`], because "misread" and "no card is due" are
//! facts the croupier must see, not faults of the caller.

use banco_rules::coup::Coup;
use banco_rules::odds::{probabilities, rtp};
use banco_rules::{Composition, NotInShoe, Paytable, settle};
use banco_wire::convert::{self, ConversionError};
use banco_wire::pb;

/// CheckCard: is `card` possible in this shoe, and is a card due in this hand?
pub fn check_card(request: pb::CheckCardRequest) -> Result<pb::CheckCardResponse, ConversionError> {
    let (mut unseen, decks) = shoe_before_hand(request.shoe)?;
    let hand = convert::cards("hand", &request.hand)?;
    for (i, &card) in hand.iter().enumerate() {
        unseen.remove(card, decks).map_err(|err| {
            ConversionError::invalid(format!("hand[{i}]"), card.to_string(), err.to_string())
        })?;
    }
    let before = Coup::replay(&hand)
        .map_err(|err| ConversionError::invalid("hand", hand_text(&hand), err.to_string()))?;
    let card = convert::card("card", &request.card)?;

    // A complete hand is the more basic refusal: no card at all may be dealt to it.
    let mut after = before;
    let refusal = match after.deal(card) {
        Err(err) => Some(refusal(
            pb::RefusalCode::HandComplete,
            err.to_string(),
            "card",
        )),
        Ok(_) if unseen.count(card) == 0 => {
            let err = NotInShoe {
                card,
                decks_worth: u16::from(decks),
            };
            Some(refusal(pb::RefusalCode::Misread, misread_text(err), "card"))
        }
        Ok(_) => None,
    };
    let coup = if refusal.is_some() { before } else { after };
    Ok(pb::CheckCardResponse {
        accepted: refusal.is_none(),
        refusal,
        due: pb::Due::from(coup.due()).into(),
        player_total: u32::from(coup.player_total()),
        banker_total: u32::from(coup.banker_total()),
        result: coup.result().map(pb::HandResult::from),
    })
}

/// NextDue: what the hand dealt so far waits for.
pub fn next_due(request: pb::NextDueRequest) -> Result<pb::NextDueResponse, ConversionError> {
    let cards = convert::cards("cards", &request.cards)?;
    let coup = Coup::replay(&cards)
        .map_err(|err| ConversionError::invalid("cards", hand_text(&cards), err.to_string()))?;
    Ok(pb::NextDueResponse {
        due: pb::Due::from(coup.due()).into(),
        player_total: u32::from(coup.player_total()),
        banker_total: u32::from(coup.banker_total()),
    })
}

/// JudgeHand: the outcome of a complete hand.
pub fn judge_hand(request: pb::JudgeHandRequest) -> Result<pb::JudgeHandResponse, ConversionError> {
    let cards = convert::cards("cards", &request.cards)?;
    let result = Coup::judge(&cards)
        .map_err(|err| ConversionError::invalid("cards", hand_text(&cards), err.to_string()))?;
    Ok(pb::JudgeHandResponse {
        result: Some(result.into()),
    })
}

/// Settle: judges the hand and settles every bet, or refuses the whole request.
pub fn settle_bets(request: pb::SettleRequest) -> Result<pb::SettleResponse, ConversionError> {
    let paytable = paytable("paytable", request.paytable)?;
    let cards = convert::cards("cards", &request.cards)?;
    let result = Coup::judge(&cards)
        .map_err(|err| ConversionError::invalid("cards", hand_text(&cards), err.to_string()))?;
    let bets = convert::bets("bets", request.bets)?;
    let settlements = settle(&bets, &result, &paytable).map_err(|err| {
        ConversionError::invalid("bets", format!("{} bets", bets.len()), err.to_string())
    })?;
    let total_stake_minor = settlements.iter().map(|s| s.stake).sum();
    let total_returned_minor = settlements.iter().map(|s| s.returned).sum();
    Ok(pb::SettleResponse {
        result: Some(result.into()),
        settlements: settlements.into_iter().map(pb::Settlement::from).collect(),
        total_stake_minor,
        total_returned_minor,
    })
}

/// Odds: exact probabilities and RTP of the next coup from a shoe.
pub fn odds(request: pb::OddsRequest) -> Result<pb::OddsResponse, ConversionError> {
    let (shoe, _) = shoe_less("decks", request.decks, "removed", &request.removed)?;
    let paytable = paytable("paytable", request.paytable)?;
    let p = probabilities(&shoe).map_err(|err| {
        ConversionError::invalid(
            "removed",
            format!("{} cards", request.removed.len()),
            err.to_string(),
        )
    })?;
    Ok(pb::OddsResponse {
        cards_left: shoe.len(),
        probabilities: Some(p.into()),
        rtp: Some(rtp(&p, &paytable).into()),
    })
}

/// The shoe as it was before the hand under way, and its deck count (for the wording of a
/// misread). From counts, the deck count is the largest count a card could have had.
fn shoe_before_hand(
    shoe: Option<pb::check_card_request::Shoe>,
) -> Result<(Composition, u8), ConversionError> {
    match shoe {
        None => Err(ConversionError::missing("shoe")),
        Some(pb::check_card_request::Shoe::Unseen(counts)) => {
            let composition = Composition::try_from(counts).map_err(|e| e.within("unseen"))?;
            let decks = composition.counts().iter().copied().max().unwrap_or(0);
            Ok((composition, u8::try_from(decks.max(1)).unwrap_or(u8::MAX)))
        }
        Some(pb::check_card_request::Shoe::Seen(seen)) => {
            shoe_less("seen.decks", seen.decks, "seen.cards", &seen.cards)
        }
    }
}

/// A full shoe of `decks` less `cards`, each error naming its field; and the deck count.
fn shoe_less(
    decks_field: &str,
    raw_decks: u32,
    cards_field: &str,
    cards: &[String],
) -> Result<(Composition, u8), ConversionError> {
    let decks = decks(decks_field, raw_decks)?;
    let mut shoe = Composition::full(decks).map_err(|err| {
        ConversionError::invalid(decks_field, raw_decks.to_string(), err.to_string())
    })?;
    for (i, card) in convert::cards(cards_field, cards)?.into_iter().enumerate() {
        shoe.remove(card, decks).map_err(|err| {
            ConversionError::invalid(
                format!("{cards_field}[{i}]"),
                card.to_string(),
                err.to_string(),
            )
        })?;
    }
    Ok((shoe, decks))
}

fn decks(field: &str, raw: u32) -> Result<u8, ConversionError> {
    u8::try_from(raw)
        .ok()
        .filter(|d| (1..=banco_rules::MAX_DECKS).contains(d))
        .ok_or_else(|| {
            ConversionError::invalid(field, raw.to_string(), "a shoe holds 1 to 8 decks")
        })
}

fn paytable(field: &str, raw: Option<pb::Paytable>) -> Result<Paytable, ConversionError> {
    let raw = raw.ok_or_else(|| ConversionError::missing(field))?;
    Paytable::try_from(raw).map_err(|e| e.within(field))
}

fn refusal(code: pb::RefusalCode, message: String, field: &str) -> pb::Refusal {
    pb::Refusal {
        code: code.into(),
        message,
        field: field.to_owned(),
    }
}

/// "a ninth A♠ in an 8-deck shoe: misread?" is what a croupier understands at a glance.
fn misread_text(err: NotInShoe) -> String {
    let ordinal = match err.decks_worth + 1 {
        2 => "second".to_owned(),
        3 => "third".to_owned(),
        4 => "fourth".to_owned(),
        5 => "fifth".to_owned(),
        6 => "sixth".to_owned(),
        7 => "seventh".to_owned(),
        8 => "eighth".to_owned(),
        9 => "ninth".to_owned(),
        n => format!("{n}th"),
    };
    let decks = format!("{}-deck", err.decks_worth);
    format!(
        "{} {ordinal} {} in {} {decks} shoe: misread? ({err})",
        article(&ordinal),
        err.card.pretty(),
        article(&decks)
    )
}

/// "an eighth", "an 8-deck", "a ninth", "a 6-deck".
fn article(word: &str) -> &'static str {
    let vowel_sound = word.starts_with(['a', 'e', 'i', 'o', 'u', '8'])
        || word.starts_with("11")
        || word.starts_with("18");
    if vowel_sound { "an" } else { "a" }
}

fn hand_text(cards: &[banco_rules::Card]) -> String {
    cards
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}
