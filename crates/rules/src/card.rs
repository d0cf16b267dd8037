//! Cards and their strict notation.
//!
//! Canonical text is rank then suit, `AS`, `TH`, `KD`. On input we also accept `10` for
//! `T`, the suit symbols `♠ ♥ ♦ ♣` (with or without the emoji variation selector), any
//! letter case, and the 4-digit shoe-reader index (see [`Card::from_index`]). Everything
//! else is refused with an error that quotes the input, because a croupier must see which
//! scan or keystroke was wrong.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A suit, in shoe-reader index order: spades, hearts, diamonds, clubs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Suit {
    Spades,
    Hearts,
    Diamonds,
    Clubs,
}

impl Suit {
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];

    /// 0..4 in index order (S H D C).
    pub const fn index(self) -> u8 {
        self as u8
    }

    pub const fn letter(self) -> char {
        match self {
            Suit::Spades => 'S',
            Suit::Hearts => 'H',
            Suit::Diamonds => 'D',
            Suit::Clubs => 'C',
        }
    }

    pub const fn symbol(self) -> char {
        match self {
            Suit::Spades => '♠',
            Suit::Hearts => '♥',
            Suit::Diamonds => '♦',
            Suit::Clubs => '♣',
        }
    }

    /// Hearts and diamonds are red; a console colours them so.
    pub const fn is_red(self) -> bool {
        matches!(self, Suit::Hearts | Suit::Diamonds)
    }

    fn from_text(text: &str) -> Option<Suit> {
        // A symbol may carry U+FE0F (emoji presentation) right after it, and nowhere else.
        let text = match text.strip_suffix('\u{FE0F}') {
            Some(symbol) if !symbol.is_ascii() => symbol,
            _ => text,
        };
        match text {
            "S" | "s" | "♠" => Some(Suit::Spades),
            "H" | "h" | "♥" => Some(Suit::Hearts),
            "D" | "d" | "♦" => Some(Suit::Diamonds),
            "C" | "c" | "♣" => Some(Suit::Clubs),
            _ => None,
        }
    }
}

/// A rank, ace low. The discriminant is the rank number 1..=13.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rank {
    Ace = 1,
    Two,
    Three,
    Four,
    Five,
    Six,
    Seven,
    Eight,
    Nine,
    Ten,
    Jack,
    Queen,
    King,
}

impl Rank {
    pub const ALL: [Rank; 13] = [
        Rank::Ace,
        Rank::Two,
        Rank::Three,
        Rank::Four,
        Rank::Five,
        Rank::Six,
        Rank::Seven,
        Rank::Eight,
        Rank::Nine,
        Rank::Ten,
        Rank::Jack,
        Rank::Queen,
        Rank::King,
    ];

    /// 1 (ace) ..= 13 (king).
    pub const fn number(self) -> u8 {
        self as u8
    }

    /// 0..13, ace first.
    pub const fn index(self) -> u8 {
        self as u8 - 1
    }

    pub const fn from_number(n: u8) -> Option<Rank> {
        if n >= 1 && n <= 13 {
            Some(Rank::ALL[(n - 1) as usize])
        } else {
            None
        }
    }

    /// Baccarat points: ace 1, two to nine at face value, ten and court cards 0.
    pub const fn value(self) -> u8 {
        let n = self as u8;
        if n >= 10 { 0 } else { n }
    }

    pub const fn letter(self) -> char {
        match self {
            Rank::Ace => 'A',
            Rank::Two => '2',
            Rank::Three => '3',
            Rank::Four => '4',
            Rank::Five => '5',
            Rank::Six => '6',
            Rank::Seven => '7',
            Rank::Eight => '8',
            Rank::Nine => '9',
            Rank::Ten => 'T',
            Rank::Jack => 'J',
            Rank::Queen => 'Q',
            Rank::King => 'K',
        }
    }

    fn from_text(text: &str) -> Option<Rank> {
        let rank = match text {
            "A" | "a" => Rank::Ace,
            "2" => Rank::Two,
            "3" => Rank::Three,
            "4" => Rank::Four,
            "5" => Rank::Five,
            "6" => Rank::Six,
            "7" => Rank::Seven,
            "8" => Rank::Eight,
            "9" => Rank::Nine,
            "T" | "t" | "10" => Rank::Ten,
            "J" | "j" => Rank::Jack,
            "Q" | "q" => Rank::Queen,
            "K" | "k" => Rank::King,
            _ => return None,
        };
        Some(rank)
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl fmt::Display for Suit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// One playing card. Copy, one byte of information.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Card {
    rank: Rank,
    suit: Suit,
}

/// Why a piece of text is not a card. Every variant quotes the input as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CardParseError {
    #[error("empty card: expected rank and suit such as `AS`, `TH` or `10H`")]
    Empty,
    #[error("`{input}` is not a card: `{rank}` is not a rank (A 2-9 T/10 J Q K)")]
    BadRank { input: String, rank: String },
    #[error("`{input}` is not a card: `{suit}` is not a suit (S H D C or ♠ ♥ ♦ ♣)")]
    BadSuit { input: String, suit: String },
    #[error("`{input}` is not a card: a rank needs a suit after it (S H D C or ♠ ♥ ♦ ♣)")]
    MissingSuit { input: String },
    #[error("`{input}` is not a card: shoe-reader index must be 0000 to 0051")]
    IndexOutOfRange { input: String },
}

impl Card {
    /// All 52 cards in shoe-reader index order.
    pub const ALL: [Card; 52] = {
        let mut all = [Card::new(Rank::Ace, Suit::Spades); 52];
        let mut i = 0;
        while i < 52 {
            all[i] = Card::new(Rank::ALL[i % 13], Suit::ALL[i / 13]);
            i += 1;
        }
        all
    };

    pub const fn new(rank: Rank, suit: Suit) -> Card {
        Card { rank, suit }
    }

    pub const fn rank(self) -> Rank {
        self.rank
    }

    pub const fn suit(self) -> Suit {
        self.suit
    }

    /// Baccarat points of this card (0..=9).
    pub const fn value(self) -> u8 {
        self.rank.value()
    }

    /// The shoe-reader index, 0..52: `suit × 13 + (rank − 1)` with suits in the order
    /// spades, hearts, diamonds, clubs and ranks ace to king. So `0000` is A♠, `0012` K♠,
    /// `0013` A♥, `0026` A♦, `0039` A♣ and `0051` K♣.
    pub const fn index(self) -> u8 {
        self.suit.index() * 13 + self.rank.index()
    }

    /// The card at a shoe-reader index (see [`Card::index`]); `None` past 51.
    pub const fn from_index(index: u8) -> Option<Card> {
        if index < 52 {
            Some(Card::ALL[index as usize])
        } else {
            None
        }
    }

    /// Text with the suit symbol, `K♦`, for people; `Display` gives the canonical `KD`.
    pub fn pretty(self) -> String {
        format!("{}{}", self.rank.letter(), self.suit.symbol())
    }

    /// Parses one card strictly. Surrounding whitespace is trimmed; nothing else is forgiven.
    pub fn parse(input: &str) -> Result<Card, CardParseError> {
        let text = input.trim();
        if text.is_empty() {
            return Err(CardParseError::Empty);
        }
        if text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse::<u8>()
                .ok()
                .and_then(Card::from_index)
                .ok_or_else(|| CardParseError::IndexOutOfRange {
                    input: input.to_owned(),
                });
        }
        let rank_len = if text.starts_with("10") {
            2
        } else {
            text.chars().next().map_or(0, char::len_utf8)
        };
        let (rank_text, suit_text) = text.split_at(rank_len);
        let Some(rank) = Rank::from_text(rank_text) else {
            return Err(CardParseError::BadRank {
                input: input.to_owned(),
                rank: rank_text.to_owned(),
            });
        };
        if suit_text.is_empty() {
            return Err(CardParseError::MissingSuit {
                input: input.to_owned(),
            });
        }
        let Some(suit) = Suit::from_text(suit_text) else {
            return Err(CardParseError::BadSuit {
                input: input.to_owned(),
                suit: suit_text.to_owned(),
            });
        };
        Ok(Card::new(rank, suit))
    }
}

/// Parses a list of cards separated by commas and/or whitespace (`"AS,9H 10D"`).
/// The first bad card stops the parse and is named in the error.
pub fn parse_cards(text: &str) -> Result<Vec<Card>, CardParseError> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|part| !part.is_empty())
        .map(Card::parse)
        .collect()
}

impl FromStr for Card {
    type Err = CardParseError;

    fn from_str(s: &str) -> Result<Card, CardParseError> {
        Card::parse(s)
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.rank.letter(), self.suit.letter())
    }
}

impl Serialize for Card {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Card, D::Error> {
        let text = String::deserialize(deserializer)?;
        Card::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_order_is_documented_order() {
        assert_eq!(
            Card::from_index(0).map(|c| c.to_string()).as_deref(),
            Some("AS")
        );
        assert_eq!(
            Card::from_index(12).map(|c| c.to_string()).as_deref(),
            Some("KS")
        );
        assert_eq!(
            Card::from_index(13).map(|c| c.to_string()).as_deref(),
            Some("AH")
        );
        assert_eq!(
            Card::from_index(26).map(|c| c.to_string()).as_deref(),
            Some("AD")
        );
        assert_eq!(
            Card::from_index(39).map(|c| c.to_string()).as_deref(),
            Some("AC")
        );
        assert_eq!(
            Card::from_index(51).map(|c| c.to_string()).as_deref(),
            Some("KC")
        );
        assert_eq!(Card::from_index(52), None);
        for (i, card) in Card::ALL.iter().enumerate() {
            assert_eq!(usize::from(card.index()), i);
        }
    }
}
