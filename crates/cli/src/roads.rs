//! `banco roads`: draws the scoreboard of a run of results, as a table shows it, or prints
//! it as JSON for another program.

use std::fmt;
use std::io::{Read, Write};
use std::process::ExitCode;

use banco_rules::roads::{DerivedKind, GridCell, Mark, ROWS, Scoreboard, side_letter};
use banco_rules::{Side, Winner};

#[derive(Debug, clap::Args)]
pub(crate) struct RoadsArgs {
    /// Print the roads as JSON instead of drawing them.
    #[arg(long)]
    json: bool,
    /// Results, oldest first: `B`, `P` or `T` in any case; `BBPT` counts as four. Read from
    /// stdin when none are given. Spaces and newlines are ignored.
    #[arg(value_name = "RESULTS")]
    results: Vec<String>,
}

pub(crate) fn run(args: &RoadsArgs) -> anyhow::Result<ExitCode> {
    let text = if args.results.is_empty() {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        args.results.join(" ")
    };
    let board = Scoreboard::from_results(&parse_results(&text)?);
    let out = if args.json {
        serde_json::to_string_pretty(&board)? + "\n"
    } else {
        render(&board)
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A character that is not a result, with where it stood so the typist can find it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadResult {
    ch: char,
    /// 1-based, counting every character of the input (arguments are joined by a space).
    position: usize,
    line: usize,
    column: usize,
}

impl fmt::Display for BadResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid result {:?} at position {} (line {}, column {}): expected B, P or T",
            self.ch, self.position, self.line, self.column
        )
    }
}

impl std::error::Error for BadResult {}

/// Reads `B`, `P` and `T` in any case, skipping whitespace; anything else is refused.
pub(crate) fn parse_results(text: &str) -> Result<Vec<Winner>, BadResult> {
    let mut line = 1;
    let mut column = 0;
    let mut out = Vec::with_capacity(text.len());
    for (i, ch) in text.chars().enumerate() {
        column += 1;
        if ch == '\n' {
            line += 1;
            column = 0;
            continue;
        }
        if ch.is_whitespace() {
            continue;
        }
        match Winner::from_letter(ch) {
            Some(winner) => out.push(winner),
            None => {
                return Err(BadResult {
                    ch,
                    position: i + 1,
                    line,
                    column,
                });
            }
        }
    }
    Ok(out)
}

/// The whole scoreboard as plain text.
pub fn render(board: &Scoreboard) -> String {
    let mut out = String::new();
    let bead: Vec<GridCell<String>> = board
        .bead_plate()
        .columns()
        .enumerate()
        .flat_map(|(col, column)| {
            column.iter().enumerate().map(move |(row, w)| GridCell {
                row,
                col,
                entry: w.letter().to_string(),
            })
        })
        .collect();
    section(&mut out, "Bead plate", &bead);

    let big: Vec<GridCell<String>> = board
        .big_road()
        .grid()
        .into_iter()
        .map(|cell| GridCell {
            row: cell.row,
            col: cell.col,
            entry: match cell.entry.ties {
                0 => side_letter(cell.entry.side).to_string(),
                n => format!("{}{n}", side_letter(cell.entry.side)),
            },
        })
        .collect();
    section(
        &mut out,
        "Big Road (a number after a cell counts the ties on it)",
        &big,
    );
    let pending = board.big_road().pending_ties();
    if pending > 0 {
        out.push_str(&format!(
            "ties before the first Banker or Player win: {pending}\n\n"
        ));
    }

    for kind in DerivedKind::ALL {
        let cells: Vec<GridCell<String>> = board
            .derived(kind)
            .grid()
            .iter()
            .map(|cell| GridCell {
                row: cell.row,
                col: cell.col,
                entry: cell.entry.letter().to_string(),
            })
            .collect();
        section(
            &mut out,
            &format!("{} (R red, B blue)", kind.title()),
            &cells,
        );
    }

    let s = board.stats();
    out.push_str(&format!(
        "Banker {}  Player {}  Tie {}  Hands {}\n",
        s.banker, s.player, s.tie, s.hands
    ));
    match s.streak {
        Some(streak) => out.push_str(&format!(
            "Streak: {} {}",
            side_name(streak.side),
            streak.length
        )),
        None => out.push_str("Streak: none"),
    }
    out.push_str(&format!(
        "  Longest: Banker {}, Player {}\n",
        s.longest_banker, s.longest_player
    ));
    let predict = board.predict();
    for side in [Side::Banker, Side::Player] {
        let prediction = predict.get(side);
        let marks: Vec<String> = DerivedKind::ALL
            .iter()
            .map(|&kind| {
                let mark = prediction.get(kind).map_or('-', Mark::letter);
                format!("{} {mark}", kind.title())
            })
            .collect();
        out.push_str(&format!(
            "If {} next: {}\n",
            side_name(side),
            marks.join(", ")
        ));
    }
    out
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Banker => "Banker",
        Side::Player => "Player",
    }
}

/// Appends a titled six-row board, cells left-aligned in columns of equal width.
fn section(out: &mut String, title: &str, cells: &[GridCell<String>]) {
    out.push_str(title);
    out.push('\n');
    if cells.is_empty() {
        out.push_str("  (empty)\n\n");
        return;
    }
    let width = cells.iter().map(|c| c.col + 1).max().unwrap_or(0);
    let cell_width = cells
        .iter()
        .map(|c| c.entry.chars().count())
        .max()
        .unwrap_or(1);
    let mut rows = vec![vec![String::new(); width]; ROWS];
    for cell in cells {
        if let Some(slot) = rows.get_mut(cell.row).and_then(|r| r.get_mut(cell.col)) {
            slot.clone_from(&cell.entry);
        }
    }
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .map(|entry| {
                if entry.is_empty() {
                    format!("{:<cell_width$}", ".")
                } else {
                    format!("{entry:<cell_width$}")
                }
            })
            .collect();
        out.push_str("  ");
        out.push_str(line.join(" ").trim_end());
        out.push('\n');
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_letters_in_any_case_ignoring_whitespace() {
        use Winner::{Banker as B, Player as P, Tie as T};
        let cases: &[(&str, &[Winner])] = &[
            ("", &[]),
            ("  \n", &[]),
            ("BBPT", &[B, B, P, T]),
            ("b p\tt\n", &[B, P, T]),
            ("bP\r\nTb", &[B, P, T, B]),
        ];
        for &(text, expected) in cases {
            assert_eq!(parse_results(text).unwrap(), expected, "{text:?}");
        }
    }

    #[test]
    fn names_the_bad_character_and_where_it_is() {
        // (input, character, position, line, column)
        let cases: &[(&str, char, usize, usize, usize)] = &[
            ("X", 'X', 1, 1, 1),
            ("BBPX", 'X', 4, 1, 4),
            ("B P 1", '1', 5, 1, 5),
            ("BB\nPQ", 'Q', 5, 2, 2),
            ("BPé", 'é', 3, 1, 3),
            ("B,P", ',', 2, 1, 2),
        ];
        for &(text, ch, position, line, column) in cases {
            let err = parse_results(text).unwrap_err();
            assert_eq!(
                err,
                BadResult {
                    ch,
                    position,
                    line,
                    column
                },
                "{text:?}"
            );
        }
        assert_eq!(
            parse_results("BBPX").unwrap_err().to_string(),
            "invalid result 'X' at position 4 (line 1, column 4): expected B, P or T"
        );
    }

    #[test]
    fn json_has_the_documented_shape() {
        let board = Scoreboard::from_results(&parse_results("T BBP PBP BPT").unwrap());
        let json = serde_json::to_value(&board).unwrap();
        for key in [
            "bead_plate",
            "big_road",
            "big_eye_boy",
            "small_road",
            "cockroach_pig",
            "predict",
            "stats",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(
            json["bead_plate"],
            serde_json::json!([["T", "B", "B", "P", "P", "B"], ["P", "B", "P", "T"]])
        );
        assert_eq!(
            json["big_road"][0],
            serde_json::json!([{"side": "B", "ties": 1}, {"side": "B", "ties": 0}])
        );
        assert_eq!(
            json["big_road"].as_array().unwrap().len(),
            board.big_road().columns().len()
        );
        for kind in ["big_eye_boy", "small_road", "cockroach_pig"] {
            for mark in json[kind].as_array().unwrap() {
                assert!(mark == "R" || mark == "B", "{kind}: {mark}");
            }
        }
        for side in ["B", "P"] {
            for kind in ["big_eye_boy", "small_road", "cockroach_pig"] {
                let v = &json["predict"][side][kind];
                assert!(v.is_null() || v == "R" || v == "B", "{side} {kind}: {v}");
            }
        }
        assert_eq!(json["stats"]["hands"], 10);
        assert_eq!(json["stats"]["tie"], 2);
        assert_eq!(
            json["stats"]["streak"],
            serde_json::json!({"side": "P", "length": 1})
        );
    }

    #[test]
    fn draws_the_big_road_with_ties_and_a_tail() {
        let board = Scoreboard::from_results(&parse_results("BBBBBBBT P").unwrap());
        let text = render(&board);
        let big = text
            .split("\n\n")
            .find(|s| s.starts_with("Big Road"))
            .unwrap();
        let rows: Vec<&str> = big.lines().skip(1).collect();
        assert_eq!(
            rows,
            ["  B  P", "  B  .", "  B  .", "  B  .", "  B  .", "  B  B1"]
        );
        assert!(text.contains("Banker 7  Player 1  Tie 1  Hands 9"));
        assert!(text.contains("If Banker next: Big Eye Boy "));
    }

    #[test]
    fn draws_an_empty_board_and_pending_ties() {
        let text = render(&Scoreboard::from_results(&parse_results("TT").unwrap()));
        assert!(text.contains("Big Road (a number after a cell counts the ties on it)\n  (empty)"));
        assert!(text.contains("ties before the first Banker or Player win: 2"));
        assert!(text.contains("Streak: none"));
        assert!(text.contains("Big Eye Boy -, Small Road -, Cockroach Pig -"));
    }
}
