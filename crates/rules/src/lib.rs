//! # banco-rules
//!
//! The Punto Banco rules that every other part of banco trusts with money: cards and their
//! notation, the shoe, the coup being dealt and its third-card rule, bets, paytables and
//! settlement in integer minor units, exact odds of any shoe, and the scoreboard roads.
//!
//! No I/O, no async, no clock, no hidden randomness: a shuffle takes its generator as an
//! argument, so a seeded shoe replays card for card.

pub mod amount;
pub mod bet;
pub mod card;
pub mod composition;
pub mod coup;
pub mod draw;
pub mod odds;
pub mod outcome;
pub mod roads;
pub mod settle;
pub mod shoe;

pub use amount::{
    AmountError, BetArgsError, MINOR_PER_MAJOR, Money, money, parse_amount, parse_bet_args,
    parse_stake, signed_money,
};
pub use bet::{BetKind, Payout, Paytable, PerBet, UnknownBet, UnknownPaytable};
pub use card::{Card, CardParseError, Rank, Suit, parse_cards};
pub use composition::{BadDeckCount, Composition, MAX_DECKS, NotInShoe};
pub use coup::{Coup, CoupResult, DealError, Due, JudgeError};
pub use odds::{OddsError, Probabilities, Rtp, probabilities, rtp};
pub use outcome::{Score, Side, Winner};
pub use roads::Scoreboard;
pub use settle::{
    Bet, BetOutcome, Rounding, SettleError, Settlement, bet_outcome, settle, settle_bet,
};
pub use shoe::{Shoe, ShoeConfig, ShoeError, ShoeState, ShuffledShoe};
