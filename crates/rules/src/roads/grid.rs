//! Placing a road's logical columns on a board of six rows.
//!
//! A board is only six cells tall, so a streak longer than that cannot stack straight
//! down: it turns right along the row where it was stopped (the "dragon tail"). A streak
//! is also stopped by a cell already taken below it, which is how a column that starts
//! beside an earlier tail turns right one row higher. Each new logical column starts at
//! the top of the board, one column to the right of where the previous one started (not
//! after its tail), as the tables draw it.

use serde::Serialize;

/// Rows on every road board.
pub const ROWS: usize = 6;

/// Where a cell sits on a board; `row` 0 is the top, `col` 0 the left edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Position {
    pub row: usize,
    pub col: usize,
}

/// One drawn cell of a board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GridCell<T> {
    pub row: usize,
    pub col: usize,
    pub entry: T,
}

/// Assigns board positions to the entries of a road as they arrive.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placer {
    /// One bit per row, one byte per board column.
    occupied: Vec<u8>,
    last: Option<Position>,
    /// Board column where the current logical column started.
    start_col: usize,
    /// The current logical column has turned right into its tail.
    turned: bool,
}

impl Placer {
    fn is_taken(&self, row: usize, col: usize) -> bool {
        self.occupied
            .get(col)
            .is_some_and(|bits| bits & (1 << row) != 0)
    }

    fn take(&mut self, pos: Position) {
        if self.occupied.len() <= pos.col {
            self.occupied.resize(pos.col + 1, 0);
        }
        if let Some(bits) = self.occupied.get_mut(pos.col) {
            *bits |= 1 << pos.row;
        }
    }

    /// Board width so far: one past the rightmost taken column.
    pub(crate) fn width(&self) -> usize {
        self.occupied.len()
    }

    /// Places the next entry: the first of a new logical column, or the next of the current
    /// one. The first entry ever always starts a column, whatever `new_column` says.
    pub(crate) fn place(&mut self, new_column: bool) -> Position {
        let pos = match self.last {
            Some(last) if !new_column => self.below_or_right(last),
            last => {
                let mut col = last.map_or(0, |_| self.start_col + 1);
                // Only a tail running along the top row can be here; step past it so that
                // no two entries ever share a cell.
                while self.is_taken(0, col) {
                    col += 1;
                }
                self.start_col = col;
                self.turned = false;
                Position { row: 0, col }
            }
        };
        self.take(pos);
        self.last = Some(pos);
        pos
    }

    fn below_or_right(&mut self, last: Position) -> Position {
        let below = last.row + 1;
        if !self.turned && below < ROWS && !self.is_taken(below, last.col) {
            return Position {
                row: below,
                col: last.col,
            };
        }
        self.turned = true;
        let mut col = last.col + 1;
        // Earlier tails lie wholly left of this column's start or on other rows, so this
        // loop never runs more than once; it is here so the board can never overlap.
        while self.is_taken(last.row, col) {
            col += 1;
        }
        Position { row: last.row, col }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place_columns(lengths: &[usize]) -> Vec<Vec<(usize, usize)>> {
        let mut placer = Placer::default();
        lengths
            .iter()
            .map(|&len| {
                (0..len)
                    .map(|i| {
                        let p = placer.place(i == 0);
                        (p.row, p.col)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn short_columns_stack_down_side_by_side() {
        assert_eq!(
            place_columns(&[2, 1, 3]),
            vec![
                vec![(0, 0), (1, 0)],
                vec![(0, 1)],
                vec![(0, 2), (1, 2), (2, 2)]
            ]
        );
    }

    /// A first column of eight: down the six rows, then right along the bottom one.
    const EIGHT_FROM_THE_LEFT: [(usize, usize); 8] = [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (4, 0),
        (5, 0),
        (5, 1),
        (5, 2),
    ];

    #[test]
    fn a_streak_of_eight_turns_right_on_the_bottom_row() {
        assert_eq!(
            place_columns(&[8, 1]),
            vec![EIGHT_FROM_THE_LEFT.to_vec(), vec![(0, 1)],]
        );
    }

    #[test]
    fn a_column_beside_a_tail_turns_one_row_higher() {
        // Column 0 has a tail along row 5 under columns 1 and 2; column 1 (7 long) is
        // stopped at row 4 and turns right there, over the tail.
        assert_eq!(
            place_columns(&[8, 7]),
            vec![
                EIGHT_FROM_THE_LEFT.to_vec(),
                vec![(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (4, 2), (4, 3)],
            ]
        );
    }

    #[test]
    fn a_tail_on_the_top_row_pushes_the_next_start_right() {
        // Six columns each stopped one row higher by the tails before them; the sixth turns
        // along row 0 from column 6 to 12, so the seventh starts after it, at column 13.
        let cols = place_columns(&[8, 8, 8, 8, 8, 8, 1]);
        assert_eq!(cols[1][4..], [(4, 1), (4, 2), (4, 3), (4, 4)]);
        assert_eq!(cols[5], (5..=12).map(|c| (0, c)).collect::<Vec<_>>());
        assert_eq!(cols[6], vec![(0, 13)]);
    }
}
