//! Bets and shoe (left), chat (right).

use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::{BANKER, PLAYER, TIE, money};
use crate::model::Model;

fn position_name(kind: i32) -> (&'static str, Color) {
    use pb::BetKind as K;
    match K::try_from(kind) {
        Ok(K::Player) => ("Player", PLAYER),
        Ok(K::Banker) => ("Banker", BANKER),
        Ok(K::Tie) => ("Tie", TIE),
        Ok(K::PlayerPair) => ("P pair", PLAYER),
        Ok(K::BankerPair) => ("B pair", BANKER),
        Ok(K::EitherPair) => ("Either pair", Color::Reset),
        Ok(K::PerfectPair) => ("Perfect pair", Color::Reset),
        Ok(K::Big) => ("Big", Color::Reset),
        Ok(K::Small) => ("Small", Color::Reset),
        _ => ("?", Color::Reset),
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
    let mut lines = Vec::new();
    if let Some(table) = &model.table {
        let shoe = model.shoe_state();
        let shoe_style = if matches!(shoe, pb::ShoeState::CutCardOut | pb::ShoeState::LastHand) {
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        lines.push(Line::from(vec![
            Span::raw(format!("{} left · ", table.cards_left)),
            Span::styled(cut_card(shoe), shoe_style),
        ]));
        lines.push(Line::raw(format!(
            "bettors {} · players {}",
            table.bettors, table.players
        )));
        let width = usize::from(area.width.saturating_sub(2));
        // Player, Banker and Tie always; side bets once someone is on them.
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
        for (kind, total, bettors) in totals {
            lines.push(bet_line(kind, total, bettors, width));
        }
    }
    let block = Block::bordered().title(" BETS · SHOE ");
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn bet_line(kind: i32, total: i64, bettors: u32, width: usize) -> Line<'static> {
    let (name, color) = position_name(kind);
    let amount = format!("{} ({bettors})", money(total));
    let pad = width.saturating_sub(name.chars().count() + amount.chars().count());
    Line::from(vec![
        Span::styled(name, Style::new().fg(color)),
        Span::raw(" ".repeat(pad)),
        Span::raw(amount),
    ])
}

pub(super) fn chat(frame: &mut Frame, area: Rect, model: &Model) {
    let rows = usize::from(area.height.saturating_sub(2));
    let lines: Vec<Line> = model
        .table
        .iter()
        .flat_map(|t| t.chat.iter())
        .map(|line| {
            Line::from(vec![
                Span::styled(format!("{} ", line.player), Style::new().fg(Color::Cyan)),
                Span::raw(line.text.clone()),
            ])
        })
        .collect();
    let skip = lines.len().saturating_sub(rows);
    let block = Block::bordered().title(" CHAT · M mutes ");
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()).block(block),
        area,
    );
}
