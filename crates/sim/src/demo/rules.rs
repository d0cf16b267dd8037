//! `banco-sim demo rules`: one seeded shoe played through the rules engine, as an automated
//! table would play it, so that a newcomer sees what banco decides and how.
//!
//! Every card goes through the counting shoe and the coup one at a time; each hand is
//! settled against one stake on every position; the roads grow hand by hand; the exact odds
//! are recomputed from what is left before each hand. The same seed replays the same shoe.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use banco_rules::coup::{Coup, CoupResult, Due};
use banco_rules::odds::probabilities;
use banco_rules::roads::Scoreboard;
use banco_rules::settle::{Bet, settle};
use banco_rules::shoe::{Shoe, ShoeConfig, ShoeState, ShuffledShoe};
use banco_rules::{BetKind, Card, Paytable, Winner};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;

#[derive(Debug, clap::Args)]
pub(crate) struct RulesDemoArgs {
    /// Seed of the ChaCha20 shuffle; the same seed plays the same shoe.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Decks in the shoe, 1 to 8.
    #[arg(long, default_value_t = 8)]
    decks: u8,
    /// Paytable preset: standard, no-commission or tie-9.
    #[arg(long, default_value = "standard")]
    paytable: String,
    /// Stake placed on every position each hand, in minor units (1000 = €10.00).
    #[arg(long, default_value_t = 1000)]
    stake: i64,
}

pub(crate) fn run(args: &RulesDemoArgs) -> anyhow::Result<ExitCode> {
    print!("{}", play(args)?);
    Ok(ExitCode::SUCCESS)
}

/// Money on one position over the whole shoe.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    staked: i64,
    returned: i64,
    wins: u32,
    /// Fractions of a minor unit kept by rounding down, summed as a float for display only.
    rounded_off: f64,
}

fn play(args: &RulesDemoArgs) -> anyhow::Result<String> {
    if args.stake <= 0 {
        bail!(
            "--stake {}: a stake must be at least 1 minor unit",
            args.stake
        );
    }
    let paytable = Paytable::preset(&args.paytable)?;
    let config = ShoeConfig {
        decks: args.decks,
        ..ShoeConfig::default()
    };
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut shoe = Shoe::shuffled(config, &mut rng).context("shoe configuration")?;
    let mut out = String::new();

    writeln!(
        out,
        "banco-sim demo rules: {} decks shuffled by ChaCha20 with seed {} (replay with --seed {}), \
         cut card {} from the end, paytable {}",
        config.decks, args.seed, args.seed, config.cut_card_from_end, paytable.name
    )?;
    let burn = shoe.burn()?;
    writeln!(
        out,
        "burn: {} exposed, {} burned face down; {} cards left\n",
        burn.exposed.pretty(),
        burn.face_down,
        shoe.shoe().cards_left()
    )?;
    writeln!(
        out,
        "{:>4}  {:<12} {:<12} {:<18} {:<14} odds before the hand (B / P / T)",
        "hand", "player", "banker", "result", "events"
    )?;

    let mut board = Scoreboard::new();
    let mut tallies = [Tally::default(); 9];
    let mut hand = 0u32;
    let mut cut_card_hand = None;
    while shoe.state() != ShoeState::Ended {
        hand += 1;
        let odds = probabilities(shoe.shoe().composition()).ok();
        let result = deal_hand(&mut shoe)?;
        if shoe.state() == ShoeState::CutCardOut {
            cut_card_hand = Some(hand);
        }
        shoe.hand_finished()?;
        board.push(result.winner());

        let bets: Vec<Bet> = BetKind::ALL
            .iter()
            .map(|&kind| Bet::new(kind, args.stake))
            .collect();
        for s in settle(&bets, &result, &paytable)? {
            let t = &mut tallies[s.kind.index()];
            t.staked += s.stake;
            t.returned += s.returned;
            t.wins += u32::from(s.winnings > 0);
            t.rounded_off += s.rounding.remainder as f64 / s.rounding.denominator as f64;
        }
        let odds = odds.map_or_else(String::new, |p| {
            format!(
                "{:5.2}% {:5.2}% {:5.2}%",
                p.wins.banker * 100.0,
                p.wins.player * 100.0,
                p.wins.tie * 100.0
            )
        });
        writeln!(
            out,
            "{hand:>4}  {:<12} {:<12} {:<18} {:<14} {odds}",
            cards_text(result.player_cards()),
            cards_text(result.banker_cards()),
            result_text(&result),
            events_text(&result),
        )?;
    }

    writeln!(
        out,
        "\nshoe ended after {hand} hands; {} cards dealt, {} left unplayed{}",
        shoe.shoe().cards_dealt(),
        shoe.shoe().cards_left(),
        cut_card_hand.map_or_else(String::new, |h| format!(
            "; the cut card came out in hand {h}, so one more hand was played"
        )),
    )?;
    writeln!(out, "\n{}", banco::clients::render_roads(&board))?;
    out.push_str(&money_text(&tallies, args.stake, &paytable));
    Ok(out)
}

/// Deals one hand card by card, asking the coup what is due before each card.
fn deal_hand(shoe: &mut ShuffledShoe) -> anyhow::Result<CoupResult> {
    let mut coup = Coup::new();
    while coup.due() != Due::Complete {
        let card = shoe.next_card()?;
        coup.deal(card)?;
    }
    coup.result().context("a complete coup has a result")
}

fn cards_text(cards: &[Card]) -> String {
    cards
        .iter()
        .map(|c| c.pretty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn result_text(result: &CoupResult) -> String {
    let (p, b) = (result.player_total(), result.banker_total());
    match result.winner() {
        Winner::Banker => format!("BANKER {b}-{p}"),
        Winner::Player => format!("PLAYER {p}-{b}"),
        Winner::Tie => format!("TIE {p}-{b}"),
    }
}

fn events_text(result: &CoupResult) -> String {
    let mut events = Vec::new();
    if result.is_natural() {
        events.push("natural");
    }
    if result.perfect_pair() {
        events.push("perfect");
    }
    if result.player_pair() {
        events.push("PP");
    }
    if result.banker_pair() {
        events.push("BP");
    }
    events.join(" ")
}

fn money_text(tallies: &[Tally; 9], stake: i64, paytable: &Paytable) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "settlement: {} on every position each hand (minor units), paytable {}",
        stake, paytable.name
    );
    let _ = writeln!(
        out,
        "{:<13} {:>6} {:>5} {:>10} {:>10} {:>11} {:>9}",
        "bet", "pays", "wins", "staked", "returned", "house", "rounded"
    );
    let mut house_total = 0;
    for kind in BetKind::ALL {
        let t = tallies[kind.index()];
        let house = t.staked - t.returned;
        house_total += house;
        let _ = writeln!(
            out,
            "{:<13} {:>6} {:>5} {:>10} {:>10} {:>11} {:>9.2}",
            kind.name(),
            paytable.pays(kind).to_string(),
            t.wins,
            t.staked,
            t.returned,
            house,
            t.rounded_off
        );
    }
    let _ = writeln!(out, "house result over the shoe: {house_total} minor units");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo(seed: u64) -> String {
        let args = RulesDemoArgs {
            seed,
            decks: 8,
            paytable: "standard".into(),
            stake: 1000,
        };
        play(&args).expect("demo plays")
    }

    #[test]
    fn a_seed_replays_the_same_shoe_and_another_seed_does_not() {
        let first = demo(7);
        assert_eq!(first, demo(7));
        assert_ne!(first, demo(8));
    }

    #[test]
    fn plays_a_whole_shoe_to_the_cut_card() {
        let text = demo(2026);
        assert!(text.contains("shoe ended after"), "{text}");
        assert!(text.contains("the cut card came out in hand"), "{text}");
        assert!(text.contains("Big Road"), "{text}");
        assert!(text.contains("house result over the shoe"), "{text}");
        // An 8-deck shoe less the burn and the 16 cards behind the cut card holds
        // roughly 80 hands; far fewer or more means the shoe was not played out.
        let hands = text
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .next()
                    .is_some_and(|w| w.parse::<u32>().is_ok())
            })
            .count();
        assert!((60..=100).contains(&hands), "{hands} hands:\n{text}");
    }

    #[test]
    fn bad_arguments_are_named() {
        let args = RulesDemoArgs {
            seed: 1,
            decks: 9,
            paytable: "standard".into(),
            stake: 1000,
        };
        let err = format!("{:#}", play(&args).expect_err("9 decks"));
        assert!(err.contains('9'), "{err}");
        let args = RulesDemoArgs {
            seed: 1,
            decks: 8,
            paytable: "vegas".into(),
            stake: 1000,
        };
        assert!(format!("{:#}", play(&args).expect_err("vegas")).contains("vegas"));
        let args = RulesDemoArgs {
            seed: 1,
            decks: 8,
            paytable: "standard".into(),
            stake: 0,
        };
        assert!(format!("{:#}", play(&args).expect_err("stake 0")).contains("--stake 0"));
    }
}
