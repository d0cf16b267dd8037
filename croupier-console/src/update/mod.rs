//! The one place the model changes: `update(model, action)` returns what to do next.
//! Pure: no I/O, no clock (time comes in `Action::Tick`), so every key and every line is
//! tested by calling it.
//!
//! - here: the table's states and replies, the scanner, and sending one command at a time;
//! - [`keys`]: what each key does in normal use, each checked against what the screen shows;
//! - [`questions`]: the questions (why, which player, really), and withdrawing one the
//!   table has moved on from.

mod keys;
mod questions;

use banco_rules::{Card, Money, Scoreboard, Winner};
use banco_wire::pb;
use ratatui::crossterm::event::KeyEventKind;

use crate::action::{Action, Effect};
use crate::command::{Command, Source};
use crate::model::{Connection, Model};
use crate::scan_line::{ScanLine, scan_line};

/// How long a failed send waits before it is tried again while the stream stays up.
pub const RETRY_MS: u64 = 1_000;
/// Longest reason or player id the console takes.
pub const MAX_TEXT: usize = 200;
/// Longest mute: a week.
pub const MAX_MUTE_MINUTES: u32 = 7 * 24 * 60;

pub fn update(model: &mut Model, action: Action) -> Vec<Effect> {
    let mut effects = Vec::new();
    match action {
        Action::Tick { now_ms } => model.now_ms = now_ms,
        Action::Key(key) => {
            if key.kind != KeyEventKind::Release {
                keys::on_key(model, key, &mut effects);
            }
        }
        Action::ScannerLine(line) => on_scanned(model, &line, &mut effects),
        Action::ScannerStatus { ok, text } => model.scanner = Some((ok, text)),
        Action::Connected(state) => {
            model.connection = Connection::Online;
            // A command in flight when the link broke may or may not have arrived: it is
            // sent again with the same id, and the table answers a repeat with its reply.
            model.in_flight = false;
            model.retry_at_ms = None;
            adopt(model, *state, true);
        }
        Action::State(state) => adopt(model, *state, false),
        Action::Disconnected(why) => {
            model.connection = Connection::Down(why);
            model.in_flight = false;
        }
        Action::Reply { id, reply } => on_reply(model, &id, *reply, &mut effects),
        Action::SendFailed { id, code, message } => {
            on_send_failed(model, &id, code, &message, &mut effects);
        }
        Action::Resize => {}
    }
    // Whatever happened (a state, a reply, a card queued), a question about a table that
    // has since moved on is not left to be answered.
    questions::withdraw_if_stale(model, &mut effects);
    pump(model, &mut effects);
    effects
}

/// Sends the first pending command when the link is up and nothing is on its way: one at
/// a time, so the table gets them in the order they were given.
fn pump(model: &mut Model, effects: &mut Vec<Effect>) {
    if model.connection != Connection::Online || model.in_flight {
        return;
    }
    if model.retry_at_ms.is_some_and(|at| model.now_ms < at) {
        return;
    }
    let burn_due = model.shoe_state() == pb::ShoeState::AwaitingBurn;
    if let Some(head) = model.pending.front_mut() {
        if let Command::Card { card, source } = head.command {
            // Settled once, at the first send: a resend must be the same command.
            head.command = if burn_due {
                Command::Burn { card, source }
            } else {
                Command::Deal { card, source }
            };
        }
        model.in_flight = true;
        model.retry_at_ms = None;
        effects.push(Effect::Send(head.clone()));
    }
}

/// Takes a state from the stream or a reply, unless it is older than the one shown.
fn adopt(model: &mut Model, state: pb::TableState, snapshot: bool) {
    if !snapshot && model.table.as_ref().is_some_and(|t| state.seq < t.seq) {
        return;
    }
    model.betting_deadline_ms = match (&state.betting_closes_at, &state.server_time) {
        (Some(closes), Some(now)) => {
            let left_ms = (closes.seconds - now.seconds) * 1000
                + i64::from(closes.nanos - now.nanos) / 1_000_000;
            Some(model.now_ms + u64::try_from(left_ms.max(0)).unwrap_or(0))
        }
        _ => None,
    };
    let results_changed = model.table.as_ref().is_none_or(|t| {
        t.last_results != state.last_results
            || t.roads.as_ref().map(|r| &r.bead_plate)
                != state.roads.as_ref().map(|r| &r.bead_plate)
    });
    if results_changed {
        model.roads = Scoreboard::from_results(&shoe_results(&state));
    }
    model.table = Some(state);
    // An old refusal or note is cleared once the round has moved on.
    if model
        .notice
        .as_ref()
        .is_some_and(|n| n.stage != model.stage())
    {
        model.notice = None;
    }
}

/// Every result of the shoe: the roads' bead plate (the whole shoe), or from a table that
/// sends no roads, its last results.
fn shoe_results(state: &pb::TableState) -> Vec<Winner> {
    match &state.roads {
        Some(roads) => roads
            .bead_plate
            .chars()
            .filter_map(Winner::from_letter)
            .collect(),
        None => state
            .last_results
            .iter()
            .filter_map(|&raw| banco_wire::convert::winner("last_results", raw).ok())
            .collect(),
    }
}

fn on_reply(model: &mut Model, id: &str, reply: pb::CommandReply, effects: &mut Vec<Effect>) {
    // A late answer to a command already answered (sent twice across a reconnect).
    if model.pending.front().is_none_or(|p| p.id != id) {
        return;
    }
    model.in_flight = false;
    let Some(done) = model.pending.pop_front() else {
        return;
    };
    if let Some(state) = reply.state {
        adopt(model, state, false);
    }
    if let Some(refusal) = reply.refusal {
        model.refuse(format!(
            "REFUSED {}: {}",
            done.command.label(),
            refusal.message
        ));
        effects.push(Effect::Bell);
        return;
    }
    if let Some(mut text) = success(model, &done.command) {
        if reply.replayed {
            text.push_str(" (already applied)");
        }
        model.note(text);
    }
}

/// What the croupier is told when the table took a command whose effect the screen does
/// not make plain by itself.
fn success(model: &Model, command: &Command) -> Option<String> {
    let table = model.table.as_ref();
    Some(match command {
        Command::Undo { card, .. } => format!("undone {}", card.pretty()),
        Command::Mute {
            player, minutes: 0, ..
        } => format!("mute of {player} lifted"),
        Command::Mute {
            player, minutes, ..
        } => format!("muted {player} for {minutes} min"),
        Command::Void { round_id, .. } => {
            let returned = table
                .and_then(|t| t.round_totals.as_ref())
                .map(|t| {
                    format!(
                        ": {} returned",
                        Money::new(t.returned_minor, model.currency())
                    )
                })
                .unwrap_or_default();
            format!("round voided ({round_id}){returned}")
        }
        Command::Confirm { round_id } => format!("round {round_id} settled and paid"),
        Command::EndShoe { .. } => "shoe ended: N opens the next one".to_owned(),
        Command::Burn { card, .. } => {
            let face_down = table
                .and_then(|t| t.burn.as_ref())
                .map_or(0, |b| b.burned_face_down);
            format!("burn {}: {face_down} more burned face down", card.pretty())
        }
        Command::Card { .. }
        | Command::Deal { .. }
        | Command::OpenShoe
        | Command::OpenBetting { .. }
        | Command::CloseBetting => return None,
    })
}

fn on_send_failed(
    model: &mut Model,
    id: &str,
    code: tonic::Code,
    message: &str,
    effects: &mut Vec<Effect>,
) {
    use tonic::Code as C;
    if model.pending.front().is_none_or(|p| p.id != id) {
        return;
    }
    model.in_flight = false;
    let transient = matches!(
        code,
        C::Unavailable
            | C::DeadlineExceeded
            | C::Cancelled
            | C::Aborted
            | C::ResourceExhausted
            | C::Unknown
    );
    if transient {
        // Kept, in place, with its id: sent again shortly or when the link is back.
        model.retry_at_ms = Some(model.now_ms + RETRY_MS);
        return;
    }
    if let Some(done) = model.pending.pop_front() {
        model.refuse(format!(
            "NOT SENT {}: {code:?}: {message}",
            done.command.label()
        ));
        effects.push(Effect::Bell);
    }
}

fn on_scanned(model: &mut Model, line: &str, effects: &mut Vec<Effect>) {
    match scan_line(line) {
        ScanLine::Blank => {}
        ScanLine::Card(card) => queue_card(model, card, Source::Scanner),
        ScanLine::Refused(message) => refuse(model, effects, message),
    }
}

fn queue_card(model: &mut Model, card: Card, source: Source) {
    model.enqueue(Command::Card { card, source });
}

fn refuse(model: &mut Model, effects: &mut Vec<Effect>, text: impl Into<String>) {
    model.refuse(text);
    effects.push(Effect::Bell);
}
