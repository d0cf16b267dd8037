//! The one place the model changes: `update(model, action)` returns what to do next.
//! Pure: no I/O, no clock (time comes in `Action::Tick`), so every key and every line is
//! tested by calling it.

use banco_rules::{Card, Scoreboard};
use banco_wire::pb;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::action::{Action, Effect};
use crate::command::{Command, Source};
use crate::entry::{Entry, Step};
use crate::model::{Connection, Mode, Model, Purpose};
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
                on_key(model, key, &mut effects);
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
    let results_changed = model
        .table
        .as_ref()
        .is_none_or(|t| t.last_results != state.last_results);
    if results_changed {
        let winners: Vec<_> = state
            .last_results
            .iter()
            .filter_map(|&raw| banco_wire::convert::winner("last_results", raw).ok())
            .collect();
        model.roads = Scoreboard::from_results(&winners);
    }
    model.table = Some(state);
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
    }
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
        ScanLine::Refused(message) => {
            model.refuse(message);
            effects.push(Effect::Bell);
        }
    }
}

fn queue_card(model: &mut Model, card: Card, source: Source) {
    model.enqueue(Command::Card { card, source });
}

fn refuse(model: &mut Model, effects: &mut Vec<Effect>, text: impl Into<String>) {
    model.refuse(text);
    effects.push(Effect::Bell);
}

fn on_key(model: &mut Model, key: KeyEvent, effects: &mut Vec<Effect>) {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c' | 'q')) {
        quit(model, effects);
        return;
    }
    match std::mem::replace(&mut model.mode, Mode::Normal) {
        Mode::Normal => normal_key(model, key, effects),
        // Any key closes the list of keys.
        Mode::Help => {}
        Mode::Reason { purpose, text } => reason_key(model, key, purpose, text, effects),
        Mode::MuteWho { text } => mute_who_key(model, key, text, effects),
        Mode::ConfirmVoid { round_id, reason } => match key.code {
            KeyCode::Char('y' | 'Y') => model.enqueue(Command::Void { round_id, reason }),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => model.note("void cancelled"),
            _ => {
                model.mode = Mode::ConfirmVoid { round_id, reason };
                refuse(model, effects, "press Y to void the round, or N to keep it");
            }
        },
        Mode::ConfirmQuit { why } => match key.code {
            KeyCode::Char('y' | 'Y') => effects.push(Effect::Quit),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => model.note("still here"),
            _ => model.mode = Mode::ConfirmQuit { why },
        },
    }
}

fn quit(model: &mut Model, effects: &mut Vec<Effect>) {
    let mut why = Vec::new();
    if model.round_open() {
        let round = model.table.as_ref().map_or("", |t| t.round_id.as_str());
        why.push(format!(
            "round {round} is open ({})",
            crate::view::phase_name(model.phase())
        ));
    }
    if !model.pending.is_empty() {
        why.push(format!(
            "{} command(s) not answered yet",
            model.pending.len()
        ));
    }
    if why.is_empty() {
        effects.push(Effect::Quit);
    } else {
        model.mode = Mode::ConfirmQuit {
            why: why.join("; "),
        };
    }
}

fn normal_key(model: &mut Model, key: KeyEvent, effects: &mut Vec<Effect>) {
    let c = match key.code {
        KeyCode::Char(c) => c,
        KeyCode::Esc => {
            model.entry.clear();
            model.notice = None;
            return;
        }
        KeyCode::Backspace => {
            model.entry.back();
            return;
        }
        KeyCode::Enter => {
            if !model.entry.is_empty() {
                let rank = model.entry.text().to_owned();
                refuse(
                    model,
                    effects,
                    format!("{rank} needs its suit: S H D C (Backspace to change it)"),
                );
            }
            return;
        }
        other => {
            refuse(
                model,
                effects,
                format!("{other} is not a key of the console: ? lists them"),
            );
            return;
        }
    };
    if !model.entry.is_empty() && !Entry::takes(c) {
        let why = model.entry.not_a_suit(c);
        refuse(model, effects, why);
        return;
    }
    if c == '?' {
        model.mode = Mode::Help;
        return;
    }
    if Entry::takes(c) {
        match model.entry.push(c) {
            Step::Rank => {}
            Step::Card(card) => queue_card(model, card, Source::Keyboard),
            Step::Refused(why) => refuse(model, effects, why),
        }
        return;
    }
    match c.to_ascii_lowercase() {
        'n' => model.enqueue(Command::OpenShoe),
        'o' => model.enqueue(Command::OpenBetting {
            duration_ms: model.betting_ms,
        }),
        'x' => model.enqueue(Command::CloseBetting),
        'r' => match current_round(model) {
            Some(round_id) => model.enqueue(Command::Confirm { round_id }),
            None => refuse(model, effects, "no round to confirm"),
        },
        'u' => undo(model, effects),
        'v' => match current_round(model).filter(|_| model.round_open()) {
            Some(round_id) => {
                model.mode = Mode::Reason {
                    purpose: Purpose::Void { round_id },
                    text: String::new(),
                };
            }
            None => {
                let phase = crate::view::phase_name(model.phase());
                refuse(
                    model,
                    effects,
                    format!("no round to void (the table is {phase})"),
                );
            }
        },
        'e' => {
            let no_shoe = matches!(
                model.shoe_state(),
                pb::ShoeState::NoShoe | pb::ShoeState::Ended | pb::ShoeState::Unspecified
            );
            if no_shoe {
                refuse(model, effects, "no shoe to end");
            } else {
                model.mode = Mode::Reason {
                    purpose: Purpose::EndShoe,
                    text: String::new(),
                };
            }
        }
        'm' => {
            model.mode = Mode::MuteWho {
                text: String::new(),
            };
        }
        _ => refuse(
            model,
            effects,
            format!("{c} is not a key of the console: ? lists them"),
        ),
    }
}

fn current_round(model: &Model) -> Option<String> {
    model
        .table
        .as_ref()
        .map(|t| t.round_id.clone())
        .filter(|id| !id.is_empty())
}

/// `U`: a card not sent yet is simply dropped; a card the table has needs a reason.
fn undo(model: &mut Model, effects: &mut Vec<Effect>) {
    let unsent_tail = model.pending.len() > usize::from(model.in_flight);
    if unsent_tail && let Some(card) = model.pending.back().and_then(|p| p.command.card()) {
        model.pending.pop_back();
        model.note(format!("{card} taken back before it was sent"));
        return;
    }
    let last = model
        .table
        .as_ref()
        .and_then(|t| t.cards.last())
        .and_then(|d| Card::parse(&d.card).ok());
    match last {
        Some(card) => {
            model.mode = Mode::Reason {
                purpose: Purpose::Undo { card },
                text: String::new(),
            };
        }
        None => refuse(
            model,
            effects,
            "nothing to undo: no card of this hand has been dealt",
        ),
    }
}

/// Typing into a one-line question. Returns the text when Enter is pressed; otherwise
/// puts the question back with the text as it now is.
fn edit_line(key: KeyEvent, text: &mut String) -> Option<Option<String>> {
    match key.code {
        KeyCode::Enter => Some(Some(text.trim().to_owned())),
        KeyCode::Esc => Some(None),
        KeyCode::Backspace => {
            text.pop();
            None
        }
        KeyCode::Char(c) if !c.is_control() && text.chars().count() < MAX_TEXT => {
            text.push(c);
            None
        }
        _ => None,
    }
}

fn reason_key(
    model: &mut Model,
    key: KeyEvent,
    purpose: Purpose,
    mut text: String,
    effects: &mut Vec<Effect>,
) {
    let reason = match edit_line(key, &mut text) {
        None => {
            model.mode = Mode::Reason { purpose, text };
            return;
        }
        Some(None) => {
            model.note("cancelled");
            return;
        }
        Some(Some(reason)) => reason,
    };
    if reason.is_empty() {
        model.mode = Mode::Reason { purpose, text };
        refuse(model, effects, "a reason is required (Esc cancels)");
        return;
    }
    match purpose {
        Purpose::Undo { card } => model.enqueue(Command::Undo { reason, card }),
        Purpose::Void { round_id } => model.mode = Mode::ConfirmVoid { round_id, reason },
        Purpose::EndShoe => model.enqueue(Command::EndShoe { reason }),
        Purpose::Mute { player, minutes } => model.enqueue(Command::Mute {
            player,
            minutes,
            reason,
        }),
    }
}

fn mute_who_key(model: &mut Model, key: KeyEvent, mut text: String, effects: &mut Vec<Effect>) {
    let answer = match edit_line(key, &mut text) {
        None => {
            model.mode = Mode::MuteWho { text };
            return;
        }
        Some(None) => {
            model.note("cancelled");
            return;
        }
        Some(Some(answer)) => answer,
    };
    let mut words = answer.split_whitespace();
    let (Some(player), minutes, None) = (words.next(), words.next(), words.next()) else {
        model.mode = Mode::MuteWho { text };
        refuse(
            model,
            effects,
            "type the player's id, then minutes if not 15 (alice 30)",
        );
        return;
    };
    let minutes = match minutes.map(str::parse::<u32>) {
        None => 15,
        Some(Ok(m)) if m <= MAX_MUTE_MINUTES => m,
        Some(_) => {
            model.mode = Mode::MuteWho { text };
            refuse(
                model,
                effects,
                format!("minutes must be a whole number from 0 (lift) to {MAX_MUTE_MINUTES}"),
            );
            return;
        }
    };
    let player = player.to_owned();
    if minutes == 0 {
        model.enqueue(Command::Mute {
            player,
            minutes,
            reason: String::new(),
        });
    } else {
        model.mode = Mode::Reason {
            purpose: Purpose::Mute { player, minutes },
            text: String::new(),
        };
    }
}
