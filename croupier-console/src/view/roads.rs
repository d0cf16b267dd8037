//! The scoreboard of the whole shoe: bead plate, Big Road, and the three derived roads (as
//! six-row boards when there is room, else as their latest marks on one line each), each
//! named; the counts, Player first, on the bottom border.

use banco_rules::Side;
use banco_rules::Winner;
use banco_rules::roads::{DerivedKind, GridCell, Mark};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::text;
use super::{BANKER, PLAYER, TIE};
use crate::model::Model;

const ROWS: u16 = 6;

fn winner_cell(winner: Winner) -> (&'static str, Color) {
    match winner {
        Winner::Banker => ("B", BANKER),
        Winner::Player => ("P", PLAYER),
        Winner::Tie => ("T", TIE),
    }
}

fn mark_color(mark: Mark) -> Color {
    match mark {
        Mark::Red => BANKER,
        Mark::Blue => PLAYER,
    }
}

/// How each derived road draws its marks: hollow, solid, slash.
fn mark_symbol(kind: DerivedKind) -> &'static str {
    match kind {
        DerivedKind::BigEyeBoy => "○",
        DerivedKind::SmallRoad => "●",
        DerivedKind::CockroachPig => "╱",
    }
}

fn short_name(kind: DerivedKind) -> &'static str {
    match kind {
        DerivedKind::BigEyeBoy => "Big Eye",
        DerivedKind::SmallRoad => "Small  ",
        DerivedKind::CockroachPig => "Roach  ",
    }
}

fn put(buf: &mut Buffer, area: Rect, col: usize, row: usize, symbol: &str, style: Style) {
    let (Ok(col), Ok(row)) = (u16::try_from(col), u16::try_from(row)) else {
        return;
    };
    if col >= area.width || row >= area.height {
        return;
    }
    if let Some(cell) = buf.cell_mut((area.x + col, area.y + row)) {
        cell.set_symbol(symbol).set_style(style);
    }
}

/// Draws the cells of a board whose columns `first..` fit in `area`, newest on the right.
fn board<T: Copy>(
    buf: &mut Buffer,
    area: Rect,
    cells: &[GridCell<T>],
    width: usize,
    draw: impl Fn(T) -> (&'static str, Style),
) {
    let first = width.saturating_sub(usize::from(area.width));
    for cell in cells.iter().filter(|c| c.col >= first) {
        let (symbol, style) = draw(cell.entry);
        put(buf, area, cell.col - first, cell.row, symbol, style);
    }
}

/// Writes `label` on the top border over `over`, as far as it fits there.
fn label_on_border(buf: &mut Buffer, border_y: u16, over: Rect, label: &str) {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    for (i, c) in label.chars().take(usize::from(over.width)).enumerate() {
        let Ok(i) = u16::try_from(i) else { return };
        if let Some(cell) = buf.cell_mut((over.x + i, border_y)) {
            cell.set_char(c).set_style(bold);
        }
    }
}

pub(super) fn draw(frame: &mut Frame, area: Rect, model: &Model) {
    let stats = model.roads.stats();
    let cols = usize::from(area.width.saturating_sub(2));
    let counts = text::first_fit(
        &[
            format!(
                " Player {} · Banker {} · Tie {} ",
                stats.player, stats.banker, stats.tie
            ),
            format!(" P {} B {} T {} ", stats.player, stats.banker, stats.tie),
        ],
        cols,
    );
    let block = Block::bordered().title_bottom(counts);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height < ROWS {
        return;
    }
    let grids = inner.height >= 2 * ROWS + 2;
    let [top, _, bottom] = Layout::vertical([
        Constraint::Length(ROWS),
        Constraint::Length(u16::from(grids)),
        Constraint::Min(0),
    ])
    .areas(inner);
    // Bead plate on the left (a third), Big Road on the rest, a column between.
    let bead_width = (top.width / 3).max(6);
    let [bead, _, big] = Layout::horizontal([
        Constraint::Length(bead_width),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(top);
    let buf = frame.buffer_mut();
    let bead_label = text::first_fit(&["Bead plate", "Bead"], usize::from(bead.width));
    label_on_border(buf, area.y, bead, &bead_label);
    let big_label = text::first_fit(&["Big Road", "Big"], usize::from(big.width));
    label_on_border(buf, area.y, big, &big_label);
    let results = model.roads.bead_plate().results();
    let bead_cols = results.len().div_ceil(usize::from(ROWS));
    let bead_cells: Vec<GridCell<Winner>> = results
        .iter()
        .enumerate()
        .map(|(i, &w)| GridCell {
            row: i % usize::from(ROWS),
            col: i / usize::from(ROWS),
            entry: w,
        })
        .collect();
    board(buf, bead, &bead_cells, bead_cols, |w| {
        let (s, c) = winner_cell(w);
        (s, Style::new().fg(c).add_modifier(Modifier::BOLD))
    });
    let big_road = model.roads.big_road();
    board(buf, big, &big_road.grid(), big_road.grid_width(), |e| {
        let color = if e.side == Side::Banker {
            BANKER
        } else {
            PLAYER
        };
        let symbol = if e.side == Side::Banker { "B" } else { "P" };
        // A tie sits on the cell before it: drawn on a green ground.
        let style = if e.ties > 0 {
            Style::new().fg(color).bg(TIE)
        } else {
            Style::new().fg(color)
        };
        (symbol, style)
    });
    if grids {
        let areas: [Rect; 3] = Layout::horizontal([
            Constraint::Ratio(1, 3),
            Constraint::Ratio(1, 3),
            Constraint::Ratio(1, 3),
        ])
        .spacing(1)
        .areas(bottom);
        for (kind, area) in DerivedKind::ALL.into_iter().zip(areas) {
            let [label, cells] =
                Layout::vertical([Constraint::Length(1), Constraint::Length(ROWS)]).areas(area);
            let road = model.roads.derived(kind);
            frame.render_widget(
                Paragraph::new(Line::styled(
                    kind.title(),
                    Style::new().add_modifier(Modifier::DIM),
                )),
                label,
            );
            board(
                frame.buffer_mut(),
                cells,
                road.grid(),
                road.grid_width(),
                |m| (mark_symbol(kind), Style::new().fg(mark_color(m))),
            );
        }
    } else {
        let width = usize::from(bottom.width.saturating_sub(8));
        let lines: Vec<Line> = DerivedKind::ALL
            .into_iter()
            .map(|kind| {
                let marks = model.roads.derived(kind).marks();
                let skip = marks.len().saturating_sub(width);
                let mut spans = vec![Span::styled(
                    format!("{} ", short_name(kind)),
                    Style::new().add_modifier(Modifier::DIM),
                )];
                spans.extend(
                    marks
                        .iter()
                        .skip(skip)
                        .map(|&m| Span::styled(mark_symbol(kind), Style::new().fg(mark_color(m)))),
                );
                Line::from(spans)
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), bottom);
    }
}
