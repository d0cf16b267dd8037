//! Draws a [`Model`]: the header, both hands, the prompt for what is due, the card being
//! typed and the pending commands, the message line, shoe and bets, roads, chat, keys;
//! dialogs over it. 80×24 is the smallest screen it is laid out for (a smaller one gets a
//! notice saying so, and what is due); from 100×32 on it uses the room.

mod dialog;
mod hands;
mod panels;
mod prompt;
mod roads;
mod text;

use banco_wire::pb;
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use crate::model::{Connection, Model};

pub use dialog::KEYS;
pub use prompt::{Prompt, prompt};

pub const PLAYER: Color = Color::Blue;
pub const BANKER: Color = Color::Red;
pub const TIE: Color = Color::Green;
pub const REFUSAL: Color = Color::Red;

/// The smallest screen the console is laid out for.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Rows of the message line: a long refusal wraps onto the second.
const NOTICE_ROWS: u16 = 2;

/// Whether the screen is roomy enough for the large layout.
fn roomy(area: Rect) -> bool {
    area.width >= 100 && area.height >= 32
}

pub fn draw(frame: &mut Frame, model: &Model) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area, model);
        return;
    }
    let big = roomy(area);
    let [header, hands, prompt_area, entry, notice, bottom, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(if big { 6 } else { 4 }),
        Constraint::Length(4),
        Constraint::Length(1),
        Constraint::Length(NOTICE_ROWS),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(header_line(model, usize::from(header.width)), header);
    hands::draw(frame, hands, model);
    prompt::draw(frame, prompt_area, model);
    frame.render_widget(entry_line(model, usize::from(entry.width)), entry);
    frame.render_widget(notice_lines(model, notice), notice);
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

/// Below 80×24 the panels cannot be drawn whole: say so, and still say what is due and
/// the last message, so that the table can go on while the terminal is made bigger.
fn too_small(frame: &mut Frame, area: Rect, model: &Model) {
    let cols = usize::from(area.width.saturating_sub(2)).max(1);
    let due = prompt(model);
    let mut texts = vec![
        (
            "TERMINAL TOO SMALL".to_owned(),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        (
            format!(
                "this one is {}×{}; the console needs at least {MIN_WIDTH}×{MIN_HEIGHT}",
                area.width, area.height
            ),
            Style::new(),
        ),
        (
            format!("due now: {}", due.text),
            Style::new().fg(due.color).add_modifier(Modifier::BOLD),
        ),
    ];
    if let Some(notice) = &model.notice {
        let color = if notice.refusal { REFUSAL } else { Color::Cyan };
        texts.push((notice.text.clone(), Style::new().fg(color)));
    }
    let lines: Vec<Line> = texts
        .into_iter()
        .flat_map(|(text, style)| {
            text::wrap(&text, cols)
                .into_iter()
                .map(move |row| Line::styled(row, style))
        })
        .collect();
    let block = Block::bordered().border_style(Style::new().fg(Color::Yellow));
    frame.render_widget(
        Paragraph::new(lines)
            .alignment(Alignment::Center)
            .block(block),
        area,
    );
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

/// The table, round (or shoe), phase, countdown and link always; the scanner and the
/// croupier only when there is room for them whole.
fn header_line(model: &Model, cols: usize) -> Paragraph<'static> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut spans = vec![Span::styled(
        format!(" {} ", model.table_id),
        bold.reversed(),
    )];
    if let Some(table) = &model.table {
        let id = if !table.round_id.is_empty() {
            table.round_id.clone()
        } else if !table.shoe_id.is_empty() {
            table.shoe_id.clone()
        } else {
            "no shoe".to_owned()
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
    let used = |spans: &[Span]| spans.iter().map(|s| text::width(&s.content)).sum::<usize>();
    let (mark, link, color) = match &model.connection {
        Connection::Connecting => ("○", "connecting".to_owned(), Color::Yellow),
        Connection::Online => ("●", "online".to_owned(), Color::Green),
        Connection::Down(why) => ("●", format!("DOWN: {why}"), Color::Red),
    };
    let room = cols.saturating_sub(used(&spans) + 3);
    spans.push(Span::styled(
        format!("{mark} {} ", text::shorten(&link, room)),
        Style::new().fg(color),
    ));
    let mut optional = Vec::new();
    if let Some((ok, text)) = &model.scanner {
        let color = if *ok { Color::Green } else { Color::Red };
        optional.push(Span::styled(
            format!("· scanner {text} "),
            Style::new().fg(color),
        ));
    }
    optional.push(Span::raw(format!("· croupier {}", model.croupier)));
    for span in optional {
        if used(&spans) + text::width(&span.content) <= cols {
            spans.push(span);
        }
    }
    Paragraph::new(Line::from(spans))
}

/// The card being typed, and the commands not answered yet (as many as fit, then how
/// many more).
fn entry_line(model: &Model, cols: usize) -> Paragraph<'static> {
    let typed = format!("{}_", model.entry.text());
    let mut spans = vec![
        Span::raw(" card "),
        Span::styled(typed.clone(), Style::new().add_modifier(Modifier::BOLD)),
    ];
    if !model.pending.is_empty() {
        let labels: Vec<String> = model.pending.iter().map(|p| p.command.label()).collect();
        let state = match (&model.connection, model.in_flight) {
            (Connection::Online, true) => "sending",
            (Connection::Online, false) => "waiting to resend",
            _ => "held until the link is back",
        };
        let head = format!("   pending ({state}): ");
        let room = cols.saturating_sub(6 + text::width(&typed) + text::width(&head));
        let mut shown = labels.join(", ");
        for kept in (1..labels.len()).rev() {
            if text::width(&shown) <= room {
                break;
            }
            shown = format!(
                "{}, +{} more",
                labels[..kept].join(", "),
                labels.len() - kept
            );
        }
        spans.push(Span::styled(
            format!("{head}{shown}"),
            Style::new().fg(Color::Yellow),
        ));
    }
    Paragraph::new(Line::from(spans))
}

/// The last refusal (red) or note (cyan), wrapped at words, its start always shown; with
/// none, the table's most serious alert.
fn notice_lines(model: &Model, area: Rect) -> Paragraph<'static> {
    let cols = usize::from(area.width.saturating_sub(1));
    let rows = usize::from(area.height);
    let (message, style) = if let Some(notice) = &model.notice {
        let style = if notice.refusal {
            Style::new().fg(REFUSAL).add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(Color::Cyan)
        };
        (notice.text.clone(), style)
    } else {
        let alert = model.table.as_ref().and_then(|t| {
            t.alerts
                .iter()
                .max_by_key(|a| a.level)
                .map(|a| (a.level, a.message.clone()))
        });
        let Some((level, message)) = alert else {
            return Paragraph::new("");
        };
        let color = if level == pb::AlertLevel::Critical as i32 {
            Color::Red
        } else {
            Color::Yellow
        };
        (
            format!("ALERT: {message}"),
            Style::new().fg(color).add_modifier(Modifier::BOLD),
        )
    };
    let lines: Vec<Line> = text::wrap_at_most(&message, cols, rows)
        .into_iter()
        .map(|row| Line::styled(format!(" {row}"), style))
        .collect();
    Paragraph::new(lines)
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
