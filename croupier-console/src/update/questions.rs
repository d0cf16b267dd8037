//! The questions the console asks before a command that needs more than a key (why,
//! which player, really), and their withdrawal: a question asked about the table as it
//! was is withdrawn, with a message, once the table has moved on, so that a command is
//! never sent for a state the croupier did not see.

use banco_wire::pb;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::{MAX_MUTE_MINUTES, MAX_TEXT, refuse};
use crate::action::Effect;
use crate::command::Command;
use crate::model::{Mode, Model, Purpose};
use crate::view::phase_name;

/// A key while a question is open (`mode`, taken out of the model).
pub(super) fn answer(model: &mut Model, key: KeyEvent, mode: Mode, effects: &mut Vec<Effect>) {
    match mode {
        Mode::Normal | Mode::Help => {}
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
        Mode::ConfirmEndShoe { shoe_id, reason } => match key.code {
            KeyCode::Char('y' | 'Y') => model.enqueue(Command::EndShoe { reason }),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                model.note(format!("{shoe_id} kept: ending it cancelled"));
            }
            _ => {
                model.mode = Mode::ConfirmEndShoe { shoe_id, reason };
                refuse(model, effects, "press Y to end the shoe, or N to keep it");
            }
        },
        Mode::ConfirmQuit { why } => match key.code {
            KeyCode::Char('y' | 'Y') => effects.push(Effect::Quit),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => model.note("still here"),
            _ => model.mode = Mode::ConfirmQuit { why },
        },
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
        Purpose::Undo { card, .. } => model.enqueue(Command::Undo { reason, card }),
        Purpose::Void { round_id } => model.mode = Mode::ConfirmVoid { round_id, reason },
        Purpose::EndShoe { shoe_id } => model.mode = Mode::ConfirmEndShoe { shoe_id, reason },
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

/// Withdraws the open question if the table is no longer where it was when it was asked.
pub(super) fn withdraw_if_stale(model: &mut Model, effects: &mut Vec<Effect>) {
    let why = match &model.mode {
        Mode::Reason {
            purpose: Purpose::Undo { round_id, card },
            ..
        } => undo_stale(model, round_id, *card),
        Mode::Reason {
            purpose: Purpose::Void { round_id },
            ..
        }
        | Mode::ConfirmVoid { round_id, .. } => void_stale(model, round_id),
        Mode::Reason {
            purpose: Purpose::EndShoe { shoe_id },
            ..
        }
        | Mode::ConfirmEndShoe { shoe_id, .. } => end_shoe_stale(model, shoe_id),
        _ => None,
    };
    if let Some(why) = why {
        model.mode = Mode::Normal;
        refuse(model, effects, why);
    }
}

/// Why an undo of `card` no longer applies, if it does not.
fn undo_stale(model: &Model, round_id: &str, card: banco_rules::Card) -> Option<String> {
    let shown = card.pretty();
    let table = model.table.as_ref()?;
    let why = if table.round_id != round_id {
        format!("round {round_id} is over")
    } else if !matches!(
        model.phase(),
        pb::TablePhase::Dealing | pb::TablePhase::Result
    ) {
        format!("the table is {}", phase_name(model.phase()))
    } else if let Some(coming) = model.pending.iter().find_map(|p| p.command.card()) {
        format!("{} is on its way to the table after it", coming.pretty())
    } else {
        match model.last_card() {
            Some(last) if last == card => return None,
            Some(last) => format!("the last card is now {} (U takes it back)", last.pretty()),
            None => "no card of the hand is left".to_owned(),
        }
    };
    Some(format!("undo of {shown} withdrawn: {why}"))
}

fn void_stale(model: &Model, round_id: &str) -> Option<String> {
    let table = model.table.as_ref()?;
    let why = if table.round_id != round_id {
        format!("the table is on round {}", table.round_id)
    } else if !model.round_open() {
        format!("the round is {}", phase_name(model.phase()))
    } else {
        return None;
    };
    Some(format!("void of {round_id} withdrawn: {why}"))
}

fn end_shoe_stale(model: &Model, shoe_id: &str) -> Option<String> {
    let table = model.table.as_ref()?;
    let why = if table.shoe_id != shoe_id {
        "that shoe is no longer in play".to_owned()
    } else if model.round_open() {
        format!(
            "round {} opened ({})",
            table.round_id,
            phase_name(model.phase())
        )
    } else {
        return None;
    };
    Some(format!("ending {shoe_id} withdrawn: {why}"))
}
