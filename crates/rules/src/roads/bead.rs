//! The bead plate: every result, ties included, in the order dealt.

use serde::{Serialize, Serializer};

use super::grid::ROWS;
use crate::outcome::Winner;

/// One bead per result, filling columns of six from top to bottom, then left to right.
///
/// Serialized as its columns, each a list of `"B"`, `"P"` or `"T"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BeadPlate {
    results: Vec<Winner>,
}

impl BeadPlate {
    pub fn push(&mut self, winner: Winner) {
        self.results.push(winner);
    }

    /// Every result so far, oldest first.
    pub fn results(&self) -> &[Winner] {
        &self.results
    }

    /// The columns as drawn: each full column holds six results, the last may hold fewer.
    pub fn columns(&self) -> std::slice::Chunks<'_, Winner> {
        self.results.chunks(ROWS)
    }
}

impl Serialize for BeadPlate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            self.columns()
                .map(|column| column.iter().map(|w| w.letter()).collect::<Vec<char>>()),
        )
    }
}
