//! One PlayerService call per command, and its answer as lines a person reads.

use std::process::ExitCode;

use anyhow::bail;
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::bet_decision::Decision;

use super::amount::{money, parse_stake};
use super::bets::{bets_to_pb, kind_name, parse_bets};
use super::connect::{Client, fresh_key, status_error};
use super::history::entry_line;
use super::lobby::render_tables;
use super::render::{balance_text, event_json, event_line};
use super::round::round_for_bets;
use super::watch::{Feed, Item};
use super::{PlayerCommand, RoundArgs};
use crate::croupier::render_refusal;
use crate::times::Times;

/// What was parsed from the command line before anything is sent.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    bets: Vec<(BetKind, i64)>,
    self_limit: i64,
}

pub(crate) fn check(command: &PlayerCommand) -> anyhow::Result<Checked> {
    let mut checked = Checked::default();
    match command {
        PlayerCommand::Bet { bets, .. } => checked.bets = parse_bets(bets)?,
        PlayerCommand::SelfLimit { amount } => {
            checked.self_limit = if amount.eq_ignore_ascii_case("none") {
                0
            } else {
                parse_stake(&format!("self-limit {amount}"), amount)?
            };
        }
        PlayerCommand::History { page_size, .. } if !(1..=100).contains(page_size) => {
            bail!("--page-size {page_size}: must be 1 to 100")
        }
        PlayerCommand::Chat { text } if text.join(" ").trim().is_empty() => {
            bail!("chat: the text is empty")
        }
        PlayerCommand::Video(video) => video.check()?,
        _ => {}
    }
    Ok(checked)
}

fn grpc<T>(call: &str, result: Result<tonic::Response<T>, tonic::Status>) -> anyhow::Result<T> {
    result
        .map(tonic::Response::into_inner)
        .map_err(|s| status_error(&s).context(call.to_owned()))
}

fn key_of(round: &RoundArgs) -> anyhow::Result<String> {
    match &round.key {
        Some(key) => Ok(key.clone()),
        None => fresh_key(),
    }
}

const fn code(all_accepted: bool) -> ExitCode {
    if all_accepted {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(crate) async fn run(
    mut client: Client,
    table: &str,
    command: &PlayerCommand,
    checked: Checked,
    times: &Times,
) -> anyhow::Result<ExitCode> {
    let table_id = table.to_owned();
    match command {
        PlayerCommand::Tables => {
            let reply = grpc(
                "ListTables",
                client.list_tables(pb::ListTablesRequest {}).await,
            )?;
            print!("{}", render_tables(&reply.tables));
            Ok(ExitCode::SUCCESS)
        }
        PlayerCommand::Watch {
            json,
            once,
            until_rounds,
            max_events,
        } => {
            let stop = Stop {
                until_rounds: *until_rounds,
                max_events: *max_events,
            };
            watch(client, table, *json, *once, stop, times).await
        }
        PlayerCommand::Bet { round, .. } => {
            let round_id = round_for_bets(&mut client, table, round.round.as_deref()).await?;
            let request = pb::PlaceBetsRequest {
                table_id,
                round_id: round_id.clone(),
                bets: bets_to_pb(&checked.bets),
                idempotency_key: key_of(round)?,
            };
            let reply = grpc("PlaceBets", client.place_bets(request).await)?;
            let (lines, ok) = decision_lines(&reply);
            println!("round {round_id}");
            for line in lines {
                println!("{line}");
            }
            Ok(code(ok))
        }
        PlayerCommand::Rebet { round } => {
            let round_id = round_for_bets(&mut client, table, round.round.as_deref()).await?;
            let request = pb::RebetRequest {
                table_id,
                round_id: round_id.clone(),
                idempotency_key: key_of(round)?,
            };
            let reply = grpc("Rebet", client.rebet(request).await)?;
            let (lines, ok) = decision_lines(&reply);
            println!("round {round_id} (rebet)");
            for line in lines {
                println!("{line}");
            }
            Ok(code(ok))
        }
        PlayerCommand::Clear { round } => {
            let round_id = round_for_bets(&mut client, table, round.round.as_deref()).await?;
            let request = pb::ClearBetsRequest {
                table_id,
                round_id: round_id.clone(),
                idempotency_key: key_of(round)?,
            };
            let reply = grpc("ClearBets", client.clear_bets(request).await)?;
            println!("round {round_id}");
            if reply.cleared.is_empty() {
                println!("nothing to clear");
            }
            for bet in &reply.cleared {
                println!("cleared {} {}", kind_name(bet.kind), money(bet.stake_minor));
            }
            if let Some(balance) = &reply.balance {
                println!("balance {}", balance_text(balance));
            }
            Ok(ExitCode::SUCCESS)
        }
        PlayerCommand::History {
            page_size,
            all,
            all_tables,
        } => {
            let mut page_token = String::new();
            let mut rounds = 0usize;
            loop {
                let request = pb::MyBetsRequest {
                    table_id: if *all_tables {
                        String::new()
                    } else {
                        table_id.clone()
                    },
                    page_size: *page_size,
                    page_token: page_token.clone(),
                };
                let reply = grpc("MyBets", client.my_bets(request).await)?;
                for entry in &reply.entries {
                    println!("{}", entry_line(entry, times));
                }
                rounds += reply.entries.len();
                if reply.next_page_token.is_empty() {
                    break;
                }
                if !*all {
                    println!("(more: --all for every page)");
                    break;
                }
                page_token = reply.next_page_token;
            }
            if rounds == 0 {
                println!("no bets yet");
            }
            Ok(ExitCode::SUCCESS)
        }
        PlayerCommand::Balance => {
            let balance = grpc(
                "GetBalance",
                client.get_balance(pb::GetBalanceRequest {}).await,
            )?;
            println!("balance {}", balance_text(&balance));
            Ok(ExitCode::SUCCESS)
        }
        PlayerCommand::Chat { text } => {
            let request = pb::SendChatRequest {
                table_id,
                text: text.join(" "),
            };
            let reply = grpc("SendChat", client.send_chat(request).await)?;
            refusal_or("sent", reply.refusal.as_ref())
        }
        PlayerCommand::SelfLimit { .. } => {
            let request = pb::SetSelfLimitRequest {
                max_bet_minor: checked.self_limit,
            };
            let reply = grpc("SetSelfLimit", client.set_self_limit(request).await)?;
            println!("{}", self_limit_line(&reply, times));
            Ok(ExitCode::SUCCESS)
        }
        PlayerCommand::Seat { seat } => {
            let request = pb::TakeSeatRequest {
                table_id,
                seat: seat.unwrap_or(0),
            };
            let reply = grpc("TakeSeat", client.take_seat(request).await)?;
            seat_reply(&reply)
        }
        PlayerCommand::LeaveSeat => {
            let reply = grpc(
                "LeaveSeat",
                client.leave_seat(pb::LeaveSeatRequest { table_id }).await,
            )?;
            seat_reply(&reply)
        }
        PlayerCommand::Video(args) => super::video::run(client, table, args).await,
        PlayerCommand::Pass { round } => {
            let round_id = round_for_bets(&mut client, table, round.as_deref()).await?;
            let request = pb::PassHandRequest {
                table_id,
                round_id: round_id.clone(),
            };
            let reply = grpc("PassHand", client.pass_hand(request).await)?;
            refusal_or(&format!("passing round {round_id}"), reply.refusal.as_ref())
        }
    }
}

fn refusal_or(done: &str, refusal: Option<&pb::Refusal>) -> anyhow::Result<ExitCode> {
    match refusal {
        Some(refusal) => {
            println!("{}", render_refusal(refusal));
            Ok(ExitCode::FAILURE)
        }
        None => {
            println!("{done}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn seat_reply(reply: &pb::SeatResponse) -> anyhow::Result<ExitCode> {
    if let Some(refusal) = &reply.refusal {
        println!("{}", render_refusal(refusal));
        return Ok(ExitCode::FAILURE);
    }
    if reply.seat == 0 {
        println!("no seat");
    } else {
        println!("seat {}", reply.seat);
    }
    Ok(ExitCode::SUCCESS)
}

/// `self-limit 25.00 per stake`, and any raise still waiting for its date.
pub(crate) fn self_limit_line(reply: &pb::SetSelfLimitResponse, times: &Times) -> String {
    let mut line = if reply.max_bet_minor == 0 {
        "self-limit: none".to_owned()
    } else {
        format!("self-limit {} per stake", money(reply.max_bet_minor))
    };
    if let Some(at) = &reply.pending_effective_at {
        let pending = if reply.pending_max_bet_minor == 0 {
            "none".to_owned()
        } else {
            money(reply.pending_max_bet_minor)
        };
        line.push_str(&format!("; {pending} from {}", times.of(at)));
    }
    line
}

/// One line per decision (`accepted …` or `refused …`), then the balance; and whether
/// every bet was accepted.
pub(crate) fn decision_lines(reply: &pb::PlaceBetsResponse) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut all = !reply.decisions.is_empty();
    if reply.decisions.is_empty() {
        lines.push("no bets (nothing to rebet?)".to_owned());
    }
    for d in &reply.decisions {
        match &d.decision {
            Some(Decision::Accepted(a)) => {
                let mut line =
                    format!("accepted {} {}", kind_name(a.kind), money(a.accepted_minor));
                if a.accepted_minor != a.requested_minor {
                    line.push_str(&format!(
                        " (asked {}, raised to the minimum)",
                        money(a.requested_minor)
                    ));
                }
                line.push_str(&format!(
                    "; on {} in all: {}",
                    kind_name(a.kind),
                    money(a.position_total_minor)
                ));
                lines.push(line);
            }
            Some(Decision::Refusal(r)) => {
                all = false;
                lines.push(format!("refused: {}", render_refusal(r)));
            }
            None => {
                all = false;
                lines.push("no decision given".to_owned());
            }
        }
    }
    if let Some(balance) = &reply.balance {
        lines.push(format!("balance {}", balance_text(balance)));
    }
    (lines, all)
}

/// When `watch` stops by itself.
#[derive(Debug, Clone, Copy)]
struct Stop {
    until_rounds: Option<u64>,
    max_events: Option<u64>,
}

async fn watch(
    client: Client,
    table: &str,
    json: bool,
    once: bool,
    Stop {
        until_rounds,
        max_events,
    }: Stop,
    times: &Times,
) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let mut feed = Feed::new(client, table, once);
    let (mut rounds, mut events) = (0u64, 0u64);
    let mut out = std::io::stdout();
    loop {
        if until_rounds.is_some_and(|n| rounds >= n) || max_events.is_some_and(|n| events >= n) {
            return Ok(ExitCode::SUCCESS);
        }
        let line = match feed.next().await? {
            Item::Event(event) | Item::Gap(event) | Item::CutOff(event) => {
                if matches!(event.event, Some(pb::table_event::Event::RoundResult(_))) {
                    rounds += 1;
                }
                events += 1;
                if json {
                    event_json(&event, times).to_string()
                } else {
                    event_line(&event, times)
                }
            }
            Item::Lost { error, retry_in } => {
                eprintln!(
                    "connection lost ({error}); retrying in {:.1} s",
                    retry_in.as_secs_f64()
                );
                continue;
            }
        };
        // A closed stdout (`| head`) ends the watch quietly.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}
