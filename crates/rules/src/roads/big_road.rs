//! The Big Road: streaks of Banker and Player wins, with ties marked on the cell before.

use serde::Serialize;

use super::grid::{GridCell, Placer, Position};
use crate::outcome::{Side, Winner};

/// One cell of the Big Road: a Banker or Player win and the ties dealt right after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct BigRoadEntry {
    /// `"B"` or `"P"` on the wire.
    #[serde(serialize_with = "super::serialize_side_letter")]
    pub side: Side,
    pub ties: u32,
}

/// Where an entry sits among the Big Road's logical columns (not on the drawn board).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Slot {
    pub column: usize,
    pub row: usize,
}

/// The Big Road, both as logical columns (one per streak, any length) and as placed on a
/// six-row board with dragon tails.
///
/// A tie has no cell of its own: it is counted on the entry before it. Ties dealt before the
/// first Banker or Player win have no entry to sit on yet, so they wait in
/// [`pending_ties`](Self::pending_ties) and are counted on the first entry when it comes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BigRoad {
    columns: Vec<Vec<BigRoadEntry>>,
    pending_ties: u32,
    /// Board position of every entry, in the same shape as `columns`.
    positions: Vec<Vec<Position>>,
    placer: Placer,
}

impl BigRoad {
    /// Records a result. Returns where the new entry went, or `None` for a tie.
    pub fn push(&mut self, winner: Winner) -> Option<Slot> {
        let Some(side) = winner.side() else {
            match self.columns.last_mut().and_then(|column| column.last_mut()) {
                Some(entry) => entry.ties = entry.ties.saturating_add(1),
                None => self.pending_ties = self.pending_ties.saturating_add(1),
            }
            return None;
        };
        let slot = self.next_slot(side);
        let entry = BigRoadEntry {
            side,
            ties: std::mem::take(&mut self.pending_ties),
        };
        let new_column = slot.row == 0;
        let pos = self.placer.place(new_column);
        if new_column {
            self.columns.push(vec![entry]);
            self.positions.push(vec![pos]);
        } else if let (Some(column), Some(positions)) =
            (self.columns.last_mut(), self.positions.last_mut())
        {
            column.push(entry);
            positions.push(pos);
        }
        Some(slot)
    }

    /// Where a win of `side` would go if it were dealt next.
    pub fn next_slot(&self, side: Side) -> Slot {
        match self.columns.last() {
            Some(column) if column.first().is_some_and(|e| e.side == side) => Slot {
                column: self.columns.len() - 1,
                row: column.len(),
            },
            _ => Slot {
                column: self.columns.len(),
                row: 0,
            },
        }
    }

    /// One column per streak, oldest first; a column is as long as its streak.
    pub fn columns(&self) -> &[Vec<BigRoadEntry>] {
        &self.columns
    }

    /// Ties dealt before any Banker or Player win, not yet on any entry.
    pub fn pending_ties(&self) -> u32 {
        self.pending_ties
    }

    /// Number of entries, i.e. of Banker and Player wins.
    pub fn entry_count(&self) -> usize {
        self.columns.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The most recent entry.
    pub fn last(&self) -> Option<&BigRoadEntry> {
        self.columns.last().and_then(|column| column.last())
    }

    /// Where an entry is drawn on the six-row board.
    pub fn position(&self, slot: Slot) -> Option<Position> {
        self.positions.get(slot.column)?.get(slot.row).copied()
    }

    /// Every entry with its place on the six-row board, in the order dealt.
    pub fn grid(&self) -> Vec<GridCell<BigRoadEntry>> {
        self.columns
            .iter()
            .zip(&self.positions)
            .flat_map(|(column, positions)| column.iter().zip(positions))
            .map(|(&entry, pos)| GridCell {
                row: pos.row,
                col: pos.col,
                entry,
            })
            .collect()
    }

    /// Columns the board needs, tails included.
    pub fn grid_width(&self) -> usize {
        self.placer.width()
    }
}

impl Serialize for BigRoad {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            columns: &'a [Vec<BigRoadEntry>],
            pending_ties: u32,
            grid: Vec<GridCell<BigRoadEntry>>,
        }
        Wire {
            columns: &self.columns,
            pending_ties: self.pending_ties,
            grid: self.grid(),
        }
        .serialize(serializer)
    }
}
