//! What is drawn over the screen: the list of keys, and the questions (why, which player,
//! really void, really quit).

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use crate::model::{Mode, Model, Purpose};

/// Every key, as `?` lists it (and the README).
pub const KEYS: &[(&str, &str)] = &[
    (
        "K H, 10 H, T H",
        "a card: rank then suit; it goes with the suit",
    ),
    (
        "Backspace / Esc",
        "correct the rank typed / clear it and the message",
    ),
    ("N", "new shoe (the next card is its burn card)"),
    ("O", "open betting"),
    ("X", "close betting"),
    ("R", "confirm the result shown: the round is paid"),
    ("U", "undo the last card (asks why)"),
    ("V", "void the round (asks why, then again)"),
    ("E", "end the shoe (asks why)"),
    ("M", "mute a player in the chat (id, minutes)"),
    ("?", "this list (any key closes it)"),
    ("Ctrl-Q", "quit (asks while a round is open)"),
];

fn popup(area: Rect, width: u16, height: u16) -> Rect {
    area.centered(
        Constraint::Length(width.min(area.width)),
        Constraint::Length(height.min(area.height)),
    )
}

fn question(frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line<'static>>, color: Color) {
    let width = 70;
    let height = u16::try_from(lines.len()).unwrap_or(8) + 4;
    let rect = popup(area, width, height);
    let block = Block::bordered()
        .title(Span::styled(
            format!(" {title} "),
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .border_style(Style::new().fg(color));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block.padding(ratatui::widgets::Padding::uniform(1)))
            .wrap(Wrap { trim: false }),
        rect,
    );
}

fn typed(text: &str) -> Line<'static> {
    Line::from(vec![
        Span::raw("> "),
        Span::styled(
            format!("{text}_"),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ])
}

pub(super) fn draw(frame: &mut Frame, area: Rect, model: &Model) {
    match &model.mode {
        Mode::Normal => {}
        Mode::Help => {
            let lines = KEYS
                .iter()
                .map(|(key, what)| {
                    Line::from(vec![
                        Span::styled(
                            format!("{key:<16}"),
                            Style::new().add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(*what),
                    ])
                })
                .collect();
            question(frame, area, "KEYS", lines, Color::Cyan);
        }
        Mode::Reason { purpose, text } => {
            let ask = match purpose {
                Purpose::Undo { card } => {
                    format!("Why take back {} (the last card)?", card.pretty())
                }
                Purpose::Void { round_id } => format!("Why void round {round_id}?"),
                Purpose::EndShoe => "Why end the shoe now?".to_owned(),
                Purpose::Mute { player, minutes } => {
                    format!("Why mute {player} for {minutes} minutes?")
                }
            };
            let lines = vec![
                Line::raw(ask),
                typed(text),
                Line::styled("Enter sends · Esc cancels", Style::new().fg(Color::Gray)),
            ];
            question(frame, area, "REASON", lines, Color::Yellow);
        }
        Mode::MuteWho { text } => {
            let lines = vec![
                Line::raw("Mute which player? Their id, then minutes (15 if not given; 0 lifts)."),
                typed(text),
                Line::styled("Enter · Esc cancels", Style::new().fg(Color::Gray)),
            ];
            question(frame, area, "MUTE", lines, Color::Yellow);
        }
        Mode::ConfirmVoid { round_id, reason } => {
            let lines = vec![
                Line::styled(
                    format!("VOID round {round_id}? Every stake is returned."),
                    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Line::raw(format!("Reason: {reason}")),
                Line::raw("Y: void it · N: keep playing"),
            ];
            question(frame, area, "VOID ROUND", lines, Color::Red);
        }
        Mode::ConfirmQuit { why } => {
            let lines = vec![
                Line::styled(
                    format!("Quit? {why}."),
                    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Line::raw("Y: quit anyway · N: stay"),
            ];
            question(frame, area, "QUIT", lines, Color::Red);
        }
    }
}
