//! What is drawn over the screen: the list of keys, and the questions (why, which player,
//! really void, really quit).

use banco_rules::{Card, Money};
use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::text;
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
    ("E", "end the shoe (asks why, then again)"),
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
    let width: u16 = 70;
    // Borders and padding take 4 columns and 4 rows; long lines wrap.
    let cols = usize::from(width.min(area.width).saturating_sub(4));
    let rows: usize = lines
        .iter()
        .map(|line| {
            let line: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            text::wrap(&line, cols).len()
        })
        .sum();
    let height = u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(4);
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
            let (ask, next) = match purpose {
                Purpose::Undo { card, .. } => (
                    format!("Take back {}? Why?", last_card_named(model, *card)),
                    "Enter sends",
                ),
                Purpose::Void { round_id } => (
                    format!("Void round {round_id} ({})? Why?", hand_so_far(model)),
                    "Enter asks again",
                ),
                Purpose::EndShoe { shoe_id } => (
                    format!("End shoe {shoe_id} now ({})? Why?", cards_left(model)),
                    "Enter asks again",
                ),
                Purpose::Mute { player, minutes } => (
                    format!("Why mute {player} for {minutes} minutes?"),
                    "Enter sends",
                ),
            };
            let lines = vec![
                Line::raw(ask),
                typed(text),
                Line::styled(
                    format!("{next} · Esc cancels"),
                    Style::new().fg(Color::Gray),
                ),
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
            let staked: i64 = model
                .table
                .iter()
                .flat_map(|t| &t.bet_totals)
                .map(|t| t.total_minor)
                .sum();
            let lines = vec![
                Line::styled(
                    format!(
                        "VOID round {round_id}? Every stake ({}) is returned.",
                        Money::new(staked, model.currency())
                    ),
                    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Line::raw(format!("On the table: {}", hand_so_far(model))),
                Line::raw(format!("Reason: {reason}")),
                Line::raw("Y: void it · N: keep playing"),
            ];
            question(frame, area, "VOID ROUND", lines, Color::Red);
        }
        Mode::ConfirmEndShoe { shoe_id, reason } => {
            let lines = vec![
                Line::styled(
                    format!(
                        "END shoe {shoe_id}? The {} are not dealt; N then opens a new shoe.",
                        cards_left(model)
                    ),
                    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Line::raw(format!("Reason: {reason}")),
                Line::raw("Y: end it · N: keep the shoe"),
            ];
            question(frame, area, "END SHOE", lines, Color::Red);
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

fn pretty(card: &str) -> String {
    Card::parse(card).map_or_else(|_| card.to_owned(), Card::pretty)
}

/// `7♥ 8♣ to Player, K♦ to Banker`, or `no card dealt yet`: the hand as it is now, so the
/// question shows what the croupier acts on.
fn hand_so_far(model: &Model) -> String {
    let cards = model.table.as_ref().map_or(&[][..], |t| t.cards.as_slice());
    let side = |side: pb::Side, name: &str| {
        let shown: Vec<String> = cards
            .iter()
            .filter(|d| d.side == side as i32)
            .map(|d| pretty(&d.card))
            .collect();
        (!shown.is_empty()).then(|| format!("{} to {name}", shown.join(" ")))
    };
    let hands: Vec<String> = [
        side(pb::Side::Player, "Player"),
        side(pb::Side::Banker, "Banker"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if hands.is_empty() {
        "no card dealt yet".to_owned()
    } else {
        hands.join(", ")
    }
}

/// `Q♥, Banker's 3rd card and the last dealt`.
fn last_card_named(model: &Model, card: Card) -> String {
    let cards = model.table.as_ref().map_or(&[][..], |t| t.cards.as_slice());
    let Some(last) = cards.last() else {
        return card.pretty();
    };
    let nth = cards.iter().filter(|d| d.side == last.side).count();
    let side = if last.side == pb::Side::Banker as i32 {
        "Banker"
    } else {
        "Player"
    };
    let ordinal = match nth {
        1 => "1st",
        2 => "2nd",
        _ => "3rd",
    };
    format!(
        "{}, {side}'s {ordinal} card and the last dealt",
        card.pretty()
    )
}

/// `371 cards left`.
fn cards_left(model: &Model) -> String {
    let left = model.table.as_ref().map_or(0, |t| t.cards_left);
    format!("{left} cards left")
}
