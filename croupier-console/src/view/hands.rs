//! The Player and Banker hands: their cards and totals; the hand a card is due to is
//! framed in bold.

use banco_rules::Card;
use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};

use super::{BANKER, PLAYER};
use crate::model::Model;

pub(super) fn draw(frame: &mut Frame, area: Rect, model: &Model) {
    let [player, banker] =
        Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)]).areas(area);
    let due = model
        .table
        .as_ref()
        .and_then(|t| pb::Due::try_from(t.due).ok())
        .filter(|_| {
            matches!(
                model.phase(),
                pb::TablePhase::BettingClosed | pb::TablePhase::Dealing
            )
        });
    hand(
        frame,
        player,
        model,
        pb::Side::Player,
        due == Some(pb::Due::PlayerCard),
    );
    hand(
        frame,
        banker,
        model,
        pb::Side::Banker,
        due == Some(pb::Due::BankerCard),
    );
}

fn hand(frame: &mut Frame, area: Rect, model: &Model, side: pb::Side, due: bool) {
    let (name, color) = match side {
        pb::Side::Banker => ("BANKER", BANKER),
        _ => ("PLAYER", PLAYER),
    };
    let table = model.table.as_ref();
    let cards: Vec<String> = table
        .map(|t| {
            t.cards
                .iter()
                .filter(|d| d.side == side as i32)
                .map(|d| Card::parse(&d.card).map_or_else(|_| d.card.clone(), Card::pretty))
                .collect()
        })
        .unwrap_or_default();
    let total = table.map_or(0, |t| match side {
        pb::Side::Banker => t.banker_total,
        _ => t.player_total,
    });
    let bold = Style::new().fg(color).add_modifier(Modifier::BOLD);
    let mut title = format!(" {name} ");
    if due {
        title.push_str("◀ CARD DUE ");
    }
    let block = Block::bordered()
        .title(Span::styled(title, bold))
        .border_type(if due {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(Style::new().fg(color));
    let lines = if cards.is_empty() {
        vec![Line::raw(""), Line::styled("  —", Style::new().fg(color))]
    } else {
        vec![
            Line::styled(format!("  {}", cards.join("  ")), bold),
            Line::styled(format!("  total {total}"), bold),
        ]
    };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
