//! `banco odds`: exact probabilities and return to player of a shoe, full or depleted.
//!
//! Auditors check a table's published RTP with it, and a pit boss can see what the cards
//! already dealt did to the odds. All the arithmetic is `banco_rules::odds`; this file
//! only reads arguments and prints.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use banco_rules::odds::{Probabilities, Rtp, probabilities, rtp};
use banco_rules::{BetKind, Composition, Paytable, parse_cards};
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub(crate) struct OddsArgs {
    /// Decks in the shoe, 1 to 8.
    #[arg(long, default_value_t = 8, value_name = "N")]
    decks: u8,
    /// Cards already out of the shoe, separated by commas or spaces (`AS,9H 10D`).
    /// May be given more than once.
    #[arg(long, value_name = "CARDS")]
    remove: Vec<String>,
    /// Paytable preset: standard, no-commission or tie-9.
    #[arg(long, default_value = "standard", value_name = "NAME")]
    paytable: String,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &OddsArgs) -> anyhow::Result<ExitCode> {
    let report = report(args)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", render_table(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Report {
    decks: u8,
    cards_left: u32,
    paytable: String,
    probabilities: Probabilities,
    rtp: Rtp,
    #[serde(skip)]
    table: Paytable,
}

fn report(args: &OddsArgs) -> anyhow::Result<Report> {
    let table = Paytable::preset(&args.paytable)?;
    let mut shoe = Composition::full(args.decks)?;
    for text in &args.remove {
        let cards = parse_cards(text).with_context(|| format!("--remove {text}"))?;
        for card in cards {
            shoe.remove(card, args.decks)
                .with_context(|| format!("--remove: cannot remove {card}"))?;
        }
    }
    let probabilities = probabilities(&shoe)?;
    Ok(Report {
        decks: args.decks,
        cards_left: shoe.len(),
        paytable: table.name.clone(),
        rtp: rtp(&probabilities, &table),
        probabilities,
        table,
    })
}

fn render_table(report: &Report) -> String {
    let mut out = String::new();
    let full = u32::from(report.decks) * 52;
    let _ = writeln!(
        out,
        "{} deck{}, {} cards left ({} removed), paytable {}",
        report.decks,
        if report.decks == 1 { "" } else { "s" },
        report.cards_left,
        full - report.cards_left,
        report.paytable,
    );
    let _ = writeln!(
        out,
        "{:<13} {:>14} {:>14} {:>10} {:>14}",
        "bet", "pays", "probability %", "RTP %", "house edge %"
    );
    for kind in BetKind::ALL {
        let mut pays = report.table.pays(kind).to_string();
        if kind == BetKind::Banker && report.table.banker_win_on_six.is_some() {
            let _ = write!(pays, ", {} on 6", report.table.banker_pays(6));
        }
        let rtp = report.rtp.get(kind);
        let _ = writeln!(
            out,
            "{:<13} {:>14} {:>14.6} {:>10.4} {:>14.4}",
            kind.name(),
            pays,
            report.probabilities.get(kind) * 100.0,
            rtp * 100.0,
            (1.0 - rtp) * 100.0,
        );
    }
    out.push_str("Player and Banker push on a tie: their RTP counts the returned stake.\n");
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        odds: OddsArgs,
    }

    fn args(argv: &[&str]) -> OddsArgs {
        let mut full = vec!["odds"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).expect("arguments parse").odds
    }

    fn error(argv: &[&str]) -> String {
        match report(&args(argv)) {
            Ok(report) => panic!("{argv:?} should fail, got {report:?}"),
            Err(err) => format!("{err:#}"),
        }
    }

    #[test]
    fn argument_errors_name_the_bad_input() {
        for (argv, named) in [
            (&["--decks", "0"][..], "0 decks"),
            (&["--decks", "9"][..], "9 decks"),
            (&["--remove", "AS,XX"][..], "`XX`"),
            (&["--remove", "1H"][..], "`1H`"),
            (
                &["--decks", "1", "--remove", "AS", "--remove", "as"][..],
                "AS",
            ),
            (&["--decks", "1", "--remove", "QH QH"][..], "QH"),
            (&["--paytable", "vegas"][..], "`vegas`"),
        ] {
            let message = error(argv);
            assert!(message.contains(named), "{argv:?}: {message}");
        }
        // Too few cards left for a coup: the count is named.
        let all_but_five: Vec<String> = banco_rules::Card::ALL[5..]
            .iter()
            .map(ToString::to_string)
            .collect();
        let message = error(&["--decks", "1", "--remove", &all_but_five.join(",")]);
        assert!(message.contains("only 5 cards"), "{message}");
        // A deck count that does not even fit is refused by the parser, naming it.
        let err = Cli::try_parse_from(["odds", "--decks", "300"]).expect_err("300 decks");
        assert!(err.to_string().contains("300"), "{err}");
    }

    #[test]
    fn json_has_the_documented_keys() {
        let report = report(&args(&[
            "--decks",
            "6",
            "--remove",
            "AS, 10H",
            "--remove",
            "K♦",
            "--paytable",
            "tie-9",
        ]))
        .expect("report");
        let json = serde_json::to_value(&report).expect("json");
        let keys = |value: &serde_json::Value| -> Vec<String> {
            let mut keys: Vec<String> =
                value.as_object().expect("object").keys().cloned().collect();
            keys.sort();
            keys
        };
        assert_eq!(
            keys(&json),
            ["cards_left", "decks", "paytable", "probabilities", "rtp"]
        );
        assert_eq!(json["decks"], 6);
        assert_eq!(json["cards_left"], 6 * 52 - 3);
        assert_eq!(json["paytable"], "tie-9");
        let mut bets: Vec<String> = BetKind::ALL.iter().map(|k| k.name().to_owned()).collect();
        bets.sort();
        for section in ["probabilities", "rtp"] {
            assert_eq!(keys(&json[section]), bets, "{section}");
            for bet in &bets {
                assert!(json[section][bet].is_f64(), "{section}.{bet}");
            }
        }
        let tie_rtp = json["rtp"]["tie"].as_f64().expect("tie rtp");
        let tie = json["probabilities"]["tie"].as_f64().expect("tie");
        assert!((tie_rtp - 10.0 * tie).abs() < 1e-15, "{tie_rtp} vs {tie}");
    }

    #[test]
    fn default_table_names_the_shoe_and_every_bet() {
        let report = report(&args(&["--paytable", "no_commission"])).expect("report");
        assert_eq!(report.decks, 8);
        assert_eq!(report.cards_left, 416);
        let text = render_table(&report);
        assert!(
            text.starts_with("8 decks, 416 cards left (0 removed), paytable no-commission\n"),
            "{text}"
        );
        assert!(text.contains("1:1, 1:2 on 6"), "{text}");
        for kind in BetKind::ALL {
            assert!(text.contains(kind.name()), "{kind}: {text}");
        }
        // Banker RTP of the no-commission table, 4 decimals in percent.
        assert!(text.contains("98.5419"), "{text}");
    }
}
