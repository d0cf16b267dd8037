//! The one line that says what the croupier must do now.

use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::{BANKER, PLAYER, TIE};
use crate::model::Model;

/// The prompt: what is due, in capitals, and a hint of the key or action that does it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub hint: String,
    pub color: Color,
}

fn winner_name(result: &pb::HandResult) -> (&'static str, Color) {
    match pb::Winner::try_from(result.winner) {
        Ok(pb::Winner::Banker) => ("BANKER", BANKER),
        Ok(pb::Winner::Player) => ("PLAYER", PLAYER),
        _ => ("TIE", TIE),
    }
}

/// `BANKER 7 – PLAYER 5`, the winner first.
fn result_text(result: &pb::HandResult) -> (String, Color) {
    let (name, color) = winner_name(result);
    let text = match name {
        "BANKER" => format!(
            "BANKER {} – PLAYER {}",
            result.banker_total, result.player_total
        ),
        "PLAYER" => format!(
            "PLAYER {} – BANKER {}",
            result.player_total, result.banker_total
        ),
        _ => format!("TIE {} – {}", result.player_total, result.banker_total),
    };
    (text, color)
}

pub fn prompt(model: &Model) -> Prompt {
    use pb::ShoeState as S;
    use pb::TablePhase as P;
    let make = |text: &str, hint: &str, color| Prompt {
        text: text.to_owned(),
        hint: hint.to_owned(),
        color,
    };
    let Some(table) = &model.table else {
        return make(
            "CONNECTING…",
            "waiting for the table's state",
            Color::Yellow,
        );
    };
    let phase = model.phase();
    let shoe = model.shoe_state();
    if shoe == S::AwaitingBurn {
        return make(
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
            Prompt {
                text,
                hint: "X: close betting".to_owned(),
                color: Color::Green,
            }
        }
        P::BettingClosed | P::Dealing => match pb::Due::try_from(table.due) {
            Ok(pb::Due::PlayerCard) => make(
                "PLAYER CARD",
                "scan or type the card · U: take back the last card",
                PLAYER,
            ),
            Ok(pb::Due::BankerCard) => make(
                "BANKER CARD",
                "scan or type the card · U: take back the last card",
                BANKER,
            ),
            _ => make("WAITING FOR THE TABLE", "", Color::Yellow),
        },
        P::Result => {
            let Some(result) = &table.result else {
                return make("RESULT", "R: confirm · V: void", Color::Yellow);
            };
            let (text, color) = result_text(result);
            Prompt {
                text: format!("RESULT: {text}"),
                hint: "R: confirm and pay · U: take back the last card · V: void".to_owned(),
                color,
            }
        }
        P::Idle | P::Settled | P::Voided | P::Unspecified => {
            if matches!(shoe, S::NoShoe | S::Ended | S::Unspecified) {
                return make(
                    "NEW SHOE",
                    "N: new shoe, then scan the burn card",
                    Color::Yellow,
                );
            }
            let mut hint = match (&table.result, phase) {
                (Some(result), P::Settled) => format!("paid: {} · ", result_text(result).0),
                (_, P::Voided) => "round voided, stakes returned · ".to_owned(),
                _ => String::new(),
            };
            hint.push_str(match shoe {
                S::CutCardOut | S::LastHand => "LAST HAND of the shoe · O: open betting",
                _ => "O: open betting",
            });
            Prompt {
                text: "OPEN BETTING".to_owned(),
                hint,
                color: Color::Green,
            }
        }
    }
}

pub(super) fn draw(frame: &mut Frame, area: Rect, model: &Model) {
    let p = prompt(model);
    let text = Line::styled(
        format!(" {} ", p.text),
        Style::new()
            .fg(Color::White)
            .bg(p.color)
            .add_modifier(Modifier::BOLD),
    )
    .alignment(Alignment::Center);
    let hint = Line::styled(p.hint, Style::new().fg(Color::Gray)).alignment(Alignment::Center);
    let block = Block::bordered().border_style(Style::new().fg(p.color));
    frame.render_widget(Paragraph::new(vec![text, hint]).block(block), area);
}
