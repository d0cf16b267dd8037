//! `banco-sim shoe-sim`: a shoe reader for demos and tests. It shuffles a shoe with a seeded
//! ChaCha20 generator and, like a real reader, emits a card only when the croupier draws
//! one: it watches the table (WatchTable) and writes the next card a short random delay
//! after one becomes due (the burn card after a new shoe, then each card of each hand).
//! Now and then it misreads: it writes a line that is not a card, which the console must
//! refuse with its reason, then the card itself.

mod cards;
mod target;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use banco_wire::pb;
use banco_wire::pb::table_service_client::TableServiceClient;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng as _, SeedableRng as _};
use tokio::sync::watch;

use banco_scanner::ScannerSource;
pub(crate) use cards::Cards;
use target::Sink;

use banco::clients::croupier::TableArgs;

/// Lines a reader gives when it misreads: noise, a rank without its suit, an index past
/// the last card, letters that are no suit.
const MISREADS: [&str; 8] = ["ZZ", "K", "0052", "1X", "??", "AH7", "KX", "11H"];

#[derive(Debug, clap::Args)]
pub(crate) struct ShoeSimArgs {
    #[command(flatten)]
    at: TableArgs,
    /// Seed of the ChaCha20 shuffles: the same seed deals the same shoes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Decks in the shoe (as the table's).
    #[arg(long, default_value_t = 8)]
    decks: u8,
    /// Where the lines go, in the forms of the console's `--scanner`: a path (FIFO or
    /// file), tcp://HOST:PORT, unix://PATH, or - (standard output).
    #[arg(long, default_value = "-")]
    to: ScannerSource,
    /// Accept the console on the tcp:// or unix:// address instead of connecting to it.
    #[arg(long)]
    listen: bool,
    /// The pause between a card becoming due and the reader giving it, MIN-MAX ms.
    #[arg(long, default_value = "800-2500", value_parser = parse_delay)]
    delay_ms: (u64, u64),
    /// The share of cards first misread (0 to 1).
    #[arg(long, default_value_t = 0.02, value_parser = parse_rate)]
    misread_rate: f64,
}

fn parse_delay(text: &str) -> Result<(u64, u64), String> {
    let (min, max) = text
        .split_once('-')
        .ok_or_else(|| format!("{text}: expected MIN-MAX in milliseconds, e.g. 800-2500"))?;
    let min: u64 = min
        .trim()
        .parse()
        .map_err(|_| format!("{text}: `{min}` is not a whole number of ms"))?;
    let max: u64 = max
        .trim()
        .parse()
        .map_err(|_| format!("{text}: `{max}` is not a whole number of ms"))?;
    if min > max || max > 60_000 {
        return Err(format!("{text}: need MIN <= MAX <= 60000"));
    }
    Ok((min, max))
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!("{text}: expected a share from 0 to 1, e.g. 0.02")),
    }
}

/// True with probability `rate` (to a millionth).
fn chance(rng: &mut ChaCha20Rng, rate: f64) -> bool {
    // `rate` is checked to be in 0..=1, so the product fits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let threshold = (rate * 1_000_000.0).round() as u64;
    rng.next_u64() % 1_000_000 < threshold
}

/// What the reader is asked for now.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Due {
    /// The exposed first card of this shoe.
    Burn { shoe: String },
    /// The card after the first `dealt` cards of this round.
    Card { round: String, dealt: usize },
}

fn due(state: &pb::TableState) -> Option<Due> {
    use pb::TablePhase as P;
    if state.shoe_state == pb::ShoeState::AwaitingBurn as i32 {
        return Some(Due::Burn {
            shoe: state.shoe_id.clone(),
        });
    }
    let dealing = matches!(P::try_from(state.phase), Ok(P::BettingClosed | P::Dealing));
    let card_due = matches!(
        pb::Due::try_from(state.due),
        Ok(pb::Due::PlayerCard | pb::Due::BankerCard)
    );
    (dealing && card_due).then(|| Due::Card {
        round: state.round_id.clone(),
        dealt: state.cards.len(),
    })
}

/// What the reader has given, to tell a card still on its way to the table from one the
/// table took and the croupier then took back (which must be given again).
#[derive(Debug, Default)]
struct Reader {
    served: Option<Due>,
    /// The table has shown the card served (the round had more cards than before it).
    taken: bool,
}

impl Reader {
    /// What `state` asks of the reader now, if it has not given it yet.
    fn wanted(&mut self, state: &pb::TableState) -> Option<Due> {
        if let Some(Due::Card { round, dealt }) = &self.served
            && state.round_id == *round
            && state.cards.len() > *dealt
        {
            self.taken = true;
        }
        let now = due(state)?;
        (self.served.as_ref() != Some(&now) || self.taken).then_some(now)
    }

    fn served(&mut self, due: Due) {
        self.served = Some(due);
        self.taken = false;
    }
}

pub(crate) fn run(args: &ShoeSimArgs) -> anyhow::Result<ExitCode> {
    let token = banco_auth::client::read_token_file(&args.at.token_file).context("--token-file")?;
    let endpoint = args.at.server.endpoint()?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let mut sink = Sink::open(args.to.clone(), args.listen).await?;
        let client = TableServiceClient::with_interceptor(endpoint.connect_lazy(), token.bearer);
        let (tx, rx) = watch::channel(None);
        tokio::spawn(watch_table(client, args.at.table.clone(), tx));
        play(args, &mut sink, rx).await
    })
}

/// Keeps the latest state of the table in `tx`, reconnecting whenever the stream breaks
/// (the demo's dealer watches the table the same way).
pub(crate) async fn watch_table(
    mut client: banco::clients::croupier::Client,
    table_id: String,
    tx: watch::Sender<Option<pb::TableState>>,
) {
    loop {
        let request = pb::WatchTableRequest {
            table_id: table_id.clone(),
        };
        match client.watch_table(request).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(state)) => {
                            if tx.send(Some(state)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break,
                        Err(status) => {
                            eprintln!("shoe-sim: table stream: {}", status.message());
                            break;
                        }
                    }
                }
            }
            Err(status) => eprintln!("shoe-sim: cannot watch the table: {}", status.message()),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn play(
    args: &ShoeSimArgs,
    sink: &mut Sink,
    mut states: watch::Receiver<Option<pb::TableState>>,
) -> anyhow::Result<ExitCode> {
    // Shuffles draw from their own generator: how many pauses and misreads were drawn
    // depends on the table's timing, and must not change which shoe the seed deals.
    let mut shoe_rng = ChaCha20Rng::seed_from_u64(args.seed);
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed.rotate_left(32) ^ 0x5eed_0f7e_ade6);
    let mut cards: Option<Cards> = None;
    let mut reader = Reader::default();
    let (min, max) = args.delay_ms;
    loop {
        let now = states
            .borrow_and_update()
            .as_ref()
            .and_then(|state| reader.wanted(state));
        let Some(wanted) = now else {
            if states.changed().await.is_err() {
                return Ok(ExitCode::SUCCESS);
            }
            continue;
        };
        // The croupier draws the card and the reader takes its time to read it.
        let pause = min + rng.next_u64() % (max - min + 1);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if states.borrow().as_ref().and_then(due).as_ref() != Some(&wanted) {
            continue;
        }
        let misread = chance(&mut rng, args.misread_rate);
        if misread {
            let line = MISREADS[usize::try_from(rng.next_u64() % 8).unwrap_or(0)];
            eprintln!("shoe-sim: misread: {line}");
            sink.line(line).await;
            tokio::time::sleep(Duration::from_millis(pause / 2 + 50)).await;
        }
        let card = match &wanted {
            Due::Burn { shoe } => {
                let mut fresh = Cards::shuffle(shoe, args.decks, &mut shoe_rng)?;
                let burned = fresh.burn();
                cards = Some(fresh);
                burned.map(|(card, face_down)| {
                    eprintln!("shoe-sim: {shoe}: burn {card} ({face_down} face down)");
                    card
                })
            }
            Due::Card { round, dealt } => {
                let shoe = round.rsplit_once("-H").map_or(round.as_str(), |(s, _)| s);
                if cards.as_ref().is_none_or(|c| c.id != shoe) {
                    eprintln!("shoe-sim: {shoe}: joined after its burn; a fresh shuffle");
                    cards = Some(Cards::shuffle(shoe, args.decks, &mut shoe_rng)?);
                }
                let card = cards.as_mut().and_then(|c| c.card_of(round, *dealt));
                if let Some(card) = card {
                    eprintln!("shoe-sim: {round}: card {} is {card}", dealt + 1);
                }
                card
            }
        };
        let Some(card) = card else {
            eprintln!("shoe-sim: the shoe is empty; waiting for a new one");
            reader.served(wanted);
            continue;
        };
        sink.line(&card.to_string()).await;
        reader.served(wanted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use banco_rules::Card;

    #[test]
    fn every_misread_is_refused_by_the_card_parser() {
        for line in MISREADS {
            assert!(Card::parse(line).is_err(), "{line}");
        }
    }

    #[test]
    fn delays_and_rates_are_checked() {
        assert_eq!(parse_delay("800-2500"), Ok((800, 2500)));
        assert_eq!(parse_delay("0-0"), Ok((0, 0)));
        assert!(parse_delay("2500-800").is_err());
        assert!(parse_delay("fast").is_err());
        assert!(parse_delay("1-99999").is_err());
        assert_eq!(parse_rate("0.02"), Ok(0.02));
        assert!(parse_rate("1.5").is_err());
        assert!(parse_rate("-0.1").is_err());
        assert!(parse_rate("NaN").is_err());
    }

    #[test]
    fn a_card_taken_back_is_given_again_and_one_on_its_way_is_not() {
        let dealing = |dealt: usize, due: pb::Due| pb::TableState {
            shoe_id: "T01-S0001".into(),
            shoe_state: pb::ShoeState::InPlay.into(),
            phase: if due == pb::Due::Complete {
                pb::TablePhase::Result.into()
            } else {
                pb::TablePhase::Dealing.into()
            },
            round_id: "T01-S0001-H001".into(),
            cards: vec![pb::DealtCard::default(); dealt],
            due: due.into(),
            ..Default::default()
        };
        let card = |dealt| Due::Card {
            round: "T01-S0001-H001".into(),
            dealt,
        };
        let mut reader = Reader::default();
        assert_eq!(
            reader.wanted(&dealing(3, pb::Due::BankerCard)),
            Some(card(3))
        );
        reader.served(card(3));
        // Given, not yet on the table (the console has it): not given twice.
        assert_eq!(reader.wanted(&dealing(3, pb::Due::BankerCard)), None);
        // On the table, the hand complete; then taken back: due again, so given again.
        assert_eq!(reader.wanted(&dealing(4, pb::Due::Complete)), None);
        assert_eq!(
            reader.wanted(&dealing(3, pb::Due::BankerCard)),
            Some(card(3))
        );
        reader.served(card(3));
        assert_eq!(reader.wanted(&dealing(3, pb::Due::BankerCard)), None);
        // The next card due is wanted at once.
        assert_eq!(
            reader.wanted(&dealing(4, pb::Due::PlayerCard)),
            Some(card(4))
        );
    }

    #[test]
    fn what_is_due() {
        let mut state = pb::TableState {
            shoe_id: "T01-S0001".into(),
            shoe_state: pb::ShoeState::AwaitingBurn.into(),
            phase: pb::TablePhase::Idle.into(),
            ..Default::default()
        };
        assert_eq!(
            due(&state),
            Some(Due::Burn {
                shoe: "T01-S0001".into()
            })
        );
        state.shoe_state = pb::ShoeState::InPlay.into();
        assert_eq!(due(&state), None);
        state.phase = pb::TablePhase::BettingOpen.into();
        state.due = pb::Due::PlayerCard.into();
        assert_eq!(due(&state), None);
        state.phase = pb::TablePhase::BettingClosed.into();
        state.round_id = "T01-S0001-H001".into();
        assert_eq!(
            due(&state),
            Some(Due::Card {
                round: "T01-S0001-H001".into(),
                dealt: 0
            })
        );
        state.phase = pb::TablePhase::Result.into();
        state.due = pb::Due::Complete.into();
        assert_eq!(due(&state), None);
    }
}
