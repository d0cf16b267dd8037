//! `banco rules judge`: an auditor's replay of hands through the rules.
//!
//! JSON lines in, `{"cards": ["QC","8D","4C","TH"]}`, one judged hand out per line. A bad
//! line gets an error line naming its number and the problem, and the rest go on: one
//! misrecorded hand must not hide the verdict on a million others. The exit status says
//! whether any line failed.
//!
//! An archive export's line is judged as it is: its `round_id` is carried to the output
//! line, and a voided round (`"voided": true`, often dealt short) is passed through as
//! voided, its cards checked as far as they go, since a void has no result to judge.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use banco_rules::Card;
use banco_rules::coup::Coup;
use serde::{Deserialize, Serialize};

#[derive(Debug, clap::Args)]
pub(crate) struct JudgeArgs {}

/// One input line.
#[derive(Deserialize)]
/// Other fields of a line are ignored, so that an archive export (a round per line, with
/// its id, result and bets) is judged as it is.
struct Hand<'a> {
    #[serde(borrow)]
    cards: Vec<Cow<'a, str>>,
    #[serde(borrow, default)]
    round_id: Option<Cow<'a, str>>,
    #[serde(default)]
    voided: bool,
    #[serde(borrow, default)]
    void_reason: Option<Cow<'a, str>>,
}

/// A judged hand, with the round it came from when the input named it.
#[derive(Serialize)]
struct Judged<'a, T> {
    #[serde(skip_serializing_if = "Option::is_none")]
    round_id: Option<&'a str>,
    #[serde(flatten)]
    result: T,
}

/// A voided round passed through: no result, its cards legal as far as they go.
#[derive(Serialize)]
struct Voided<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    round_id: Option<&'a str>,
    voided: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    void_reason: Option<&'a str>,
    cards_dealt: usize,
}

#[derive(Serialize)]
struct LineError<'a> {
    line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    round_id: Option<&'a str>,
    error: &'a str,
}

/// How many hands were judged, voided rounds passed through, and lines that failed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) judged: u64,
    pub(crate) voided: u64,
    pub(crate) failed: u64,
}

pub(crate) fn run(_args: &JudgeArgs) -> anyhow::Result<ExitCode> {
    let stdin = io::stdin().lock();
    let stdout = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let tally = match judge_lines(stdin, stdout) {
        Ok(tally) => tally,
        // The reader went away (`| head`): nothing more to say to it.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(err) => return Err(anyhow::Error::new(err).context("judging hands from stdin")),
    };
    if tally.voided > 0 {
        eprintln!(
            "banco rules judge: {} voided round{} passed through unjudged (a void has no result to judge)",
            tally.voided,
            if tally.voided == 1 { "" } else { "s" }
        );
    }
    if tally.failed == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "banco rules judge: {} of {} lines failed (see their `error` lines on stdout)",
        tally.failed,
        tally.failed + tally.judged + tally.voided
    );
    Ok(ExitCode::from(crate::exit::REFUSED))
}

/// Judges every line of `input`, writing one line to `output` for each non-blank one.
pub(crate) fn judge_lines(mut input: impl BufRead, mut output: impl Write) -> io::Result<Tally> {
    let mut tally = Tally::default();
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line += 1;
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match judge_line(text) {
            Ok((json, voided)) => {
                output.write_all(json.as_bytes())?;
                if voided {
                    tally.voided += 1;
                } else {
                    tally.judged += 1;
                }
            }
            Err((round_id, error)) => {
                let record = LineError {
                    line,
                    round_id: round_id.as_deref(),
                    error: &error,
                };
                serde_json::to_writer(&mut output, &record).map_err(io::Error::other)?;
                tally.failed += 1;
            }
        }
        output.write_all(b"\n")?;
    }
    output.flush()?;
    Ok(tally)
}

/// The judged hand (or the voided round passed through, `true`) as one JSON object, or
/// what is wrong with the line, with its round when the line names one.
fn judge_line(text: &[u8]) -> Result<(String, bool), (Option<String>, String)> {
    let hand: Hand<'_> = serde_json::from_slice(text).map_err(|e| {
        // serde_json counts lines within our one line: keep only the column.
        let message = e.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(&*message, |(m, _)| m);
        (
            None,
            format!("bad JSON at column {}: {message}", e.column()),
        )
    })?;
    let round_id = hand.round_id.as_deref();
    let fail = |error: String| (round_id.map(str::to_owned), error);
    let mut cards = Vec::with_capacity(hand.cards.len());
    for (i, card) in hand.cards.iter().enumerate() {
        cards.push(Card::parse(card).map_err(|e| fail(format!("card {}: {e}", i + 1)))?);
    }
    let json = if hand.voided {
        let coup = Coup::replay(&cards).map_err(|e| fail(format!("voided round: {e}")))?;
        serde_json::to_string(&Voided {
            round_id,
            voided: true,
            void_reason: hand.void_reason.as_deref(),
            cards_dealt: coup.cards_dealt(),
        })
    } else {
        let result = Coup::judge(&cards).map_err(|e| fail(e.to_string()))?;
        serde_json::to_string(&Judged { round_id, result })
    };
    json.map(|json| (json, hand.voided))
        .map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(input: impl AsRef<[u8]>) -> (Vec<serde_json::Value>, Tally) {
        let mut out = Vec::new();
        let tally = judge_lines(input.as_ref(), &mut out).expect("in-memory io");
        let text = String::from_utf8(out).expect("utf-8 output");
        let lines = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each output line is JSON"))
            .collect();
        (lines, tally)
    }

    #[test]
    fn judges_a_hand() {
        let (lines, tally) = judge("{\"cards\": [\"QC\",\"8D\",\"4C\",\"TH\"]}\n");
        assert_eq!(
            lines,
            [serde_json::json!({
                "player": ["QC", "4C"],
                "banker": ["8D", "TH"],
                "player_total": 4,
                "banker_total": 8,
                "winner": "banker",
                "natural": true,
                "player_pair": false,
                "banker_pair": false,
                "perfect_pair": false,
                "cards_dealt": 4,
            })]
        );
        assert_eq!(
            tally,
            Tally {
                judged: 1,
                ..Tally::default()
            }
        );
    }

    #[test]
    fn any_notation_canonical_output() {
        let (lines, _) = judge(r#"{"cards":["ah","3♠","0013","3♣","7d","2C"]}"#);
        assert_eq!(lines[0]["player"], serde_json::json!(["AH", "AH", "7D"]));
        assert_eq!(lines[0]["banker"], serde_json::json!(["3S", "3C", "2C"]));
        assert_eq!(lines[0]["winner"], "player");
        assert_eq!(lines[0]["perfect_pair"], true);
        assert_eq!(lines[0]["cards_dealt"], 6);
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_go_on() {
        let input = [
            r#"{"cards":["QC","8D","4C","TH","KH"]}"#,
            "",
            r#"{"cards":["2S","KH","3D","3C"]}"#,
            r#"{"cards":["QC","8D","4C","XX"]}"#,
            r#"{"cards":["QC","8D""#,
            r#"{"hand":["QC","8D","4C","TH"]}"#,
            r#"{"cards":["QC","8D","4C","TH"],"table":7}"#,
            "   ",
            r#"{}"#,
            r#"{"cards":["3S","2H","4D","5C"]}"#,
        ]
        .join("\n");
        // Line 11 is not UTF-8 at all.
        let mut input = input.into_bytes();
        input.extend_from_slice(b"\r\n{\"cards\":[\"\xff\"]}\r\n");
        let (lines, tally) = judge(input);
        let errors: Vec<(u64, String)> = lines
            .iter()
            .filter_map(|l| Some((l["line"].as_u64()?, l["error"].as_str()?.to_owned())))
            .collect();
        let expect = [
            (1, "card 5 of 5 (KH) is one too many"),
            (3, "4 cards given, a player card is due next"),
            (4, "card 4: `XX` is not a card"),
            (5, "bad JSON at column 19: EOF while parsing a list"),
            (6, "missing field `cards`"),
            (9, "missing field `cards`"),
            (11, "bad JSON"),
        ];
        assert_eq!(errors.len(), expect.len(), "{errors:#?}");
        for ((line, error), (want_line, want)) in errors.iter().zip(expect) {
            assert_eq!(*line, want_line, "{error}");
            assert!(error.contains(want), "line {line}: {error} lacks {want}");
        }
        assert_eq!(lines.len(), 9);
        // Line 7's other field is ignored: an archive export line is judged by its cards.
        assert_eq!(lines[5]["winner"], "banker");
        assert_eq!(lines[7]["winner"], "tie");
        assert_eq!(
            tally,
            Tally {
                judged: 2,
                voided: 0,
                failed: 7
            }
        );
    }

    #[test]
    fn an_export_line_keeps_its_round_and_a_void_passes_through() {
        let input = [
            r#"{"round_id":"T01-S0001-H001","cards":["QC","8D","4C","TH"],"voided":false}"#,
            r#"{"round_id":"T01-S0001-H002","cards":["2S","KH"],"voided":true,"void_reason":"scanner fault"}"#,
            r#"{"round_id":"T01-S0001-H003","cards":[],"voided":true,"void_reason":null}"#,
            r#"{"round_id":"T01-S0001-H004","cards":["2S","KH","3D"],"voided":false}"#,
            r#"{"round_id":"T01-S0001-H005","cards":["QC","8D","4C","TH","KH"],"voided":true}"#,
        ]
        .join("\n");
        let (lines, tally) = judge(input);
        assert_eq!(lines[0]["round_id"], "T01-S0001-H001");
        assert_eq!(lines[0]["winner"], "banker");
        assert_eq!(
            lines[1],
            serde_json::json!({
                "round_id": "T01-S0001-H002",
                "voided": true,
                "void_reason": "scanner fault",
                "cards_dealt": 2,
            })
        );
        assert_eq!(lines[2]["cards_dealt"], 0);
        assert!(lines[2].get("void_reason").is_none());
        // A settled round dealt short is still a failure, and says which round.
        assert_eq!(lines[3]["round_id"], "T01-S0001-H004");
        assert_eq!(lines[3]["line"], 4);
        // A void whose cards could not have been dealt is a finding, not a pass.
        assert_eq!(lines[4]["round_id"], "T01-S0001-H005");
        assert!(
            lines[4]["error"]
                .as_str()
                .is_some_and(|e| e.contains("voided round")),
            "{}",
            lines[4]
        );
        assert_eq!(
            tally,
            Tally {
                judged: 1,
                voided: 2,
                failed: 2
            }
        );
    }

    #[test]
    fn empty_input_is_no_failure() {
        let (lines, tally) = judge("\n\r\n");
        assert!(lines.is_empty());
        assert_eq!(tally, Tally::default());
    }
}
