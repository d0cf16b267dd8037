//! Card notation, exhaustively: every accepted spelling, every bad form we could think of,
//! and the fuzz target's invariants over a seeded corpus.
#![allow(clippy::unwrap_used)]

use banco_rules::{Card, CardParseError, Rank, Suit, parse_cards};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

#[allow(unreachable_pub, dead_code)]
#[path = "../fuzz/src/card.rs"]
mod fuzz_card;

fn card(text: &str) -> Card {
    Card::parse(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

#[test]
fn all_52_canonical_round_trip() {
    let mut seen = std::collections::HashSet::new();
    for c in Card::ALL {
        let canonical = c.to_string();
        assert_eq!(canonical.len(), 2);
        assert!(seen.insert(canonical.clone()), "{canonical} twice");
        assert_eq!(Card::parse(&canonical), Ok(c));
        assert_eq!(canonical.parse::<Card>(), Ok(c));
        assert_eq!(Card::parse(&canonical.to_lowercase()), Ok(c));
        assert_eq!(Card::parse(&c.pretty()), Ok(c));
        assert_eq!(Card::parse(&format!("{}\u{FE0F}", c.pretty())), Ok(c));
        assert_eq!(Card::new(c.rank(), c.suit()), c);
    }
    assert_eq!(seen.len(), 52);
}

#[test]
fn accepted_spellings() {
    let table: &[(&str, &str)] = &[
        ("AS", "AS"),
        ("as", "AS"),
        ("aS", "AS"),
        ("As", "AS"),
        ("10h", "TH"),
        ("10H", "TH"),
        ("th", "TH"),
        ("Th", "TH"),
        ("tH", "TH"),
        ("TH", "TH"),
        ("10♥", "TH"),
        ("10♥\u{FE0F}", "TH"),
        ("K♦", "KD"),
        ("k♦", "KD"),
        ("A♠\u{FE0F}", "AS"),
        ("A♠️", "AS"),
        ("2♣", "2C"),
        ("9c", "9C"),
        ("jd", "JD"),
        ("Qs", "QS"),
        // Surrounding whitespace is trimmed: scanners end lines, people type spaces.
        ("AS ", "AS"),
        (" AS", "AS"),
        ("\tKH\t", "KH"),
        ("AH\n", "AH"),
        ("AH\r\n", "AH"),
        ("\u{A0}QD\u{3000}", "QD"),
        (" 10♦️ ", "TD"),
        (" 0051 ", "KC"),
    ];
    for &(input, want) in table {
        assert_eq!(card(input).to_string(), want, "{input:?}");
    }
}

#[test]
fn index_form_all_52_in_documented_order() {
    for i in 0u8..52 {
        let c = card(&format!("{i:04}"));
        assert_eq!(c.index(), i);
        assert_eq!(Card::from_index(i), Some(c));
        // suit × 13 + (rank − 1), suits S H D C, ranks A..K.
        assert_eq!(c.suit(), Suit::ALL[usize::from(i / 13)]);
        assert_eq!(c.rank(), Rank::ALL[usize::from(i % 13)]);
    }
    let documented = [
        ("0000", "AS"),
        ("0001", "2S"),
        ("0009", "TS"),
        ("0012", "KS"),
        ("0013", "AH"),
        ("0025", "KH"),
        ("0026", "AD"),
        ("0038", "KD"),
        ("0039", "AC"),
        ("0051", "KC"),
    ];
    for (index, want) in documented {
        assert_eq!(card(index).to_string(), want, "{index}");
    }
    assert_eq!(Card::from_index(52), None);
    assert_eq!(Card::from_index(255), None);
}

/// The kind of refusal expected, with the offending part where the error names one.
#[derive(Debug)]
enum Bad {
    Empty,
    Rank(&'static str),
    Suit(&'static str),
    MissingSuit,
    Index,
}

#[test]
fn bad_forms_are_refused_and_quoted() {
    let table: &[(&str, Bad)] = &[
        ("", Bad::Empty),
        (" ", Bad::Empty),
        ("\t\r\n", Bad::Empty),
        ("A", Bad::MissingSuit),
        ("10", Bad::MissingSuit),
        ("t", Bad::MissingSuit),
        (" K ", Bad::MissingSuit),
        ("1H", Bad::Rank("1")),
        ("11H", Bad::Rank("1")),
        ("1OH", Bad::Rank("1")), // letter O for zero
        ("0H", Bad::Rank("0")),
        ("ZZ", Bad::Rank("Z")),
        ("S", Bad::Rank("S")),
        ("♠", Bad::Rank("♠")),
        ("♠A", Bad::Rank("♠")), // suit first
        ("SA", Bad::Rank("S")),
        ("AX", Bad::Suit("X")),
        ("A♤", Bad::Suit("♤")),
        ("5♡", Bad::Suit("♡")),
        ("ASS", Bad::Suit("SS")),
        ("A S", Bad::Suit(" S")), // inner space
        ("10 H", Bad::Suit(" H")),
        ("100H", Bad::Suit("0H")),
        ("A♠♠", Bad::Suit("♠♠")),
        ("10♥♥", Bad::Suit("♥♥")),
        ("AS,KH", Bad::Suit("S,KH")), // a list is not one card
        ("AS;", Bad::Suit("S;")),
        ("JOKER", Bad::Suit("OKER")),
        ("AC♣", Bad::Suit("C♣")),
        // Index form is exactly four ASCII digits, 0000 to 0051.
        ("0052", Bad::Index),
        ("0099", Bad::Index),
        ("0255", Bad::Index),
        ("0256", Bad::Index),
        ("1000", Bad::Index),
        ("9999", Bad::Index),
        ("052", Bad::Rank("0")),
        ("00000", Bad::Rank("0")),
        ("00 51", Bad::Rank("0")),
        ("-001", Bad::Rank("-")),
        ("+001", Bad::Rank("+")),
        ("0x01", Bad::Rank("0")),
        ("５１", Bad::Rank("５")), // fullwidth digits
        ("００００", Bad::Rank("０")),
        // Control characters and invisible ones are not whitespace: refused.
        ("A\u{0}", Bad::Suit("\u{0}")),
        ("\u{0}AS", Bad::Rank("\u{0}")),
        ("A\u{200B}S", Bad::Suit("\u{200B}S")),
        ("AS\u{200B}", Bad::Suit("S\u{200B}")),
        // The emoji variation selector belongs right after a suit symbol, nowhere else.
        ("A\u{FE0F}S", Bad::Suit("\u{FE0F}S")),
        ("AS\u{FE0F}", Bad::Suit("S\u{FE0F}")),
        ("\u{FE0F}AS", Bad::Rank("\u{FE0F}")),
        ("A\u{FE0F}", Bad::Suit("\u{FE0F}")),
        ("A♠\u{FE0F}\u{FE0F}", Bad::Suit("♠\u{FE0F}\u{FE0F}")),
        ("1\u{FE0F}0H", Bad::Rank("1")),
        // Look-alikes and case folding beyond ASCII.
        ("Ａ♠", Bad::Rank("Ａ")),
        ("AＳ", Bad::Suit("Ｓ")),
        ("\u{212A}S", Bad::Rank("\u{212A}")), // KELVIN SIGN lowercases to k
        ("Aſ", Bad::Suit("ſ")),               // LATIN SMALL LONG S uppercases to S
        ("ÀS", Bad::Rank("À")),
        ("🂡", Bad::Rank("🂡")), // PLAYING CARD ACE OF SPADES
        ("A🂡", Bad::Suit("🂡")),
        ("\"AS\"", Bad::Rank("\"")),
    ];
    for (input, want) in table {
        let err = Card::parse(input).expect_err(input);
        let ok = match (want, &err) {
            (Bad::Empty, CardParseError::Empty) => true,
            (Bad::MissingSuit, CardParseError::MissingSuit { input: quoted })
            | (Bad::Index, CardParseError::IndexOutOfRange { input: quoted }) => quoted == input,
            (
                Bad::Rank(part),
                CardParseError::BadRank {
                    input: quoted,
                    rank,
                },
            ) => quoted == input && rank == part,
            (
                Bad::Suit(part),
                CardParseError::BadSuit {
                    input: quoted,
                    suit,
                },
            ) => quoted == input && suit == part,
            _ => false,
        };
        assert!(ok, "{input:?}: expected {want:?}, got {err:?}");
        // Blank input has nothing to quote: the message says it was empty.
        let message = err.to_string();
        let quoted = if input.trim().is_empty() {
            message.starts_with("empty card")
        } else {
            message.contains(input)
        };
        assert!(quoted, "{input:?}: message does not quote it: {message}");
        assert_eq!(fuzz_card::oracle(input), None, "{input:?}");
    }
}

#[test]
fn very_long_inputs_are_refused_whole() {
    let long_rank = format!("{}S", "A".repeat(10_000));
    let pairs = "AS".repeat(5_000);
    let nines = "9".repeat(10_000);
    let zeros = "0".repeat(1_000);
    let emoji = "🂡".repeat(2_000);
    for input in [&long_rank, &pairs, &nines, &zeros, &emoji] {
        let err = Card::parse(input).expect_err("long");
        assert!(err.to_string().contains(input.as_str()));
    }
    let padded = format!("{}AS{}", " ".repeat(10_000), "\n".repeat(10_000));
    assert_eq!(card(&padded).to_string(), "AS");
}

#[test]
fn parse_cards_lists() {
    let good: &[(&str, &[&str])] = &[
        ("AS,9H 10D", &["AS", "9H", "TD"]),
        ("AS, KH ,QD", &["AS", "KH", "QD"]),
        (" AS\tKH\nQD ", &["AS", "KH", "QD"]),
        (",,AS,,", &["AS"]),
        ("AS,,KH", &["AS", "KH"]),
        ("AS\u{3000}kh", &["AS", "KH"]),
        ("0000,0051", &["AS", "KC"]),
        ("A♠️ 10♥", &["AS", "TH"]),
        ("", &[]),
        (" , ", &[]),
    ];
    for &(input, want) in good {
        let cards = parse_cards(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        let got: Vec<String> = cards.iter().map(ToString::to_string).collect();
        assert_eq!(got, want, "{input:?}");
    }
    // The first bad card stops the parse and is the one named.
    let bad: &[(&str, &str, &[&str])] = &[
        ("AS,XX,KH", "XX", &[]),
        ("AS,1H,ZZ", "1H", &["ZZ"]),
        ("AS 0052 KH", "0052", &[]),
        ("A S", "`A`", &["S`"]),
        ("AS;KH", "AS;KH", &[]),
        ("10,H", "`10`", &[]),
    ];
    for &(input, named, not_named) in bad {
        let message = parse_cards(input).expect_err(input).to_string();
        assert!(message.contains(named), "{input:?}: {message}");
        for other in not_named {
            assert!(!message.contains(other), "{input:?}: {message}");
        }
    }
}

#[test]
fn serde_uses_canonical_text_and_refuses_bad_cards() {
    let th: Card = serde_json::from_str("\"TH\"").unwrap();
    assert_eq!(th, Card::new(Rank::Ten, Suit::Hearts));
    assert_eq!(serde_json::from_str::<Card>("\"10h\"").unwrap(), th);
    assert_eq!(serde_json::to_string(&th).unwrap(), "\"TH\"");
    let err = serde_json::from_str::<Card>("\"1H\"").unwrap_err();
    assert!(err.to_string().contains("`1H` is not a card"), "{err}");
    assert!(serde_json::from_str::<Card>("5").is_err());
    assert!(serde_json::from_str::<Card>("null").is_err());
    let hand: Vec<Card> = serde_json::from_str(r#"["AS","k♦","0051"]"#).unwrap();
    assert_eq!(serde_json::to_string(&hand).unwrap(), r#"["AS","KD","KC"]"#);
    let all = serde_json::to_string(&Card::ALL[..]).unwrap();
    assert_eq!(serde_json::from_str::<Vec<Card>>(&all).unwrap(), Card::ALL);
}

/// Pieces that card text is made of, good and bad, so that random strings hit the
/// accepted language often and its edges more often.
const FRAGMENTS: &[&str] = &[
    "A", "a", "2", "5", "9", "T", "t", "10", "1", "0", "J", "q", "K", "k", "S", "s", "H", "h", "D",
    "d", "C", "c", "X", "♠", "♥", "♦", "♣", "♤", "♡", "\u{FE0F}", " ", "\t", "\n", ",", "00", "51",
    "52", "\u{0}", "Ａ", "🂡", "\u{212A}", "é",
];

fn random_text(rng: &mut ChaCha20Rng) -> Vec<u8> {
    let len = (rng.next_u32() % 6) as usize;
    match rng.next_u32() % 4 {
        // Raw bytes, mostly not UTF-8.
        0 => (0..len * 2).map(|_| rng.next_u32() as u8).collect(),
        // Four digits, to walk the index form.
        1 => format!("{:04}", rng.next_u32() % 120).into_bytes(),
        _ => (0..len)
            .map(|_| FRAGMENTS[rng.next_u32() as usize % FRAGMENTS.len()])
            .collect::<String>()
            .into_bytes(),
    }
}

/// The `card` fuzz target's invariants, on stable, over a deterministic corpus.
#[test]
fn fuzz_card_invariants_on_seeded_corpus() {
    let mut rng = ChaCha20Rng::seed_from_u64(0xBACC_A2A7);
    let mut accepted = 0u32;
    const INPUTS: u32 = 200_000;
    for _ in 0..INPUTS {
        let input = random_text(&mut rng);
        fuzz_card::check_card(&input);
        if std::str::from_utf8(&input).is_ok_and(|t| Card::parse(t).is_ok()) {
            accepted += 1;
        }
    }
    // The corpus must exercise both sides.
    assert!(
        accepted > INPUTS / 50 && accepted < INPUTS / 2,
        "{accepted} accepted"
    );
    // And every spelling in the oracle, with and without padding.
    for c in Card::ALL {
        for text in [c.to_string(), c.pretty(), format!(" {:04}\n", c.index())] {
            fuzz_card::check_card(text.as_bytes());
        }
    }
}
