//! The signed round record: everything the archive keeps of one finished round, as the
//! table seals it (format [`crate::ROUND_RECORD_VERSION`]). Its canonical encoding is
//! `serde_json` of [`FinishedRound`]: fields in declaration order, maps sorted, optional
//! fields left out when empty. Every stored signature is over that encoding, so nothing
//! here may be renamed, reordered or re-typed: a change is a new version, and the golden
//! records in `tests/golden/` must still parse and re-encode byte for byte.

use std::collections::BTreeMap;
use std::fmt;

use banco_rules::shoe::ShoeConfig;
use banco_rules::{BetKind, Card, CoupResult, Settlement, Side};
use serde::{Deserialize, Serialize};

use crate::ids::{RoundId, TxId};

/// A player's stakes by position.
pub type Stakes = BTreeMap<BetKind, i64>;

/// Everything the archive keeps of one round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishedRound {
    pub round_id: RoundId,
    pub table: String,
    pub shoe: u32,
    pub hand: u32,
    pub betting_opened_at: u64,
    pub betting_closed_at: Option<u64>,
    /// Cards in dealing order, as finally dealt (taken-back ones are in `corrections`).
    pub cards: Vec<DealtCard>,
    pub corrections: Vec<Correction>,
    pub void: Option<VoidRecord>,
    pub result: Option<CoupResult>,
    /// Every player's stakes by position.
    pub bets: BTreeMap<String, Stakes>,
    /// Empty for a void round.
    pub settlements: BTreeMap<String, Vec<Settlement>>,
    /// Every ledger entry of the round, in order.
    pub entries: Vec<Entry>,
    pub finished_at: u64,
    /// Who opened betting: the croupier at the table, or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_by: Option<String>,
    /// Who confirmed the result (`None` for a void round: see `void.by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
    /// The cut card came out during this hand (the next one is the shoe's last).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_card: bool,
    /// On the shoe's first round: how the shoe was put in play.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shoe_opening: Option<ShoeOpening>,
    /// The shuffle key of a committed shoe that has ended (see [`crate::fairness`]): on
    /// the round that ended it, or, for a shoe ended between rounds, on the next round the
    /// table seals (of a later shoe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revealed: Option<RevealedShuffle>,
    /// Each player's accepted stakes as they were placed, in order: which request (its
    /// idempotency key) staked what on which position, and when. Stakes the player
    /// cleared are left out, so each position's placements add up to its stake in `bets`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub placements: BTreeMap<String, Vec<Placement>>,
}

/// One position's stake from one accepted bet request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub kind: BetKind,
    pub amount: i64,
    /// The request's idempotency key.
    pub key: String,
    /// When the request reached the table.
    pub at: u64,
}

/// A committed shoe's shuffle key, revealed once no card of it is to come.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevealedShuffle {
    /// The shoe's number at its table.
    pub shoe: u32,
    /// The 32-byte key, 64 lowercase hex digits.
    pub key: String,
}

/// How a shoe was put in play, recorded with its first round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShoeOpening {
    pub config: ShoeConfig,
    /// The paytable every round of the shoe is settled under.
    pub paytable: banco_rules::Paytable,
    pub opened_by: String,
    pub opened_at: u64,
    /// `None` for a shoe dealt without a burn.
    pub burn: Option<BurnRecord>,
    /// On a shoe the table shuffled itself: the commitment to its shuffle key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commitment: Option<String>,
}

/// The shoe's burn: `exposed` shown, `face_down` more burned unseen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurnRecord {
    pub exposed: Card,
    pub face_down: u8,
    pub by: String,
    pub at: u64,
}

/// One card of a round as it was dealt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DealtCard {
    pub card: Card,
    pub to: Side,
    pub source: CardSource,
    pub at: u64,
}

/// A card taken back by the croupier, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Correction {
    pub card: Card,
    pub reason: String,
    pub by: String,
    pub at: u64,
}

/// Why and when a round was voided.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VoidRecord {
    pub reason: String,
    pub by: String,
    pub at: u64,
}

/// Where a card came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardSource {
    /// Read by the card scanner of the shoe.
    Scanner,
    /// Typed by the croupier.
    Manual,
    /// Drawn by the actor from a seeded shuffled shoe (automated tables).
    Shuffler,
}

/// One account of the table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Account {
    /// The player's side: their wallet account, as this table sees it.
    Player(String),
    House,
    /// Stakes of the open round, between acceptance and settlement or refund.
    InPlay,
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Account::Player(p) => write!(f, "player {p}"),
            Account::House => f.write_str("house"),
            Account::InPlay => f.write_str("bets in play"),
        }
    }
}

/// Why money moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A player's stake into bets in play, on acceptance.
    Stake,
    /// A stake back from bets in play to its player (cleared bets, void round).
    Refund,
    /// At settlement: a returned stake (from bets in play) or winnings (from the house).
    Payout,
    /// At settlement: a losing stake from bets in play to the house.
    Loss,
}

/// One transfer between two accounts of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub kind: EntryKind,
    pub from: Account,
    pub to: Account,
    pub amount: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_id: Option<RoundId>,
    /// The wallet transaction that moved the money to or from the player's account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx: Option<TxId>,
}
