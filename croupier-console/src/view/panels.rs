//! The shoe and the bets (left), the chat (right). No number is ever cut: a line that does
//! not fit is split, a label gives way before its amount, and side bets that have no row
//! left are added up on one.

use banco_rules::{Card, Money};
use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::text;
use super::{BANKER, PLAYER, TIE};
use crate::model::Model;

/// A position's name, long and short, and its colour.
fn position_name(kind: i32) -> (&'static str, &'static str, Color) {
    use pb::BetKind as K;
    match K::try_from(kind) {
        Ok(K::Player) => ("Player", "P", PLAYER),
        Ok(K::Banker) => ("Banker", "B", BANKER),
        Ok(K::Tie) => ("Tie", "T", TIE),
        Ok(K::PlayerPair) => ("P pair", "PP", PLAYER),
        Ok(K::BankerPair) => ("B pair", "BP", BANKER),
        Ok(K::EitherPair) => ("Either pair", "Either", Color::Reset),
        Ok(K::PerfectPair) => ("Perfect pair", "Perfect", Color::Reset),
        Ok(K::Big) => ("Big", "Big", Color::Reset),
        Ok(K::Small) => ("Small", "Small", Color::Reset),
        _ => ("?", "?", Color::Reset),
    }
}

fn cut_card(shoe: pb::ShoeState) -> &'static str {
    use pb::ShoeState as S;
    match shoe {
        S::CutCardOut => "cut card OUT",
        S::LastHand => "LAST HAND",
        S::Ended => "shoe ended",
        S::NoShoe | S::Unspecified => "no shoe",
        S::AwaitingBurn => "burn due",
        S::InPlay => "cut card in",
    }
}

pub(super) fn bets(frame: &mut Frame, area: Rect, model: &Model) {
    let cols = usize::from(area.width.saturating_sub(2));
    let rows = usize::from(area.height.saturating_sub(2));
    let mut lines = Vec::new();
    if let Some(table) = &model.table {
        let shoe = model.shoe_state();
        let shoe_style = if matches!(shoe, pb::ShoeState::CutCardOut | pb::ShoeState::LastHand) {
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        let mut shoe_parts = Vec::new();
        if !matches!(shoe, pb::ShoeState::NoShoe | pb::ShoeState::Unspecified) {
            shoe_parts.push(format!("{} left", table.cards_left));
        }
        shoe_parts.push(cut_card(shoe).to_owned());
        for row in text::joined_or_stacked(&shoe_parts, cols) {
            lines.push(Line::styled(row, shoe_style));
        }
        if let Some(burn) = &table.burn {
            let card = Card::parse(&burn.exposed_card)
                .map_or_else(|_| burn.exposed_card.clone(), Card::pretty);
            let parts = [
                format!("burn {card}"),
                format!("{} face down", burn.burned_face_down),
            ];
            lines.extend(
                text::joined_or_stacked(&parts, cols)
                    .into_iter()
                    .map(Line::raw),
            );
        }
        lines.push(Line::raw(format!("bettors {}", table.bettors)));
        let room = rows.saturating_sub(lines.len());
        lines.extend(bet_lines(table, model.currency(), cols, room));
    }
    let block = Block::bordered().title(" SHOE · BETS ");
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// Player, Banker and Tie always; each side bet someone is on, while there are rows for
/// them, else all of them summed on the last row.
fn bet_lines(
    table: &pb::TableState,
    currency: &str,
    cols: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    let mut totals: Vec<(i32, i64, u32)> = table
        .bet_totals
        .iter()
        .map(|t| (t.kind, t.total_minor, t.bettors))
        .collect();
    for kind in [pb::BetKind::Player, pb::BetKind::Banker, pb::BetKind::Tie] {
        if !totals.iter().any(|t| t.0 == kind as i32) {
            totals.push((kind as i32, 0, 0));
        }
    }
    totals.sort_by_key(|t| t.0);
    let (main, side): (Vec<_>, Vec<_>) = totals
        .into_iter()
        .partition(|t| t.0 <= pb::BetKind::Tie as i32);
    let mut lines: Vec<Line> = main
        .into_iter()
        .map(|(kind, total, bettors)| bet_line(kind, total, bettors, currency, cols))
        .collect();
    let room = rows.saturating_sub(lines.len());
    if side.len() <= room {
        lines.extend(
            side.into_iter()
                .map(|(kind, total, bettors)| bet_line(kind, total, bettors, currency, cols)),
        );
    } else if room > 0 {
        let shown = room - 1;
        let (each, summed) = side.split_at(shown);
        lines.extend(
            each.iter()
                .map(|&(kind, total, bettors)| bet_line(kind, total, bettors, currency, cols)),
        );
        let sum: i64 = summed.iter().map(|t| t.1).sum();
        let label = format!("{} side bets", summed.len());
        let (label, value) =
            text::label_value(&label, &Money::new(sum, currency).to_string(), cols);
        lines.push(Line::from(vec![Span::raw(label), Span::raw(value)]));
    }
    lines
}

fn bet_line(kind: i32, total: i64, bettors: u32, currency: &str, cols: usize) -> Line<'static> {
    let (long, short, color) = position_name(kind);
    let money = Money::new(total, currency).to_string();
    let counted = format!("{money} ({bettors})");
    // The amount first; then the count of bettors; the name shortens before either goes.
    let value = if text::width(short) + 1 + text::width(&counted) <= cols {
        counted
    } else {
        money
    };
    let name = text::first_fit(&[long, short], cols.saturating_sub(text::width(&value) + 1));
    let (name, value) = text::label_value(&name, &value, cols);
    Line::from(vec![
        Span::styled(name, Style::new().fg(color)),
        Span::raw(value),
    ])
}

/// The latest chat lines, each wrapped at words, the newest at the bottom.
pub(super) fn chat(frame: &mut Frame, area: Rect, model: &Model) {
    let cols = usize::from(area.width.saturating_sub(2));
    let rows = usize::from(area.height.saturating_sub(2));
    let mut lines: Vec<Line> = Vec::new();
    for line in model.table.iter().flat_map(|t| t.chat.iter()) {
        let wrapped = text::wrap(&format!("{} {}", line.player, line.text), cols);
        for (i, row) in wrapped.into_iter().enumerate() {
            // The sender's id (what M takes) stands out on the line's first row.
            let name = text::width(&line.player).min(text::width(&row));
            if i == 0 {
                let split = row.char_indices().nth(name).map_or(row.len(), |(b, _)| b);
                let (who, said) = row.split_at(split);
                lines.push(Line::from(vec![
                    Span::styled(who.to_owned(), Style::new().fg(Color::Cyan)),
                    Span::raw(said.to_owned()),
                ]));
            } else {
                lines.push(Line::raw(row));
            }
        }
    }
    let skip = lines.len().saturating_sub(rows);
    let players = model.table.as_ref().map_or(0, |t| t.players);
    let title = text::first_fit(
        &[
            format!(" CHAT · {players} players · M mutes "),
            format!(" CHAT · {players} players "),
            format!(" {players} players "),
        ],
        cols,
    );
    let block = Block::bordered().title(title);
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()).block(block),
        area,
    );
}
