//! Scoreboard roads against hand-worked shoes, and invariants over random ones.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use banco_rules::roads::{
    BigRoadEntry, DerivedKind, GridCell, LAST_RESULTS_SHOWN, Mark, Prediction, Scoreboard, Streak,
};
use banco_rules::{Side, Winner};
use proptest::prelude::*;

const R: Mark = Mark::Red;
const U: Mark = Mark::Blue; // "blUe": `B` would read as Banker in these tables

fn results(text: &str) -> Vec<Winner> {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| Winner::from_letter(c).unwrap())
        .collect()
}

fn board(text: &str) -> Scoreboard {
    Scoreboard::from_results(&results(text))
}

/// The Big Road's logical columns as text: `B`/`P` per entry, followed by its tie count if any.
fn big_road_text(board: &Scoreboard) -> Vec<String> {
    board
        .big_road()
        .columns()
        .iter()
        .map(|column| {
            column
                .iter()
                .map(|e| {
                    let side = if e.side == Side::Banker { "B" } else { "P" };
                    match e.ties {
                        0 => side.to_string(),
                        n => format!("{side}{n}"),
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn marks(board: &Scoreboard, kind: DerivedKind) -> Vec<Mark> {
    board.derived(kind).marks().to_vec()
}

fn cells<T: Copy>(grid: &[GridCell<T>]) -> Vec<(usize, usize)> {
    grid.iter().map(|c| (c.row, c.col)).collect()
}

#[test]
fn empty_scoreboard() {
    let b = Scoreboard::from_results(&[]);
    assert_eq!(b, Scoreboard::new());
    assert!(b.results().is_empty());
    assert_eq!(b.bead_plate().columns().count(), 0);
    assert!(b.big_road().is_empty());
    assert_eq!(b.big_road().pending_ties(), 0);
    assert!(b.big_road().grid().is_empty());
    for kind in DerivedKind::ALL {
        assert!(b.derived(kind).marks().is_empty());
        assert!(b.derived(kind).grid().is_empty());
    }
    let none = Prediction {
        big_eye_boy: None,
        small_road: None,
        cockroach_pig: None,
    };
    assert_eq!(b.predict().banker, none);
    assert_eq!(b.predict().player, none);
    assert_eq!(b.stats().hands, 0);
    assert_eq!(b.stats().streak, None);
    assert!(b.last_results(LAST_RESULTS_SHOWN).is_empty());
}

#[test]
fn bead_plate_fills_columns_of_six() {
    let b = board("BPTBBP PTB");
    let columns: Vec<&[Winner]> = b.bead_plate().columns().collect();
    assert_eq!(columns, vec![&results("BPTBBP")[..], &results("PTB")[..]]);
}

#[test]
fn big_road_columns_and_ties() {
    // (results, logical columns, ties still pending)
    let cases: &[(&str, &[&str], u32)] = &[
        ("", &[], 0),
        ("T", &[], 1),
        ("TTT", &[], 3),
        // Leading ties wait for the first entry, then sit on it with the ties after it.
        ("TTBTPPT", &["B3", "P P1"], 0),
        ("B", &["B"], 0),
        ("BT", &["B1"], 0),
        ("BTT", &["B2"], 0),
        // A tie sits on the entry before it and does not break the streak.
        ("BTB", &["B1 B"], 0),
        ("BPPBBBP", &["B", "P P", "B B B", "P"], 0),
        ("PTBTTBP", &["P1", "B2 B", "P"], 0),
    ];
    for &(text, columns, pending) in cases {
        let b = board(text);
        assert_eq!(big_road_text(&b), columns, "{text}");
        assert_eq!(b.big_road().pending_ties(), pending, "{text}");
    }
}

#[test]
fn dragon_tails_on_the_big_road_grid() {
    // (results, board (row, col) of every entry in order)
    let cases: &[(&str, &[(usize, usize)])] = &[
        ("BBPB", &[(0, 0), (1, 0), (0, 1), (0, 2)]),
        // Six fit; the seventh and eighth Banker turn right along the bottom row, and the
        // Player column still starts at the top of column 1.
        (
            "BBBBBBBBP",
            &[
                (0, 0),
                (1, 0),
                (2, 0),
                (3, 0),
                (4, 0),
                (5, 0),
                (5, 1),
                (5, 2),
                (0, 1),
            ],
        ),
        // Seven Players beside that tail hit it at row 5 and turn right at row 4 instead;
        // the next Banker starts at the top of column 2.
        (
            "BBBBBBBB PPPPPPP B",
            &[
                (0, 0),
                (1, 0),
                (2, 0),
                (3, 0),
                (4, 0),
                (5, 0),
                (5, 1),
                (5, 2),
                (0, 1),
                (1, 1),
                (2, 1),
                (3, 1),
                (4, 1),
                (4, 2),
                (4, 3),
                (0, 2),
            ],
        ),
        // A short column beside a tail is not disturbed by it.
        (
            "BBBBBBB PP B",
            &[
                (0, 0),
                (1, 0),
                (2, 0),
                (3, 0),
                (4, 0),
                (5, 0),
                (5, 1),
                (0, 1),
                (1, 1),
                (0, 2),
            ],
        ),
    ];
    for &(text, expected) in cases {
        let b = board(text);
        assert_eq!(cells(&b.big_road().grid()), expected, "{text}");
    }
}

#[test]
fn big_road_grid_carries_ties() {
    let b = board("BBBBBBBT");
    let last = *b.big_road().grid().last().unwrap();
    assert_eq!(
        (last.row, last.col, last.entry),
        (
            5,
            1,
            BigRoadEntry {
                side: Side::Banker,
                ties: 1
            }
        )
    );
}

/// The shoe `BB PPP B PP BBB P` worked by hand. Big Road columns (lengths):
/// c0 = BB (2), c1 = PPP (3), c2 = B (1), c3 = PP (2), c4 = BBB (3), c5 = P (1).
const WORKED: &str = "BB PPP B PP BBB P";

#[test]
fn derived_roads_of_the_worked_shoe() {
    let b = board(WORKED);
    // Big Eye Boy (k = 1) starts at (c1, r1) since c1 has a second row.
    //   (1,1): c0 reaches row 1                    -> R
    //   (1,2): c0 stops at row 1, row 2 first empty -> B
    //   (2,0): len c1 = 3 vs len c0 = 2              -> B
    //   (3,0): 1 vs 3 -> B;  (3,1): c2 stops at row 0 -> B;  (4,0): 2 vs 1 -> B
    //   (4,1): c3 reaches row 1 -> R;  (4,2): c3 stops at row 1 -> B;  (5,0): 3 vs 2 -> B
    assert_eq!(
        marks(&b, DerivedKind::BigEyeBoy),
        [R, U, U, U, U, U, R, U, U]
    );
    // Small Road (k = 2): c2 has one row, so it starts at (c3, r0).
    //   (3,0): len c2 = 1 vs len c0 = 2 -> B;  (3,1): c1 reaches row 1 -> R
    //   (4,0): 2 vs 3 -> B;  (4,1): c2 stops at row 0 -> B
    //   (4,2): c2 was already empty at row 1 -> R;  (5,0): 3 vs 1 -> B
    assert_eq!(marks(&b, DerivedKind::SmallRoad), [U, R, U, U, R, U]);
    // Cockroach Pig (k = 3) starts at (c3, r1).
    //   (3,1): c0 reaches row 1 -> R;  (4,0): len c3 = 2 vs len c0 = 2 -> R
    //   (4,1), (4,2): c1 reaches rows 1 and 2 -> R R;  (5,0): 3 vs 3 -> R
    assert_eq!(marks(&b, DerivedKind::CockroachPig), [R, R, R, R, R]);
}

#[test]
fn each_derived_road_starts_where_the_rule_says() {
    // (results, Big Eye Boy, Small Road, Cockroach Pig)
    type Case = (
        &'static str,
        &'static [Mark],
        &'static [Mark],
        &'static [Mark],
    );
    let cases: &[Case] = &[
        ("B", &[], &[], &[]),
        ("BP", &[], &[], &[]),
        ("BBB", &[], &[], &[]),
        // Big Eye Boy from the 2nd column's 2nd row: c0 stops at row 0 -> B.
        ("BPP", &[U], &[], &[]),
        // ...or, with a one-row 2nd column, from the 3rd column's first: 1 vs 1 -> R.
        ("BPB", &[R], &[], &[]),
        ("BBPB", &[U], &[], &[]),
        // Small Road from the 3rd column's 2nd row: c0 stops at row 0 -> B.
        ("BPBB", &[R, U], &[U], &[]),
        // ...or from the 4th column's first: len c2 = 1 vs len c0 = 1 -> R.
        ("BPBP", &[R, R], &[R], &[]),
        // Cockroach Pig from the 4th column's 2nd row: c0 stops at row 0 -> B.
        ("BPBPP", &[R, R, U], &[R, U], &[U]),
        // ...or from the 5th column's first: len c3 = 1 vs len c0 = 1 -> R.
        ("BPBPB", &[R, R, R], &[R, R], &[R]),
        // Ties change nothing.
        ("TBTPTBTPTBT", &[R, R, R], &[R, R], &[R]),
    ];
    for &(text, beb, sr, cp) in cases {
        let b = board(text);
        assert_eq!(marks(&b, DerivedKind::BigEyeBoy), beb, "big eye boy {text}");
        assert_eq!(marks(&b, DerivedKind::SmallRoad), sr, "small road {text}");
        assert_eq!(
            marks(&b, DerivedKind::CockroachPig),
            cp,
            "cockroach pig {text}"
        );
    }
}

#[test]
fn the_three_cases_of_the_rule() {
    // The last mark of Big Eye Boy (k = 1) after each shoe, one case per line.
    let cases: &[(&str, Mark)] = &[
        // New column, the two columns before it equally long: BB | PP | B -> R.
        ("BBPPB", R),
        // New column, the two columns before it of different lengths: BB | P | B -> B.
        ("BBPB", U),
        // Down a column, the column before reaches this row: BBB | PP -> R.
        ("BBBPP", R),
        // Down a column, the column before stopped one row up (first empty): BB | PPP -> B.
        ("BBPPP", U),
        // Down a column, the column before already empty one row up: B | PPP -> R.
        ("BPPP", R),
    ];
    for &(text, mark) in cases {
        assert_eq!(
            board(text).big_eye_boy().marks().last(),
            Some(&mark),
            "{text}"
        );
    }
}

#[test]
fn predict_the_next_marks() {
    let b = board(WORKED);
    // Banker next opens c6 at row 0: compare len c5 = 1 with c4 = 3, c3 = 2, c2 = 1.
    assert_eq!(
        b.predict().banker,
        Prediction {
            big_eye_boy: Some(U),
            small_road: Some(U),
            cockroach_pig: Some(R),
        }
    );
    // Player next goes to (c5, r1): c4 and c3 reach row 1, c2 stops at row 0.
    assert_eq!(
        b.predict().player,
        Prediction {
            big_eye_boy: Some(R),
            small_road: Some(R),
            cockroach_pig: Some(U),
        }
    );
    // Too early for some roads: after `BP`, Banker opens c2 (Big Eye Boy only), Player
    // goes to (c1, r1) (Big Eye Boy only).
    let early = board("BP");
    assert_eq!(
        early.predict().banker,
        Prediction {
            big_eye_boy: Some(R),
            small_road: None,
            cockroach_pig: None,
        }
    );
    assert_eq!(early.predict().player.big_eye_boy, Some(U));
    assert_eq!(early.predict().player.small_road, None);
}

#[test]
fn derived_road_grid_has_dragon_tails() {
    // Twelve alternating results: Big Eye Boy is Red from c2 to c11, ten marks in one
    // column of its own board, the last four along the bottom row.
    let b = board("BPBPBPBPBPBP");
    let beb = b.big_eye_boy();
    assert_eq!(beb.marks(), [R; 10]);
    assert_eq!(
        cells(beb.grid()),
        [
            (0, 0),
            (1, 0),
            (2, 0),
            (3, 0),
            (4, 0),
            (5, 0),
            (5, 1),
            (5, 2),
            (5, 3),
            (5, 4)
        ]
    );
    // A change of colour opens a new column of the derived board.
    let worked = board(WORKED);
    assert_eq!(
        cells(worked.small_road().grid()),
        [(0, 0), (0, 1), (0, 2), (1, 2), (0, 3), (0, 4)]
    );
}

#[test]
fn statistics() {
    let b = board("TBBTBPPTP BBBBBBBB P");
    let s = b.stats();
    assert_eq!((s.banker, s.player, s.tie, s.hands), (11, 4, 3, 18));
    assert_eq!(
        s.streak,
        Some(Streak {
            side: Side::Player,
            length: 1
        })
    );
    assert_eq!((s.longest_banker, s.longest_player), (8, 3));

    // Ties do not break a streak.
    let s = *board("PTPTTP").stats();
    assert_eq!(
        s.streak,
        Some(Streak {
            side: Side::Player,
            length: 3
        })
    );
    assert_eq!(board("TT").stats().streak, None);
}

#[test]
fn last_results_shown_to_players() {
    let all: Vec<Winner> = results(&"BPT".repeat(30));
    let b = Scoreboard::from_results(&all);
    assert_eq!(b.last_results(LAST_RESULTS_SHOWN), &all[31..]);
    assert_eq!(b.last_results(LAST_RESULTS_SHOWN).len(), 59);
    assert_eq!(b.last_results(200), &all[..]);
    assert!(b.last_results(0).is_empty());
}

#[test]
fn wire_names() {
    let b = board("TBBP");
    let json = serde_json::to_value(&b).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "bead_plate": [["T", "B", "B", "P"]],
            "big_road": [[{"side": "B", "ties": 1}, {"side": "B", "ties": 0}],
                         [{"side": "P", "ties": 0}]],
            "pending_ties": 0,
            "big_eye_boy": [],
            "small_road": [],
            "cockroach_pig": [],
            "predict": {
                "B": {"big_eye_boy": "B", "small_road": null, "cockroach_pig": null},
                "P": {"big_eye_boy": "R", "small_road": null, "cockroach_pig": null}
            },
            "stats": {
                "banker": 2, "player": 1, "tie": 1, "hands": 4,
                "streak": {"side": "P", "length": 1},
                "longest_banker": 2, "longest_player": 1
            }
        })
    );
    let grid = serde_json::to_value(b.big_road().grid()).unwrap();
    assert_eq!(
        grid[2],
        serde_json::json!({"row": 0, "col": 1, "entry": {"side": "P", "ties": 0}})
    );
}

// ---- invariants over random shoes ----

/// Runs of one side with a few ties after each, so that long streaks (and tails) are common.
fn shoe() -> impl Strategy<Value = Vec<Winner>> {
    (
        0usize..3,
        prop::collection::vec((any::<bool>(), 1usize..10, 0usize..3), 0..40),
    )
        .prop_map(|(leading_ties, runs)| {
            let mut out = vec![Winner::Tie; leading_ties];
            for (banker, len, ties) in runs {
                let w = if banker {
                    Winner::Banker
                } else {
                    Winner::Player
                };
                out.extend(std::iter::repeat_n(w, len));
                out.extend(std::iter::repeat_n(Winner::Tie, ties));
            }
            out
        })
}

/// The derived-road rule written the batch way, from the finished Big Road: find the start
/// cell first, then mark every entry from there on.
fn reference_marks(columns: &[Vec<BigRoadEntry>], k: usize) -> Vec<Mark> {
    let len = |i: usize| columns.get(i).map_or(0, Vec::len);
    let start = if len(k) >= 2 { (k, 1) } else { (k + 1, 0) };
    let mut out = Vec::new();
    for (c, column) in columns.iter().enumerate() {
        for r in 0..column.len() {
            if (c, r) < start {
                continue;
            }
            let red = if r == 0 {
                len(c - 1) == len(c - 1 - k)
            } else if len(c - k) > r {
                true // the column k back reaches this row
            } else {
                len(c - k) != r // Blue only where it stopped exactly one row up
            };
            out.push(if red { Mark::Red } else { Mark::Blue });
        }
    }
    out
}

fn assert_grid_sound<T: Copy>(grid: &[GridCell<T>]) {
    let mut seen = HashSet::new();
    for cell in grid {
        assert!(cell.row < 6, "row {} off the board", cell.row);
        assert!(
            seen.insert((cell.row, cell.col)),
            "two entries at {:?}",
            (cell.row, cell.col)
        );
    }
}

proptest! {
    #[test]
    fn big_road_counts(shoe in shoe()) {
        let b = Scoreboard::from_results(&shoe);
        let ties = shoe.iter().filter(|w| **w == Winner::Tie).count();
        prop_assert_eq!(b.big_road().entry_count(), shoe.len() - ties);
        let placed: u32 = b.big_road().columns().iter().flatten().map(|e| e.ties).sum();
        prop_assert_eq!((placed + b.big_road().pending_ties()) as usize, ties);
        // Sides alternate between columns and never within one.
        for pair in b.big_road().columns().windows(2) {
            prop_assert_ne!(pair[0][0].side, pair[1][0].side);
        }
        for column in b.big_road().columns() {
            prop_assert!(column.iter().all(|e| e.side == column[0].side));
        }
        let s = b.stats();
        prop_assert_eq!(s.banker + s.player + s.tie, s.hands);
        prop_assert_eq!(s.hands as usize, shoe.len());
        prop_assert_eq!(s.tie as usize, ties);
        let beads: Vec<Winner> = b.bead_plate().columns().flatten().copied().collect();
        prop_assert_eq!(&beads, &shoe);
    }

    #[test]
    fn grids_never_overlap(shoe in shoe()) {
        let b = Scoreboard::from_results(&shoe);
        let grid = b.big_road().grid();
        assert_grid_sound(&grid);
        prop_assert_eq!(grid.len(), b.big_road().entry_count());
        // Each column starts on the top row and then moves one cell down or one right.
        let mut i = 0;
        for column in b.big_road().columns() {
            prop_assert_eq!(grid[i].row, 0);
            for j in i + 1..i + column.len() {
                let (a, z) = (grid[j - 1], grid[j]);
                let down = z.row == a.row + 1 && z.col == a.col;
                let right = z.row == a.row && z.col == a.col + 1;
                prop_assert!(down || right, "jump from {:?} to {:?}", (a.row, a.col), (z.row, z.col));
            }
            i += column.len();
        }
        for kind in DerivedKind::ALL {
            assert_grid_sound(b.derived(kind).grid());
        }
    }

    #[test]
    fn derived_roads_match_the_rule(shoe in shoe()) {
        let b = Scoreboard::from_results(&shoe);
        let columns = b.big_road().columns();
        for kind in DerivedKind::ALL {
            let k = kind.offset();
            let got = b.derived(kind).marks();
            prop_assert_eq!(got, &reference_marks(columns, k)[..]);
            // Eligible entries: all of them but the columns before k and the first of column k.
            let before: usize = columns.iter().take(k).map(Vec::len).sum();
            let first_of_k = usize::from(columns.len() > k);
            let expected = b.big_road().entry_count().saturating_sub(before + first_of_k);
            prop_assert_eq!(got.len(), expected);
        }
    }

    #[test]
    fn predict_agrees_with_the_next_push(shoe in shoe()) {
        let b = Scoreboard::from_results(&shoe);
        let predict = b.predict();
        for (side, winner) in [(Side::Banker, Winner::Banker), (Side::Player, Winner::Player)] {
            let mut next = b.clone();
            next.push(winner);
            for kind in DerivedKind::ALL {
                let before = b.derived(kind).marks().len();
                let added = next.derived(kind).marks().get(before).copied();
                prop_assert_eq!(predict.get(side).get(kind), added);
            }
        }
    }

    #[test]
    fn streaks_are_big_road_columns(shoe in shoe()) {
        let b = Scoreboard::from_results(&shoe);
        let columns = b.big_road().columns();
        let s = b.stats();
        prop_assert_eq!(
            s.streak,
            columns.last().map(|c| Streak { side: c[0].side, length: c.len() as u32 })
        );
        let longest = |side| columns.iter().filter(|c| c[0].side == side).map(Vec::len).max().unwrap_or(0);
        prop_assert_eq!(s.longest_banker as usize, longest(Side::Banker));
        prop_assert_eq!(s.longest_player as usize, longest(Side::Player));
    }
}
