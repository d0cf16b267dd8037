//! What each key does. A single-key command acts on the table the screen shows: with a
//! rank waiting for its suit, or when the table is not where the command applies, the key
//! is refused with the reason and nothing is sent.

use banco_wire::pb;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{questions, queue_card, refuse};
use crate::action::Effect;
use crate::command::{Command, Source};
use crate::entry::{Entry, Step};
use crate::model::{Mode, Model, Purpose};
use crate::view::phase_name;

pub(super) fn on_key(model: &mut Model, key: KeyEvent, effects: &mut Vec<Effect>) {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c' | 'q')) {
        quit(model, effects);
        return;
    }
    match std::mem::replace(&mut model.mode, Mode::Normal) {
        Mode::Normal => normal_key(model, key, effects),
        // Any key closes the list of keys.
        Mode::Help => {}
        other => questions::answer(model, key, other, effects),
    }
}

fn quit(model: &mut Model, effects: &mut Vec<Effect>) {
    let mut why = Vec::new();
    if model.round_open() {
        let round = model.table.as_ref().map_or("", |t| t.round_id.as_str());
        why.push(format!(
            "round {round} is open ({})",
            phase_name(model.phase())
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
    // A rank waits for its suit: any other key, a command key too, would act behind the
    // half-typed card.
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
    let command = match c.to_ascii_lowercase() {
        'n' => new_shoe(model),
        'o' => open_betting(model),
        'x' => close_betting(model),
        'r' => confirm(model),
        'u' => return undo(model, effects),
        'v' => return void(model, effects),
        'e' => return end_shoe(model, effects),
        'm' => {
            model.mode = Mode::MuteWho {
                text: String::new(),
            };
            return;
        }
        _ => Err(format!("{c} is not a key of the console: ? lists them")),
    };
    match command {
        Ok(command) => model.enqueue(command),
        Err(why) => refuse(model, effects, why),
    }
}

/// What the table is doing, for a refusal: `the table is DEALING`.
fn doing(model: &Model) -> String {
    format!("the table is {}", phase_name(model.phase()))
}

/// The state the croupier sees, or why there is none to act on.
fn seen(model: &Model) -> Result<&pb::TableState, String> {
    model
        .table
        .as_ref()
        .ok_or_else(|| "not connected to the table yet: nothing is sent".to_owned())
}

fn no_shoe(model: &Model) -> bool {
    matches!(
        model.shoe_state(),
        pb::ShoeState::NoShoe | pb::ShoeState::Ended | pb::ShoeState::Unspecified
    )
}

fn new_shoe(model: &Model) -> Result<Command, String> {
    let table = seen(model)?;
    if no_shoe(model) {
        Ok(Command::OpenShoe)
    } else {
        Err(format!(
            "cannot open a new shoe: {} is in play (E ends it)",
            table.shoe_id
        ))
    }
}

fn open_betting(model: &Model) -> Result<Command, String> {
    use pb::TablePhase as P;
    let table = seen(model)?;
    let why = if no_shoe(model) {
        "no shoe is open (N opens one)".to_owned()
    } else if model.shoe_state() == pb::ShoeState::AwaitingBurn {
        "the burn card is due first".to_owned()
    } else if !matches!(model.phase(), P::Idle | P::Settled | P::Voided) {
        format!("round {} is under way ({})", table.round_id, doing(model))
    } else {
        return Ok(Command::OpenBetting {
            duration_ms: model.betting_ms,
        });
    };
    Err(format!("cannot open betting: {why}"))
}

fn close_betting(model: &Model) -> Result<Command, String> {
    seen(model)?;
    if model.phase() == pb::TablePhase::BettingOpen {
        Ok(Command::CloseBetting)
    } else {
        Err(format!("betting is not open: {}", doing(model)))
    }
}

fn confirm(model: &Model) -> Result<Command, String> {
    let table = seen(model)?;
    if model.phase() != pb::TablePhase::Result || table.round_id.is_empty() {
        return Err(format!("no result to confirm: {}", doing(model)));
    }
    // What is confirmed must be what is shown: a command still on its way would change it.
    if let Some(first) = model.pending.front() {
        return Err(format!(
            "wait: {} is not answered yet; R confirms once the table shows it",
            first.command.label()
        ));
    }
    Ok(Command::Confirm {
        round_id: table.round_id.clone(),
    })
}

/// `U`: a card not sent yet is simply dropped; a card the table has needs a reason.
fn undo(model: &mut Model, effects: &mut Vec<Effect>) {
    let unsent_tail = model.pending.len() > usize::from(model.in_flight);
    if unsent_tail && let Some(card) = model.pending.back().and_then(|p| p.command.card()) {
        model.pending.pop_back();
        model.note(format!("{} taken back before it was sent", card.pretty()));
        return;
    }
    if let Some(card) = model.pending.iter().find_map(|p| p.command.card()) {
        // On its way: the last card is about to change.
        refuse(
            model,
            effects,
            format!(
                "wait: {} is on its way to the table; U again once it is shown",
                card.pretty()
            ),
        );
        return;
    }
    let dealing = matches!(
        model.phase(),
        pb::TablePhase::Dealing | pb::TablePhase::Result
    );
    let round_id = model
        .table
        .as_ref()
        .map(|t| t.round_id.clone())
        .unwrap_or_default();
    match model.last_card().filter(|_| dealing) {
        Some(card) => {
            model.mode = Mode::Reason {
                purpose: Purpose::Undo { round_id, card },
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

fn void(model: &mut Model, effects: &mut Vec<Effect>) {
    let round_id = model
        .table
        .as_ref()
        .map(|t| t.round_id.clone())
        .filter(|id| !id.is_empty() && model.round_open());
    match round_id {
        Some(round_id) => {
            model.mode = Mode::Reason {
                purpose: Purpose::Void { round_id },
                text: String::new(),
            };
        }
        None => {
            let why = format!("no round to void: {}", doing(model));
            refuse(model, effects, why);
        }
    }
}

fn end_shoe(model: &mut Model, effects: &mut Vec<Effect>) {
    let shoe_id = model
        .table
        .as_ref()
        .map(|t| t.shoe_id.clone())
        .unwrap_or_default();
    if no_shoe(model) || shoe_id.is_empty() {
        refuse(model, effects, "no shoe to end");
    } else if model.round_open() {
        let why = format!(
            "cannot end the shoe while a round is open: {} (V voids it)",
            doing(model)
        );
        refuse(model, effects, why);
    } else {
        model.mode = Mode::Reason {
            purpose: Purpose::EndShoe { shoe_id },
            text: String::new(),
        };
    }
}
