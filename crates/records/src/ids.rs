//! Ids that stored formats carry: shoes, rounds and wallet transactions.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `"{table}-S{shoe:04}-H{hand:03}"`, e.g. `T01-S0003-H042`: the table, the shoe number
/// (1 for the table's first shoe) and the hand within the shoe (1-based, voided rounds
/// included, so no id is ever reused). Ids of one table sort in play order as strings
/// while shoe numbers stay below 10 000 and hands below 1 000 (an 8-deck shoe deals about
/// 80 hands).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RoundId(String);

impl RoundId {
    pub fn new(table: &str, shoe: u32, hand: u32) -> RoundId {
        RoundId(format!("{}-H{hand:03}", ShoeId::new(table, shoe)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RoundId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RoundId {
    /// Wraps a round id read from a request; it matches a round only if it is that round's.
    fn from(text: &str) -> RoundId {
        RoundId(text.to_owned())
    }
}

/// `"{table}-S{shoe:04}"`, e.g. `T01-S0003`: a table's shoe, as players and the archive
/// name it; every [`RoundId`] of the shoe begins with it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShoeId {
    table: String,
    number: u32,
}

/// Why a text is not a shoe id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShoeIdError {
    #[error("`{0}` is not a shoe id like T01-S0003: no `-S` before the shoe's number")]
    NoNumber(String),
    #[error("`{0}` is not a shoe id like T01-S0003: no table before `-S`")]
    NoTable(String),
    #[error("`{text}` is not a shoe id like T01-S0003: `{number}` is not a shoe number")]
    BadNumber { text: String, number: String },
}

impl ShoeId {
    pub fn new(table: &str, number: u32) -> ShoeId {
        ShoeId {
            table: table.to_owned(),
            number,
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// The shoe's number at its table (1 for the table's first shoe).
    pub const fn number(&self) -> u32 {
        self.number
    }
}

impl fmt::Display for ShoeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-S{:04}", self.table, self.number)
    }
}

impl FromStr for ShoeId {
    type Err = ShoeIdError;

    /// The last `-S` splits the table from the number, as table ids may hold `-S` too.
    fn from_str(text: &str) -> Result<ShoeId, ShoeIdError> {
        let (table, number) = text
            .rsplit_once("-S")
            .ok_or_else(|| ShoeIdError::NoNumber(text.to_owned()))?;
        if table.is_empty() {
            return Err(ShoeIdError::NoTable(text.to_owned()));
        }
        let bad = || ShoeIdError::BadNumber {
            text: text.to_owned(),
            number: number.to_owned(),
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(ShoeId::new(table, number.parse().map_err(|_| bad())?))
    }
}

/// The longest transaction id a wallet must accept.
pub const TX_ID_MAX_LEN: usize = 128;

/// A transaction id: unique per movement of money, chosen by the table so that a retry
/// (after a timeout, a crash, a restart) carries the same id and moves money at most once.
/// 1 to [`TX_ID_MAX_LEN`] characters of `A-Z a-z 0-9 : . _ - @` (player ids are token subjects,
/// which may hold `@`), so that it reads the same in a log, a URL, a CSV line and an
/// operator's database.
///
/// The caller derives them from what it can replay exactly (a table: its round, player,
/// bet request and position), never from a client's own text, which could be of any length
/// or alphabet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TxId(String);

/// Why a text is not a transaction id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxIdError {
    #[error("transaction id is empty")]
    Empty,
    #[error("transaction id `{0}…` is longer than {TX_ID_MAX_LEN} characters")]
    TooLong(String),
    #[error("transaction id `{id}`: `{bad}` is not allowed (only A-Z a-z 0-9 : . _ - @)")]
    BadCharacter { id: String, bad: char },
}

impl TxId {
    pub fn new(id: impl Into<String>) -> Result<TxId, TxIdError> {
        let id = id.into();
        if id.is_empty() {
            return Err(TxIdError::Empty);
        }
        if id.len() > TX_ID_MAX_LEN {
            return Err(TxIdError::TooLong(id.chars().take(32).collect()));
        }
        if let Some(bad) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_' | '-' | '@')))
        {
            return Err(TxIdError::BadCharacter { id, bad });
        }
        Ok(TxId(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TxId {
    type Error = TxIdError;
    fn try_from(id: String) -> Result<TxId, TxIdError> {
        TxId::new(id)
    }
}

impl From<TxId> for String {
    fn from(id: TxId) -> String {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shoe_ids_read_back_and_begin_their_rounds_ids() {
        let shoe = ShoeId::new("T01", 3);
        assert_eq!(shoe.to_string(), "T01-S0003");
        assert_eq!("T01-S0003".parse::<ShoeId>(), Ok(shoe.clone()));
        assert!(
            RoundId::new("T01", 3, 42)
                .as_str()
                .starts_with(&format!("{shoe}-H"))
        );
        let dashed: ShoeId = "MY-TABLE-S0120".parse().expect("a shoe id");
        assert_eq!((dashed.table(), dashed.number()), ("MY-TABLE", 120));
    }

    #[test]
    fn a_text_that_is_not_a_shoe_id_is_told_why() {
        let err = |text: &str| text.parse::<ShoeId>().expect_err(text);
        assert_eq!(err("T01"), ShoeIdError::NoNumber("T01".to_owned()));
        assert_eq!(err("-S0003"), ShoeIdError::NoTable("-S0003".to_owned()));
        assert!(matches!(err("T01-Sx"), ShoeIdError::BadNumber { number, .. } if number == "x"));
        assert!(matches!(err("T01-S+3"), ShoeIdError::BadNumber { .. }));
        assert!(matches!(
            err("T01-S99999999999"),
            ShoeIdError::BadNumber { .. }
        ));
    }

    #[test]
    fn format_and_order() {
        assert_eq!(RoundId::new("T01", 3, 42).as_str(), "T01-S0003-H042");
        assert!(RoundId::new("T01", 3, 42) < RoundId::new("T01", 3, 100));
        assert!(RoundId::new("T01", 3, 99) < RoundId::new("T01", 4, 1));
    }
}
