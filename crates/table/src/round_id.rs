//! Round ids: unique, sortable, and readable by a person at the table.

use std::fmt;

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
        RoundId(format!("{table}-S{shoe:04}-H{hand:03}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_and_order() {
        assert_eq!(RoundId::new("T01", 3, 42).as_str(), "T01-S0003-H042");
        assert!(RoundId::new("T01", 3, 42) < RoundId::new("T01", 3, 100));
        assert!(RoundId::new("T01", 3, 99) < RoundId::new("T01", 4, 1));
    }
}
