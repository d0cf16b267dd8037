//! The scoreboard of a live table: bead plate, Big Road, the three derived roads, totals
//! and streaks, kept up to date one result at a time.
//!
//! Players read these boards to follow the shoe, so they must match what every other live
//! table draws; the rules are the standard ones (see [`derived::mark_for`] for the derived
//! roads and [`grid`] for the six-row placement with dragon tails).

pub mod bead;
pub mod big_road;
pub mod derived;
pub mod grid;
pub mod stats;

use serde::{Serialize, Serializer};

pub use bead::BeadPlate;
pub use big_road::{BigRoad, BigRoadEntry, Slot};
pub use derived::{DerivedKind, DerivedRoad, Mark, mark_for};
pub use grid::{GridCell, Position, ROWS};
pub use stats::{Stats, Streak};

use crate::outcome::{Side, Winner};

/// How many recent results a player sees in the history strip (seed 001).
pub const LAST_RESULTS_SHOWN: usize = 59;

/// Every road of one shoe, updated in constant amortised time per result.
///
/// Serialized with the keys `bead_plate`, `big_road` (the logical columns), `pending_ties`,
/// `big_eye_boy`, `small_road`, `cockroach_pig` (flat lists of marks), `predict` and
/// `stats`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scoreboard {
    bead_plate: BeadPlate,
    big_road: BigRoad,
    derived: [DerivedRoad; 3],
    stats: Stats,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Scoreboard::new()
    }
}

impl Scoreboard {
    pub fn new() -> Scoreboard {
        Scoreboard {
            bead_plate: BeadPlate::default(),
            big_road: BigRoad::default(),
            derived: DerivedKind::ALL.map(DerivedRoad::new),
            stats: Stats::default(),
        }
    }

    pub fn from_results(results: &[Winner]) -> Scoreboard {
        results.iter().copied().collect()
    }

    /// Records the next result on every road.
    pub fn push(&mut self, winner: Winner) {
        self.bead_plate.push(winner);
        self.stats.push(winner);
        if let Some(slot) = self.big_road.push(winner) {
            for road in &mut self.derived {
                road.record(&self.big_road, slot);
            }
        }
    }

    /// Every result so far, oldest first.
    pub fn results(&self) -> &[Winner] {
        self.bead_plate.results()
    }

    /// The `n` most recent results (all of them if fewer), oldest first; players are shown
    /// [`LAST_RESULTS_SHOWN`].
    pub fn last_results(&self, n: usize) -> &[Winner] {
        let results = self.results();
        &results[results.len().saturating_sub(n)..]
    }

    pub fn bead_plate(&self) -> &BeadPlate {
        &self.bead_plate
    }

    pub fn big_road(&self) -> &BigRoad {
        &self.big_road
    }

    pub fn derived(&self, kind: DerivedKind) -> &DerivedRoad {
        match kind {
            DerivedKind::BigEyeBoy => &self.derived[0],
            DerivedKind::SmallRoad => &self.derived[1],
            DerivedKind::CockroachPig => &self.derived[2],
        }
    }

    pub fn big_eye_boy(&self) -> &DerivedRoad {
        self.derived(DerivedKind::BigEyeBoy)
    }

    pub fn small_road(&self) -> &DerivedRoad {
        self.derived(DerivedKind::SmallRoad)
    }

    pub fn cockroach_pig(&self) -> &DerivedRoad {
        self.derived(DerivedKind::CockroachPig)
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The marks each derived road would get if `side` won the next coup.
    pub fn predict_next(&self, side: Side) -> Prediction {
        let slot = self.big_road.next_slot(side);
        let mark = |kind| mark_for(&self.big_road, slot, kind);
        Prediction {
            big_eye_boy: mark(DerivedKind::BigEyeBoy),
            small_road: mark(DerivedKind::SmallRoad),
            cockroach_pig: mark(DerivedKind::CockroachPig),
        }
    }

    /// [`predict_next`](Self::predict_next) for both sides, as the "Banker ask / Player ask"
    /// buttons show it. A tie would add no mark anywhere.
    pub fn predict(&self) -> Predict {
        Predict {
            banker: self.predict_next(Side::Banker),
            player: self.predict_next(Side::Player),
        }
    }
}

impl FromIterator<Winner> for Scoreboard {
    fn from_iter<I: IntoIterator<Item = Winner>>(iter: I) -> Scoreboard {
        let mut board = Scoreboard::new();
        board.extend(iter);
        board
    }
}

impl Extend<Winner> for Scoreboard {
    fn extend<I: IntoIterator<Item = Winner>>(&mut self, iter: I) {
        for winner in iter {
            self.push(winner);
        }
    }
}

impl Serialize for Scoreboard {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            bead_plate: &'a BeadPlate,
            big_road: &'a [Vec<BigRoadEntry>],
            pending_ties: u32,
            big_eye_boy: &'a [Mark],
            small_road: &'a [Mark],
            cockroach_pig: &'a [Mark],
            predict: Predict,
            stats: &'a Stats,
        }
        Wire {
            bead_plate: &self.bead_plate,
            big_road: self.big_road.columns(),
            pending_ties: self.big_road.pending_ties(),
            big_eye_boy: self.big_eye_boy().marks(),
            small_road: self.small_road().marks(),
            cockroach_pig: self.cockroach_pig().marks(),
            predict: self.predict(),
            stats: &self.stats,
        }
        .serialize(serializer)
    }
}

/// The mark each derived road would get from one more win of a given side; `None` where
/// that road would still have no mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Prediction {
    pub big_eye_boy: Option<Mark>,
    pub small_road: Option<Mark>,
    pub cockroach_pig: Option<Mark>,
}

impl Prediction {
    pub fn get(&self, kind: DerivedKind) -> Option<Mark> {
        match kind {
            DerivedKind::BigEyeBoy => self.big_eye_boy,
            DerivedKind::SmallRoad => self.small_road,
            DerivedKind::CockroachPig => self.cockroach_pig,
        }
    }
}

/// Predictions for a Banker win (`"B"` on the wire) and a Player win (`"P"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Predict {
    #[serde(rename = "B")]
    pub banker: Prediction,
    #[serde(rename = "P")]
    pub player: Prediction,
}

impl Predict {
    pub fn get(&self, side: Side) -> Prediction {
        match side {
            Side::Banker => self.banker,
            Side::Player => self.player,
        }
    }
}

/// The scoreboard letter of a side.
pub const fn side_letter(side: Side) -> char {
    match side {
        Side::Banker => 'B',
        Side::Player => 'P',
    }
}

/// Serializes a [`Side`] as its scoreboard letter, `"B"` or `"P"`.
fn serialize_side_letter<S: Serializer>(side: &Side, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_char(side_letter(*side))
}
