//! Invariants of card notation, checked against an oracle written from
//! docs/src/rules/cards-and-shoe.md rather than from `card.rs`: the language of accepted cards is
//! finite (after trimming), so the oracle simply lists it.

use std::collections::HashMap;
use std::sync::OnceLock;

use banco_rules::{Card, Rank, Suit, parse_cards};

/// Every accepted spelling of every card, trimmed: rank (`A 2-9 T J Q K`, `10` for `T`, any case)
/// then suit (`S H D C` any case, or a symbol `♠ ♥ ♦ ♣` optionally followed by U+FE0F; the outline
/// symbols `♤ ♡ ♢ ♧` are not in the notation (docs/src/rules/cards-and-shoe.md) and are refused),
/// plus the four-digit shoe-reader index `0000`–`0051`.
fn spellings() -> &'static HashMap<String, Card> {
    static MAP: OnceLock<HashMap<String, Card>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = HashMap::new();
        for card in Card::ALL {
            let r = card.rank().letter();
            let mut ranks = vec![r.to_string(), r.to_ascii_lowercase().to_string()];
            if card.rank() == Rank::Ten {
                ranks.push("10".to_owned());
            }
            let (letter, symbol) = match card.suit() {
                Suit::Spades => ('S', '♠'),
                Suit::Hearts => ('H', '♥'),
                Suit::Diamonds => ('D', '♦'),
                Suit::Clubs => ('C', '♣'),
            };
            let suits = [
                letter.to_string(),
                letter.to_ascii_lowercase().to_string(),
                symbol.to_string(),
                format!("{symbol}\u{FE0F}"),
            ];
            for rank in &ranks {
                for suit in &suits {
                    map.insert(format!("{rank}{suit}"), card);
                }
            }
            map.insert(format!("{:04}", card.index()), card);
        }
        map
    })
}

/// What the rules say `input` is.
pub fn oracle(input: &str) -> Option<Card> {
    spellings().get(input.trim()).copied()
}

/// The `card` fuzz target: never panics on any bytes; where they are UTF-8, `Card::parse`
/// agrees with the oracle, its canonical text is two ASCII characters that read back as
/// the same card, and every error quotes the input.
pub fn check_card(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_card_text(text);
    check_card_list(text);
}

pub fn check_card_text(text: &str) {
    let parsed = Card::parse(text);
    assert_eq!(
        parsed.as_ref().ok(),
        oracle(text).as_ref(),
        "Card::parse({text:?}) disagrees with the rules: {parsed:?}"
    );
    match parsed {
        Ok(card) => check_canonical(card),
        Err(err) => {
            let message = err.to_string();
            assert!(
                message.contains(text) || message.contains(text.trim()),
                "error for {text:?} does not quote it: {message}"
            );
        }
    }
}

fn check_canonical(card: Card) {
    let canonical = card.to_string();
    let bytes = canonical.as_bytes();
    assert_eq!(bytes.len(), 2, "canonical {canonical:?} of {card:?}");
    assert!(
        b"A23456789TJQK".contains(&bytes[0]),
        "rank of {canonical:?}"
    );
    assert!(b"SHDC".contains(&bytes[1]), "suit of {canonical:?}");
    assert_eq!(Card::parse(&canonical), Ok(card));
    assert_eq!(Card::parse(&card.pretty()), Ok(card));
    assert_eq!(Card::from_index(card.index()), Some(card));
}

/// `parse_cards` is `Card::parse` over the comma/whitespace-separated parts, stopping at
/// the first bad one, which its error quotes.
pub fn check_card_list(text: &str) {
    let parts: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    let expected: Result<Vec<Card>, &str> = parts.iter().map(|p| oracle(p).ok_or(*p)).collect();
    match (parse_cards(text), expected) {
        (Ok(cards), Ok(want)) => assert_eq!(cards, want, "parse_cards({text:?})"),
        (Err(err), Err(first_bad)) => {
            let message = err.to_string();
            assert!(
                message.contains(first_bad),
                "parse_cards({text:?}) should name {first_bad:?}: {message}"
            );
        }
        (got, want) => panic!("parse_cards({text:?}) = {got:?}, the rules say {want:?}"),
    }
}
