//! Every phase of a round as the croupier sees it, at 80×24 and 120×40 (insta snapshots of
//! ratatui's TestBackend), and the colours that matter: Banker red, Player blue, refusals
//! red.
#![allow(clippy::unwrap_used)]

mod common;

use banco_wire::pb;
use common::*;
use croupier_console::action::Action;
use croupier_console::model::Model;
use croupier_console::update::update;
use croupier_console::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::Color;

use pb::ShoeState as S;
use pb::Side::{Banker as B, Player as P};
use pb::TablePhase as T;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];
const ROADS: &str = "BBPPPTBPBBBBPPTBPBPPPBBTPBBBPPBPBB";

fn render(model: &Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| view::draw(f, model)).unwrap();
    terminal
}

/// Snapshots `model` at both sizes under `name`.
fn shots(name: &str, model: &Model) {
    for (w, h) in SIZES {
        let terminal = render(model, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
    }
}

fn rich(mut state: pb::TableState) -> pb::TableState {
    state.last_results = winners(ROADS);
    state.chat = chat();
    state
}

fn dealing() -> pb::TableState {
    let mut s = rich(state(40, T::Dealing, S::InPlay));
    s.cards = dealt(&[("7H", P), ("KD", B), ("8C", P)]);
    s.player_total = 5;
    s.banker_total = 0;
    s.due = pb::Due::BankerCard.into();
    s.bet_totals = bets();
    s.bettors = 6;
    s
}

fn result() -> pb::TableState {
    let mut s = rich(state(44, T::Result, S::InPlay));
    s.cards = dealt(&[("7H", P), ("KD", B), ("8C", P), ("7S", B)]);
    s.player_total = 5;
    s.banker_total = 7;
    s.due = pb::Due::Complete.into();
    s.result = Some(pb::HandResult {
        player_cards: vec!["7H".into(), "8C".into()],
        banker_cards: vec!["KD".into(), "7S".into()],
        player_total: 5,
        banker_total: 7,
        winner: pb::Winner::Banker.into(),
        cards_dealt: 4,
        ..Default::default()
    });
    s.bet_totals = bets();
    s.bettors = 6;
    s
}

#[test]
fn connecting() {
    shots("connecting", &Model::new("T01", "maria", 0, "c"));
}

#[test]
fn no_shoe() {
    shots("no_shoe", &online(state(1, T::Idle, S::NoShoe)));
}

#[test]
fn awaiting_burn() {
    shots("awaiting_burn", &online(state(2, T::Idle, S::AwaitingBurn)));
}

#[test]
fn idle_open_betting() {
    shots("idle", &online(rich(state(3, T::Idle, S::InPlay))));
}

#[test]
fn betting_open_with_countdown() {
    let mut s = rich(state(4, T::BettingOpen, S::InPlay));
    s.betting_closes_at = Some(ts(15_000));
    s.bet_totals = bets();
    s.bettors = 6;
    let mut model = online(s);
    update(&mut model, Action::Tick { now_ms: 2_500 });
    shots("betting_open", &model);
    assert_eq!(view::prompt(&model).text, "BETTING OPEN 0:13");
}

#[test]
fn player_card_due() {
    let mut s = rich(state(5, T::BettingClosed, S::InPlay));
    s.due = pb::Due::PlayerCard.into();
    s.bet_totals = bets();
    shots("player_card", &online(s));
}

#[test]
fn banker_card_due() {
    shots("banker_card", &online(dealing()));
}

#[test]
fn result_to_confirm() {
    let model = online(result());
    assert_eq!(view::prompt(&model).text, "RESULT: BANKER 7 – PLAYER 5");
    shots("result", &model);
}

#[test]
fn settled() {
    let mut s = result();
    s.phase = T::Settled.into();
    s.seq = 45;
    shots("settled", &online(s));
}

#[test]
fn voided() {
    let mut s = dealing();
    s.phase = T::Voided.into();
    shots("voided", &online(s));
}

#[test]
fn last_hand_of_the_shoe() {
    let mut s = rich(state(50, T::Settled, S::CutCardOut));
    s.cards_left = 15;
    shots("cut_card_out", &online(s));
}

#[test]
fn link_down_with_cards_held() {
    let mut model = online(dealing());
    update(
        &mut model,
        Action::Disconnected("Unavailable: connection refused".into()),
    );
    scan(&mut model, "7S");
    scan(&mut model, "2C");
    shots("link_down", &model);
}

#[test]
fn refusal_and_typing() {
    let mut model = online(result());
    scan(&mut model, "AS");
    refused(&mut model, "no card is due: the hand is complete");
    keys(&mut model, "1");
    shots("refusal", &model);
}

#[test]
fn help() {
    let mut model = online(dealing());
    keys(&mut model, "?");
    shots("help", &model);
}

#[test]
fn void_questions() {
    let mut model = online(dealing());
    keys(&mut model, "v");
    keys(&mut model, "camera down");
    shots("void_reason", &model);
    key(&mut model, KeyCode::Enter);
    shots("void_confirm", &model);
}

/// Cells whose symbol is `text`'s first character, along the row where `text` appears.
fn colours_of(buffer: &Buffer, text: &str) -> Vec<Color> {
    let area = buffer.area;
    for y in 0..area.height {
        let row: String = (0..area.width).map(|x| buffer[(x, y)].symbol()).collect();
        if let Some(byte) = row.find(text) {
            let x = u16::try_from(row[..byte].chars().count()).unwrap();
            return (x..x + u16::try_from(text.chars().count()).unwrap())
                .map(|x| {
                    let cell = &buffer[(x, y)];
                    if cell.bg == Color::Reset {
                        cell.fg
                    } else {
                        cell.bg
                    }
                })
                .collect();
        }
    }
    panic!("`{text}` is not on the screen");
}

#[test]
fn banker_is_red_player_is_blue_refusals_are_red() {
    for (w, h) in SIZES {
        let model = online(dealing());
        let terminal = render(&model, w, h);
        let buffer = terminal.backend().buffer();
        assert!(
            colours_of(buffer, "BANKER CARD")
                .iter()
                .all(|&c| c == Color::Red)
        );
        assert!(
            colours_of(buffer, " PLAYER ")
                .iter()
                .all(|&c| c == Color::Blue)
        );
        assert!(
            colours_of(buffer, " BANKER ")
                .iter()
                .all(|&c| c == Color::Red)
        );
        assert!(
            colours_of(buffer, "7♥  8♣")
                .iter()
                .all(|&c| c == Color::Blue)
        );

        let mut s = rich(state(5, T::BettingClosed, S::InPlay));
        s.due = pb::Due::PlayerCard.into();
        let terminal = render(&online(s), w, h);
        assert!(
            colours_of(terminal.backend().buffer(), "PLAYER CARD")
                .iter()
                .all(|&c| c == Color::Blue)
        );

        let mut model = online(result());
        let terminal = render(&model, w, h);
        assert!(
            colours_of(terminal.backend().buffer(), "RESULT: BANKER 7")
                .iter()
                .all(|&c| c == Color::Red)
        );
        scan(&mut model, "ZZ");
        let terminal = render(&model, w, h);
        assert!(
            colours_of(terminal.backend().buffer(), "SCANNER:")
                .iter()
                .all(|&c| c == Color::Red)
        );
    }
}

#[test]
fn roads_show_banker_red_and_player_blue() {
    let model = online(rich(state(3, T::Idle, S::InPlay)));
    let terminal = render(&model, 120, 40);
    let buffer = terminal.backend().buffer();
    let mut seen = (0, 0);
    for cell in buffer.content() {
        match cell.symbol() {
            "B" if cell.fg == Color::Red => seen.0 += 1,
            "P" if cell.fg == Color::Blue => seen.1 += 1,
            "B" | "P" if cell.fg == Color::Reset => {}
            _ => {}
        }
    }
    // Each result appears on the bead plate; each B/P win again on the Big Road.
    let banker = ROADS.matches('B').count();
    let player = ROADS.matches('P').count();
    assert!(seen.0 >= 2 * banker, "{seen:?}");
    assert!(seen.1 >= 2 * player, "{seen:?}");
}
