//! Draws a [`Model`]: the header, both hands, the prompt for what is due, the card being
//! typed and the pending commands, the last refusal, bets and shoe, roads, chat, keys.
//! 80×24 is the smallest screen it is laid out for; from 100×32 on it uses the room.

mod dialog;
mod hands;
mod panels;
mod prompt;
mod roads;

use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::model::{Connection, Model};

pub use dialog::KEYS;
pub use prompt::{Prompt, prompt};

pub const PLAYER: Color = Color::Blue;
pub const BANKER: Color = Color::Red;
pub const TIE: Color = Color::Green;
pub const REFUSAL: Color = Color::Red;

/// Whether the screen is roomy enough for the large layout.
fn roomy(area: Rect) -> bool {
    area.width >= 100 && area.height >= 32
}

pub fn draw(frame: &mut Frame, model: &Model) {
    let area = frame.area();
    let big = roomy(area);
    let [header, hands, prompt_area, entry, notice, bottom, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(if big { 6 } else { 5 }),
        Constraint::Length(4),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(header_line(model), header);
    hands::draw(frame, hands, model);
    prompt::draw(frame, prompt_area, model);
    frame.render_widget(entry_line(model), entry);
    frame.render_widget(notice_line(model), notice);
    let [bets, roads_area, chat] = Layout::horizontal([
        Constraint::Length(if big { 32 } else { 24 }),
        Constraint::Min(20),
        Constraint::Length(if big { 40 } else { 24 }),
    ])
    .areas(bottom);
    panels::bets(frame, bets, model);
    roads::draw(frame, roads_area, model);
    panels::chat(frame, chat, model);
    frame.render_widget(footer_line(), footer);
    dialog::draw(frame, area, model);
}

/// `DEALING`, `BETTING OPEN`: a phase as the croupier reads it.
pub fn phase_name(phase: pb::TablePhase) -> &'static str {
    use pb::TablePhase as P;
    match phase {
        P::Unspecified => "NO STATE",
        P::Idle => "IDLE",
        P::BettingOpen => "BETTING OPEN",
        P::BettingClosed => "BETTING CLOSED",
        P::Dealing => "DEALING",
        P::Result => "RESULT",
        P::Settled => "SETTLED",
        P::Voided => "VOIDED",
    }
}

fn header_line(model: &Model) -> Paragraph<'static> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut spans = vec![Span::styled(
        format!(" {} ", model.table_id),
        bold.reversed(),
    )];
    if let Some(table) = &model.table {
        let id = if table.round_id.is_empty() {
            if table.shoe_id.is_empty() {
                "no shoe".to_owned()
            } else {
                table.shoe_id.clone()
            }
        } else {
            table.round_id.clone()
        };
        spans.push(Span::raw(format!(" {id} ")));
        spans.push(Span::styled(
            format!("{} ", phase_name(model.phase())),
            bold,
        ));
        if let Some(left) = model.betting_left_s() {
            spans.push(Span::styled(
                format!("{}:{:02} ", left / 60, left % 60),
                bold.fg(Color::Yellow),
            ));
        }
    }
    let (mark, text, color) = match &model.connection {
        Connection::Connecting => ("○", "connecting".to_owned(), Color::Yellow),
        Connection::Online => ("●", "online".to_owned(), Color::Green),
        Connection::Down(why) => ("●", format!("DOWN: {why}"), Color::Red),
    };
    spans.push(Span::styled(
        format!("{mark} {text} "),
        Style::new().fg(color),
    ));
    if let Some((ok, text)) = &model.scanner {
        let color = if *ok { Color::Green } else { Color::Red };
        spans.push(Span::styled(
            format!("· scanner {text} "),
            Style::new().fg(color),
        ));
    }
    spans.push(Span::raw(format!("· croupier {}", model.croupier)));
    Paragraph::new(Line::from(spans))
}

fn entry_line(model: &Model) -> Paragraph<'static> {
    let mut spans = vec![
        Span::raw(" card "),
        Span::styled(
            format!("{}_", model.entry.text()),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ];
    if !model.pending.is_empty() {
        let labels: Vec<String> = model.pending.iter().map(|p| p.command.label()).collect();
        let state = match (&model.connection, model.in_flight) {
            (Connection::Online, true) => "sending",
            (Connection::Online, false) => "waiting to resend",
            _ => "held until the link is back",
        };
        spans.push(Span::styled(
            format!("   pending ({state}): {}", labels.join(", ")),
            Style::new().fg(Color::Yellow),
        ));
    }
    Paragraph::new(Line::from(spans))
}

fn notice_line(model: &Model) -> Paragraph<'static> {
    if let Some(notice) = &model.notice {
        let style = if notice.refusal {
            Style::new().fg(REFUSAL).add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(Color::Cyan)
        };
        return Paragraph::new(Line::from(Span::styled(format!(" {}", notice.text), style)));
    }
    let alert = model.table.as_ref().and_then(|t| {
        t.alerts
            .iter()
            .max_by_key(|a| a.level)
            .map(|a| (a.level, a.message.clone()))
    });
    match alert {
        Some((level, message)) => {
            let color = if level == pb::AlertLevel::Critical as i32 {
                Color::Red
            } else {
                Color::Yellow
            };
            Paragraph::new(Line::from(Span::styled(
                format!(" ALERT: {message}"),
                Style::new().fg(color).add_modifier(Modifier::BOLD),
            )))
        }
        None => Paragraph::new(""),
    }
}

fn footer_line() -> Paragraph<'static> {
    let keys = [
        ("N", "shoe"),
        ("O", "open"),
        ("X", "close"),
        ("R", "confirm"),
        ("U", "undo"),
        ("V", "void"),
        ("E", "end shoe"),
        ("M", "mute"),
        ("?", "keys"),
        ("^Q", "quit"),
    ];
    let mut spans = Vec::new();
    for (key, what) in keys {
        spans.push(Span::styled(
            format!(" {key}"),
            Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ));
        spans.push(Span::raw(format!(" {what}")));
    }
    Paragraph::new(Line::from(spans))
}

/// `1,250.00` from minor units.
pub fn money(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    let units = (abs / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in units.chars().enumerate() {
        if i > 0 && (units.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}.{:02}", abs % 100)
}

#[cfg(test)]
mod tests {
    use super::money;

    #[test]
    fn money_is_grouped() {
        assert_eq!(money(0), "0.00");
        assert_eq!(money(2_375), "23.75");
        assert_eq!(money(123_456_789), "1,234,567.89");
        assert_eq!(money(-2_500), "-25.00");
    }
}
