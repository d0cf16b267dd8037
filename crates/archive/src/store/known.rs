//! What the committer knows of the database as its last transaction left it: each table's
//! chain head and the Stats rows it has read or written. The committer is the store's
//! only writer, so what it committed is what is stored; knowing it saves reading the same
//! rows back at every batch (the reads were a third of an append's time).
//!
//! Only a committed transaction updates it; a failed one clears it, so that the next batch
//! reads everything again from the database, whatever the failure left.

use std::collections::HashMap;

use super::aggregate::{Folded, PositionTotals, ScopeTotals};
use super::append::LastLink;

/// Rows remembered at most (about 200 bytes each); past that the Stats rows are forgotten
/// and read again when next touched.
const MAX_STATS_ROWS: usize = 200_000;

#[derive(Debug, Default)]
pub(crate) struct Known {
    /// Table → its last stored round. A table absent here may still have rounds stored.
    pub(crate) heads: HashMap<String, LastLink>,
    totals: HashMap<String, ScopeTotals>,
    positions: HashMap<String, PositionTotals>,
}

impl Known {
    /// Fills the touched rows of `folded` that are known; returns the ids of the others
    /// (totals, positions), to be read from the database.
    pub(crate) fn fill(&self, folded: &mut Folded) -> (Vec<String>, Vec<String>) {
        let mut missing_totals = Vec::new();
        for (id, row) in &mut folded.totals {
            match self.totals.get(id) {
                Some(t) => row.3 = t.clone(),
                None => missing_totals.push(id.clone()),
            }
        }
        let mut missing_positions = Vec::new();
        for (id, row) in &mut folded.positions {
            match self.positions.get(id) {
                Some(p) => row.3 = p.clone(),
                None => missing_positions.push(id.clone()),
            }
        }
        (missing_totals, missing_positions)
    }

    /// Records what a committed transaction wrote.
    pub(crate) fn committed(&mut self, heads: HashMap<String, LastLink>, folded: &Folded) {
        self.heads.extend(heads);
        if self.totals.len() + self.positions.len() > MAX_STATS_ROWS {
            self.totals.clear();
            self.positions.clear();
        }
        for (id, row) in &folded.totals {
            self.totals.insert(id.clone(), row.3.clone());
        }
        for (id, row) in &folded.positions {
            self.positions.insert(id.clone(), row.3.clone());
        }
    }

    /// Forgets everything (after a failed transaction).
    pub(crate) fn forget(&mut self) {
        *self = Known::default();
    }
}
