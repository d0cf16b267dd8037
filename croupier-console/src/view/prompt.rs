//! The one line that says what the croupier must do now, and under it the hint: the key
//! that does it, and after a round what it paid.

use banco_rules::{Money, Score};
use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::text;
use super::{BANKER, PLAYER, TIE};
use crate::model::Model;

/// The prompt: what is due, in capitals, and a hint of the key or action that does it.
/// `short_text` and `short_hint` are what a narrow screen shows when the full ones do not
/// fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub hint: String,
    pub color: Color,
    pub short_text: Option<String>,
    pub short_hint: Option<String>,
}

impl Prompt {
    fn new(text: impl Into<String>, hint: impl Into<String>, color: Color) -> Prompt {
        Prompt {
            text: text.into(),
            hint: hint.into(),
            color,
            short_text: None,
            short_hint: None,
        }
    }
}

/// `BANKER WINS` / `PLAYER WON`, `TIE`, in its colour.
fn winner_name(result: &pb::HandResult, past: bool) -> (&'static str, Color) {
    match (pb::Winner::try_from(result.winner), past) {
        (Ok(pb::Winner::Banker), false) => ("BANKER WINS", BANKER),
        (Ok(pb::Winner::Banker), true) => ("BANKER WON", BANKER),
        (Ok(pb::Winner::Player), false) => ("PLAYER WINS", PLAYER),
        (Ok(pb::Winner::Player), true) => ("PLAYER WON", PLAYER),
        _ => ("TIE", TIE),
    }
}

/// The score, Player first as everywhere in banco.
fn score(result: &pb::HandResult) -> String {
    let total = |t: u32| u8::try_from(t).unwrap_or(u8::MAX);
    Score {
        player: total(result.player_total),
        banker: total(result.banker_total),
    }
    .to_string()
}

/// What the side bets are settled on: natural, pairs, perfect pairs (long and short).
fn flags(result: &pb::HandResult) -> Vec<(&'static str, &'static str)> {
    let mut flags = Vec::new();
    if result.natural {
        flags.push(("natural", "natural"));
    }
    if result.player_perfect_pair {
        flags.push(("player perfect pair", "P perfect"));
    } else if result.player_pair {
        flags.push(("player pair", "P pair"));
    }
    if result.banker_perfect_pair {
        flags.push(("banker perfect pair", "B perfect"));
    } else if result.banker_pair {
        flags.push(("banker pair", "B pair"));
    }
    flags
}

/// `RESULT: BANKER WINS · Player 7 – Banker 9 · natural`, and its short form.
fn result_prompt(result: &pb::HandResult) -> Prompt {
    let (name, color) = winner_name(result, false);
    let flags = flags(result);
    let with = |pick: fn(&(&'static str, &'static str)) -> &'static str| {
        let mut parts = vec![format!("RESULT: {name}"), score(result)];
        parts.extend(flags.iter().map(|f| pick(f).to_owned()));
        parts.join(" · ")
    };
    Prompt {
        short_text: Some(with(|f| f.1)),
        ..Prompt::new(
            with(|f| f.0),
            "R: confirm and pay · U: take back the last card · V: void",
            color,
        )
    }
}

/// After R: who won, that it is paid, and what the round moved.
fn settled_prompt(table: &pb::TableState, currency: &str, next: &str) -> Prompt {
    let Some(result) = &table.result else {
        return Prompt::new("OPEN BETTING", format!("paid · {next}"), Color::Green);
    };
    let (won, _) = winner_name(result, true);
    let money = |m: i64| Money::new(m, currency);
    let (hint, short_hint) = match &table.round_totals {
        Some(t) => (
            format!(
                "{won}, paid · {} · staked {}, returned {}, house {} · {next}",
                score(result),
                money(t.staked_minor),
                money(t.returned_minor),
                money(t.house_result_minor).signed()
            ),
            format!(
                "{won}, paid · house {} on {} · {next}",
                money(t.house_result_minor).signed(),
                money(t.staked_minor)
            ),
        ),
        None => (
            format!("{won}, paid · {} · {next}", score(result)),
            format!("{won}, paid · {next}"),
        ),
    };
    Prompt {
        short_hint: Some(short_hint),
        ..Prompt::new("OPEN BETTING", hint, Color::Green)
    }
}

pub fn prompt(model: &Model) -> Prompt {
    use pb::ShoeState as S;
    use pb::TablePhase as P;
    let Some(table) = &model.table else {
        return Prompt::new(
            "CONNECTING…",
            "waiting for the table's state",
            Color::Yellow,
        );
    };
    let phase = model.phase();
    let shoe = model.shoe_state();
    if shoe == S::AwaitingBurn {
        return Prompt::new(
            "BURN CARD",
            "scan or type the exposed first card",
            Color::Yellow,
        );
    }
    match phase {
        P::BettingOpen => {
            let text = match model.betting_left_s() {
                Some(left) => format!("BETTING OPEN {}:{:02}", left / 60, left % 60),
                None => "BETTING OPEN".to_owned(),
            };
            Prompt::new(text, "X: close betting", Color::Green)
        }
        P::BettingClosed | P::Dealing => match pb::Due::try_from(table.due) {
            Ok(pb::Due::PlayerCard) => Prompt::new(
                "PLAYER CARD",
                "scan or type the card · U: take back the last card",
                PLAYER,
            ),
            Ok(pb::Due::BankerCard) => Prompt::new(
                "BANKER CARD",
                "scan or type the card · U: take back the last card",
                BANKER,
            ),
            _ => Prompt::new("WAITING FOR THE TABLE", "", Color::Yellow),
        },
        P::Result => match &table.result {
            Some(result) => result_prompt(result),
            None => Prompt::new("RESULT", "R: confirm · V: void", Color::Yellow),
        },
        P::Idle | P::Settled | P::Voided | P::Unspecified => {
            if matches!(shoe, S::NoShoe | S::Ended | S::Unspecified) {
                return Prompt::new(
                    "NEW SHOE",
                    "N: new shoe, then scan the burn card",
                    Color::Yellow,
                );
            }
            let next = if matches!(shoe, S::CutCardOut | S::LastHand) {
                "LAST HAND of the shoe · O: open betting"
            } else {
                "O: open betting"
            };
            match phase {
                P::Settled => settled_prompt(table, model.currency(), next),
                P::Voided => {
                    let returned = table.round_totals.as_ref().map_or_else(String::new, |t| {
                        format!(" ({})", Money::new(t.returned_minor, model.currency()))
                    });
                    Prompt::new(
                        "OPEN BETTING",
                        format!("round voided, stakes returned{returned} · {next}"),
                        Color::Green,
                    )
                }
                _ => Prompt::new("OPEN BETTING", next, Color::Green),
            }
        }
    }
}

pub(super) fn draw(frame: &mut Frame, area: Rect, model: &Model) {
    let p = prompt(model);
    let cols = usize::from(area.width.saturating_sub(2));
    let forms = |full: &str, short: &Option<String>| match short {
        Some(short) => text::first_fit(&[full, short.as_str()], cols.saturating_sub(2)),
        None => text::shorten(full, cols.saturating_sub(2)),
    };
    let text = Line::styled(
        format!(" {} ", forms(&p.text, &p.short_text)),
        Style::new()
            .fg(Color::White)
            .bg(p.color)
            .add_modifier(Modifier::BOLD),
    )
    .alignment(Alignment::Center);
    let hint = Line::styled(forms(&p.hint, &p.short_hint), Style::new().fg(Color::Gray))
        .alignment(Alignment::Center);
    let block = Block::bordered().border_style(Style::new().fg(p.color));
    frame.render_widget(Paragraph::new(vec![text, hint]).block(block), area);
}
