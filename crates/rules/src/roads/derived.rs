//! The derived roads: Big Eye Boy, Small Road and Cockroach Pig.
//!
//! None of them records who won. Each asks of every new Big Road entry "does the road look
//! as regular here as it did `k` columns back?" and marks Red for yes (a repeat), Blue for
//! no (a break). Ties play no part, since they have no Big Road entry.

use serde::Serialize;

use super::big_road::{BigRoad, Slot};
use super::grid::{GridCell, Placer};

/// A derived road's mark; `"R"` or `"B"` on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Mark {
    /// The Big Road repeats its pattern.
    #[serde(rename = "R")]
    Red,
    /// The Big Road breaks its pattern.
    #[serde(rename = "B")]
    Blue,
}

impl Mark {
    pub const fn letter(self) -> char {
        match self {
            Mark::Red => 'R',
            Mark::Blue => 'B',
        }
    }
}

/// Which derived road; each compares a column with the one `offset` columns before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DerivedKind {
    BigEyeBoy,
    SmallRoad,
    CockroachPig,
}

impl DerivedKind {
    pub const ALL: [DerivedKind; 3] = [
        DerivedKind::BigEyeBoy,
        DerivedKind::SmallRoad,
        DerivedKind::CockroachPig,
    ];

    /// How many Big Road columns back this road looks: 1, 2 or 3.
    pub const fn offset(self) -> usize {
        match self {
            DerivedKind::BigEyeBoy => 1,
            DerivedKind::SmallRoad => 2,
            DerivedKind::CockroachPig => 3,
        }
    }

    /// The name people know it by: `Big Eye Boy`.
    pub const fn title(self) -> &'static str {
        match self {
            DerivedKind::BigEyeBoy => "Big Eye Boy",
            DerivedKind::SmallRoad => "Small Road",
            DerivedKind::CockroachPig => "Cockroach Pig",
        }
    }

    /// The wire name, as in JSON keys.
    pub const fn name(self) -> &'static str {
        match self {
            DerivedKind::BigEyeBoy => "big_eye_boy",
            DerivedKind::SmallRoad => "small_road",
            DerivedKind::CockroachPig => "cockroach_pig",
        }
    }
}

/// The mark road `kind` gets for a Big Road entry at `slot`, or `None` if the road has not
/// started there yet.
///
/// Only the columns before `slot.column` are read, so this also answers for an entry that
/// has not been dealt (see [`BigRoad::next_slot`]). With `k` the road's offset, `c` the
/// column and `r` the row:
/// - the road starts at the entry (column k, row 1) if there is one, else at (column k+1,
///   row 0); earlier entries get no mark;
/// - a new column (`r == 0`) is Red when columns c-1 and c-1-k are equally long, else Blue;
/// - otherwise column c-k decides: Red if it reaches row r, Blue if it stops exactly at row
///   r-1 (the first empty cell breaks the pattern), Red if it stopped earlier still.
pub fn mark_for(big_road: &BigRoad, slot: Slot, kind: DerivedKind) -> Option<Mark> {
    let k = kind.offset();
    let Slot { column: c, row: r } = slot;
    let columns = big_road.columns();
    let len = |i: usize| columns.get(i).map_or(0, Vec::len);
    let same = if r == 0 {
        if c < k + 1 {
            return None;
        }
        len(c - 1) == len(c - 1 - k)
    } else {
        if c < k {
            return None;
        }
        len(c - k) != r
    };
    Some(if same { Mark::Red } else { Mark::Blue })
}

/// One derived road: its marks in order, and the marks placed on a six-row board the way
/// the Big Road is (a new column when the colour changes, dragon tails past six).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DerivedRoad {
    kind: DerivedKind,
    marks: Vec<Mark>,
    grid: Vec<GridCell<Mark>>,
    #[serde(skip)]
    placer: Placer,
}

impl DerivedRoad {
    pub fn new(kind: DerivedKind) -> DerivedRoad {
        DerivedRoad {
            kind,
            marks: Vec::new(),
            grid: Vec::new(),
            placer: Placer::default(),
        }
    }

    pub fn kind(&self) -> DerivedKind {
        self.kind
    }

    /// Adds the mark, if any, for the Big Road entry just placed at `slot`.
    pub(crate) fn record(&mut self, big_road: &BigRoad, slot: Slot) -> Option<Mark> {
        let mark = mark_for(big_road, slot, self.kind)?;
        let new_column = self.marks.last() != Some(&mark);
        let pos = self.placer.place(new_column);
        self.marks.push(mark);
        self.grid.push(GridCell {
            row: pos.row,
            col: pos.col,
            entry: mark,
        });
        Some(mark)
    }

    /// Every mark, oldest first.
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// Every mark with its place on the six-row board, oldest first.
    pub fn grid(&self) -> &[GridCell<Mark>] {
        &self.grid
    }

    /// Columns the board needs, tails included.
    pub fn grid_width(&self) -> usize {
        self.placer.width()
    }
}
