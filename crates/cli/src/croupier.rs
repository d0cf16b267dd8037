//! `banco croupier`: one TableService command from the command line, and the table's state
//! after it, for scripts, tests and a croupier without the console.
//!
//! Each invocation sends one command with a fresh random `command_id` (or `--command-id`,
//! to resend a command after a lost reply: the table applies it at most once). A refusal
//! prints a line starting `REFUSED:` and exits with code 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use banco_auth::BearerToken;
use banco_rules::Card;
use banco_wire::pb;
use banco_wire::pb::table_service_client::TableServiceClient;
use tonic::codegen::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::player::bets::kind_name;
use crate::player::connect::ServerArgs;
use crate::player::render::{dealt_cards, phase_name, shoe_state_name};
use banco_table::Currency;

/// Which table, on which broadcaster, as which croupier: shared by `banco croupier` and
/// `banco-sim shoe-sim`.
#[derive(Debug, clap::Args)]
pub struct TableArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The table.
    #[arg(long, default_value = "T01")]
    pub table: String,
    /// File holding a croupier token (`banco token issue --role croupier`).
    #[arg(long)]
    pub token_file: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CroupierArgs {
    #[command(flatten)]
    at: TableArgs,
    /// Resend a command with the id it was first sent with (default: a fresh random id).
    #[arg(long)]
    command_id: Option<String>,
    /// The ISO 4217 code of the table's money (the broadcaster's `--currency`).
    #[arg(long, default_value = "EUR")]
    currency: String,
    #[command(subcommand)]
    command: CroupierCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CroupierCommand {
    /// Put a freshly shuffled shoe in play.
    OpenShoe {
        /// Decks in the shoe (default: the table's configured shoe).
        #[arg(long)]
        decks: Option<u32>,
        /// Cards behind the cut card (with --decks; default 16).
        #[arg(long, default_value_t = 16)]
        cut_card_from_end: u32,
        /// Deal without a burn (with --decks).
        #[arg(long)]
        no_burn: bool,
    },
    /// Expose the burn card (as many are then burned face down as it counts).
    Burn {
        /// The exposed card, e.g. `7H`, `10H`, `th`.
        card: String,
        /// Typed by the croupier rather than read by the scanner.
        #[arg(long)]
        manual: bool,
    },
    /// Open betting on the next round.
    OpenBetting {
        /// How long betting stays open; 0: the table's configured duration.
        #[arg(long, default_value_t = 0)]
        duration_ms: u32,
    },
    /// Close betting now.
    CloseBetting,
    /// A card out of the shoe.
    Deal {
        /// The card, e.g. `9S`, `10H`, `kd`.
        card: String,
        /// Typed by the croupier rather than read by the scanner.
        #[arg(long)]
        manual: bool,
    },
    /// Take back the last card dealt (a misscan).
    Undo {
        /// Why; kept in the archive.
        #[arg(long)]
        reason: String,
        /// Safety check: the card meant (refused if it is not the last one dealt).
        #[arg(long)]
        card: Option<String>,
    },
    /// Confirm the result shown; the round is settled.
    Confirm {
        /// The round to confirm (default: the round the table shows now).
        #[arg(long)]
        round_id: Option<String>,
    },
    /// Void the round in play: every stake is returned.
    Void {
        /// Why; shown to players and kept in the archive.
        #[arg(long)]
        reason: String,
        /// The round to void (default: the round the table shows now).
        #[arg(long)]
        round_id: Option<String>,
    },
    /// End the shoe.
    EndShoe {
        /// Why the shoe ends early (a shoe that runs out ends by itself); kept in the log.
        #[arg(long)]
        reason: String,
    },
    /// Mute a player in the table chat (0 minutes lifts the mute).
    Mute {
        /// The player's id, as the chat lines in `state` show it.
        player: String,
        #[arg(long, default_value_t = 15)]
        minutes: u32,
        /// Why; told to the player and kept in the journal (needed unless lifting).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Print the table's state.
    State,
    /// Print the table's state after every change, until interrupted.
    Watch,
}

pub type Client = TableServiceClient<InterceptedService<Channel, BearerToken>>;

pub(crate) fn run(args: &CroupierArgs) -> anyhow::Result<ExitCode> {
    let bearer = crate::player::connect::read_token(&args.at.token_file)?;
    let currency = Currency::parse(&args.currency).context("--currency")?;
    let command_id = match &args.command_id {
        Some(id) => id.clone(),
        None => fresh_command_id()?,
    };
    let endpoint = args.at.server.endpoint()?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("could not connect to {}", args.at.server.server))?;
        let mut client = TableServiceClient::with_interceptor(channel, bearer);
        send(
            &mut client,
            &args.at.table,
            command_id,
            &args.command,
            currency,
        )
        .await
    })
}

/// The broadcaster's endpoint: plaintext for `http://`, TLS trusting `ca_cert` for
/// `https://` (see [`banco_auth::client::endpoint`]).
pub fn endpoint(server: &str, ca_cert: Option<&Path>) -> anyhow::Result<Endpoint> {
    banco_auth::client::endpoint(server, ca_cert).map_err(|err| {
        let flags = crate::grpc::ClientFlags {
            server: "--server",
            ca: "--ca-cert",
            token: "--token-file",
        };
        crate::grpc::client_error(err, &flags)
    })
}

async fn send(
    client: &mut Client,
    table: &str,
    command_id: String,
    command: &CroupierCommand,
    currency: Currency,
) -> anyhow::Result<ExitCode> {
    match command {
        CroupierCommand::State => {
            print!(
                "{}",
                render_state(&current_state(client, table).await?, currency)
            );
            return Ok(ExitCode::SUCCESS);
        }
        CroupierCommand::Watch => {
            let mut stream = client
                .watch_table(pb::WatchTableRequest {
                    table_id: table.to_owned(),
                })
                .await
                .map_err(status_error)?
                .into_inner();
            while let Some(state) = stream.message().await.map_err(status_error)? {
                println!("{}", render_state(&state, currency));
            }
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let reply = apply(client, table, command_id, command).await?;
    if reply.replayed {
        println!("(already applied: this is the reply it got then)");
    }
    if let Some(state) = &reply.state {
        print!("{}", render_state(state, currency));
    }
    match &reply.refusal {
        Some(refusal) => {
            println!("{}", render_refusal(refusal));
            Ok(ExitCode::from(crate::exit::REFUSED))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Sends one command to the table under `command_id` and returns the table's reply (a
/// refusal is a reply, not an error); `banco croupier` and the demo's dealer both use it.
pub async fn apply(
    client: &mut Client,
    table: &str,
    command_id: String,
    command: &CroupierCommand,
) -> anyhow::Result<pb::CommandReply> {
    let table_id = table.to_owned();
    let reply = match command {
        CroupierCommand::OpenShoe {
            decks,
            cut_card_from_end,
            no_burn,
        } => {
            let config = decks.map(|decks| pb::ShoeConfig {
                decks,
                cut_card_from_end: *cut_card_from_end,
                burn: if *no_burn {
                    pb::BurnRule::None
                } else {
                    pb::BurnRule::ExposeAndBurn
                }
                .into(),
                procedure: pb::ShoeProcedure::CutCard.into(),
            });
            let request = pb::OpenShoeRequest {
                table_id,
                command_id,
                config,
            };
            client.open_shoe(request).await
        }
        CroupierCommand::Burn { card, manual } => {
            let request = pb::BurnRequest {
                table_id,
                command_id,
                exposed_card: canonical(card)?,
                source: source(*manual).into(),
            };
            client.burn(request).await
        }
        CroupierCommand::OpenBetting { duration_ms } => {
            let request = pb::OpenBettingRequest {
                table_id,
                command_id,
                duration_ms: *duration_ms,
            };
            client.open_betting(request).await
        }
        CroupierCommand::CloseBetting => {
            let request = pb::CloseBettingRequest {
                table_id,
                command_id,
            };
            client.close_betting(request).await
        }
        CroupierCommand::Deal { card, manual } => {
            let request = pb::DealCardRequest {
                table_id,
                command_id,
                card: canonical(card)?,
                source: source(*manual).into(),
            };
            client.deal_card(request).await
        }
        CroupierCommand::Undo { reason, card } => {
            let request = pb::UndoLastCardRequest {
                table_id,
                command_id,
                reason: reason.clone(),
                card: card
                    .as_deref()
                    .map(canonical)
                    .transpose()?
                    .unwrap_or_default(),
            };
            client.undo_last_card(request).await
        }
        CroupierCommand::Confirm { round_id } => {
            let round_id = match round_id {
                Some(id) => id.clone(),
                None => current_state(client, table).await?.round_id,
            };
            let request = pb::ConfirmResultRequest {
                table_id,
                command_id,
                round_id,
            };
            client.confirm_result(request).await
        }
        CroupierCommand::Void { reason, round_id } => {
            let round_id = match round_id {
                Some(id) => id.clone(),
                None => current_state(client, table).await?.round_id,
            };
            let request = pb::VoidRoundRequest {
                table_id,
                command_id,
                round_id,
                reason: reason.clone(),
            };
            client.void_round(request).await
        }
        CroupierCommand::EndShoe { reason } => {
            let request = pb::EndShoeRequest {
                table_id,
                command_id,
                reason: reason.clone(),
            };
            client.end_shoe(request).await
        }
        CroupierCommand::Mute {
            player,
            minutes,
            reason,
        } => {
            let request = pb::MutePlayerRequest {
                table_id,
                command_id,
                player_id: player.clone(),
                minutes: *minutes,
                reason: reason.clone(),
            };
            client.mute_player(request).await
        }
        CroupierCommand::State | CroupierCommand::Watch => {
            bail!("`state` and `watch` read the table: they are not commands to send")
        }
    };
    Ok(reply.map_err(status_error)?.into_inner())
}

/// The table's state now: the first message of WatchTable.
pub async fn current_state(client: &mut Client, table: &str) -> anyhow::Result<pb::TableState> {
    let request = pb::GetTableRequest {
        table_id: table.to_owned(),
    };
    Ok(client
        .get_table(request)
        .await
        .map_err(status_error)?
        .into_inner())
}

pub fn status_error(status: tonic::Status) -> anyhow::Error {
    crate::grpc::status_error(&status)
}

const fn source(manual: bool) -> pb::CardSource {
    if manual {
        pb::CardSource::Manual
    } else {
        pb::CardSource::Scanner
    }
}

/// People type `10h` or `th`; the wire takes `TH`.
fn canonical(text: &str) -> anyhow::Result<String> {
    let card = Card::parse(text.trim()).with_context(|| format!("`{text}` is not a card"))?;
    Ok(card.to_string())
}

/// 128 random bits as a UUID-shaped string: a fresh command id or idempotency key.
pub fn fresh_command_id() -> anyhow::Result<String> {
    banco_auth::client::fresh_id().map_err(|e| anyhow::anyhow!("cannot draw a random id: {e}"))
}

fn enum_name<E: std::fmt::Debug>(value: Result<E, prost::UnknownEnumValue>) -> String {
    match value {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("unknown ({})", e.0),
    }
}

/// `REFUSED: MISREAD: <sentence> (field card)`.
pub fn render_refusal(refusal: &pb::Refusal) -> String {
    let mut line = format!(
        "REFUSED: {}: {}",
        enum_name(pb::RefusalCode::try_from(refusal.code)),
        refusal.message
    );
    if !refusal.field.is_empty() {
        line.push_str(&format!(" (field {})", refusal.field));
    }
    line
}

/// The state as a few lines a person reads at a glance: names, and money in `currency`.
pub(crate) fn render_state(state: &pb::TableState, currency: Currency) -> String {
    let mut out = String::new();
    let phase = phase_name(state.phase);
    let shoe = shoe_state_name(state.shoe_state);
    out.push_str(&format!(
        "table {}  seq {}  phase {phase}",
        state.table_id, state.seq
    ));
    if !state.croupier.is_empty() {
        out.push_str(&format!("  croupier {}", state.croupier));
    }
    out.push('\n');
    if state.shoe_id.is_empty() {
        out.push_str(&format!("shoe: none ({shoe})\n"));
    } else {
        out.push_str(&format!(
            "shoe {} ({shoe}, {} cards left)\n",
            state.shoe_id, state.cards_left
        ));
    }
    if !state.round_id.is_empty() {
        out.push_str(&format!("round {}\n", state.round_id));
    }
    if !state.cards.is_empty() {
        out.push_str(&format!(
            "cards {}  (Player {}, Banker {})\n",
            dealt_cards(&state.cards),
            state.player_total,
            state.banker_total
        ));
    }
    match pb::Due::try_from(state.due) {
        Ok(pb::Due::PlayerCard) => out.push_str("due: a Player card\n"),
        Ok(pb::Due::BankerCard) => out.push_str("due: a Banker card\n"),
        Ok(pb::Due::Complete) => out.push_str("due: nothing, the hand is complete\n"),
        _ => {}
    }
    if let Some(result) = &state.result {
        out.push_str(&format!(
            "result: {} (Player {} – Banker {}){}\n",
            enum_name(pb::Winner::try_from(result.winner)),
            result.player_total,
            result.banker_total,
            if result.natural { ", natural" } else { "" }
        ));
    }
    if !state.bet_totals.is_empty() {
        let totals: Vec<String> = state
            .bet_totals
            .iter()
            .map(|t| {
                format!(
                    "{} {} ({} bettor{})",
                    kind_name(t.kind),
                    currency.amount(t.total_minor),
                    t.bettors,
                    if t.bettors == 1 { "" } else { "s" }
                )
            })
            .collect();
        out.push_str(&format!("bets: {}\n", totals.join(", ")));
    }
    if state.players > 0 || !state.seats.is_empty() {
        let seats: Vec<String> = state
            .seats
            .iter()
            .enumerate()
            .map(|(i, who)| format!("{}:{}", i + 1, if who.is_empty() { "-" } else { who }))
            .collect();
        out.push_str(&format!(
            "players: {}{}\n",
            state.players,
            if seats.is_empty() {
                String::new()
            } else {
                format!("; seats {}", seats.join(" "))
            }
        ));
    }
    for line in &state.chat {
        out.push_str(&format!("chat <{}> {}\n", line.player, line.text));
    }
    for alert in &state.alerts {
        out.push_str(&format!(
            "ALERT {}: {} ({})\n",
            enum_name(pb::AlertLevel::try_from(alert.level)),
            alert.message,
            alert.code
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_reads_in_names_and_money() {
        let state = pb::TableState {
            table_id: "T01".to_owned(),
            phase: pb::TablePhase::BettingOpen.into(),
            shoe_state: pb::ShoeState::InPlay.into(),
            shoe_id: "T01-S0001".to_owned(),
            cards_left: 400,
            bet_totals: vec![pb::PositionTotal {
                kind: pb::BetKind::Player.into(),
                total_minor: 10_000,
                bettors: 1,
            }],
            ..pb::TableState::default()
        };
        let text = render_state(&state, Currency::EUR);
        assert!(text.contains("phase betting open"), "{text}");
        assert!(
            text.contains("shoe T01-S0001 (in play, 400 cards left)"),
            "{text}"
        );
        assert!(text.contains("bets: player €100.00 (1 bettor)"), "{text}");
        assert!(
            !text.contains("BET_KIND") && !text.contains("10000"),
            "{text}"
        );
    }

    #[test]
    fn cards_are_made_canonical() {
        assert_eq!(canonical("10h").ok().as_deref(), Some("TH"));
        assert_eq!(canonical("kd").ok().as_deref(), Some("KD"));
        assert!(canonical("1X").is_err());
    }
}
