//! The scoreboard roads, outward only: the table keeps the [`Scoreboard`], players draw it.

use banco_rules::Scoreboard;
use banco_rules::roads::{BigRoadEntry, Mark, Prediction, Stats};

use crate::pb;

fn marks(marks: &[Mark]) -> String {
    marks.iter().map(|m| m.letter()).collect()
}

fn mark(mark: Option<Mark>) -> String {
    mark.map(|m| m.letter().to_string()).unwrap_or_default()
}

impl From<Prediction> for pb::RoadPrediction {
    fn from(p: Prediction) -> pb::RoadPrediction {
        pb::RoadPrediction {
            big_eye_boy: mark(p.big_eye_boy),
            small_road: mark(p.small_road),
            cockroach_pig: mark(p.cockroach_pig),
        }
    }
}

impl From<BigRoadEntry> for pb::BigRoadEntry {
    fn from(entry: BigRoadEntry) -> pb::BigRoadEntry {
        pb::BigRoadEntry {
            side: pb::Side::from(entry.side).into(),
            ties: entry.ties,
        }
    }
}

impl From<&Stats> for pb::RoadStats {
    fn from(stats: &Stats) -> pb::RoadStats {
        pb::RoadStats {
            banker: stats.banker,
            player: stats.player,
            tie: stats.tie,
            hands: stats.hands,
            streak_side: stats
                .streak
                .map_or(pb::Side::Unspecified, |s| pb::Side::from(s.side))
                .into(),
            streak_length: stats.streak.map_or(0, |s| s.length),
            longest_banker: stats.longest_banker,
            longest_player: stats.longest_player,
        }
    }
}

impl From<&Scoreboard> for pb::Roads {
    fn from(board: &Scoreboard) -> pb::Roads {
        let predict = board.predict();
        pb::Roads {
            bead_plate: board.results().iter().map(|w| w.letter()).collect(),
            big_road: board
                .big_road()
                .columns()
                .iter()
                .map(|column| pb::BigRoadColumn {
                    entries: column.iter().copied().map(pb::BigRoadEntry::from).collect(),
                })
                .collect(),
            pending_ties: board.big_road().pending_ties(),
            big_eye_boy: marks(board.big_eye_boy().marks()),
            small_road: marks(board.small_road().marks()),
            cockroach_pig: marks(board.cockroach_pig().marks()),
            banker_ask: Some(predict.banker.into()),
            player_ask: Some(predict.player.into()),
            stats: Some(board.stats().into()),
        }
    }
}
