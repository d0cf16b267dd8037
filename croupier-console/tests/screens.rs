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
    state.roads = roads(ROADS);
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
    assert_eq!(
        view::prompt(&model).text,
        "RESULT: BANKER WINS · Player 5 – Banker 7"
    );
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
            colours_of(terminal.backend().buffer(), "RESULT: BANKER WINS")
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

/// Snapshots `model` at one size under `name`.
fn shot_at(name: &str, model: &Model, w: u16, h: u16) {
    let terminal = render(model, w, h);
    insta::assert_snapshot!(format!("{name}_{w}x{h}"), terminal.backend());
}

#[test]
fn too_small_says_so_and_what_is_due() {
    let model = online(dealing());
    for (w, h) in [(79, 24), (80, 23), (60, 20)] {
        shot_at("too_small", &model, w, h);
        let screen = render(&model, w, h).backend().to_string();
        assert!(screen.contains("TERMINAL TOO SMALL"), "{screen}");
        assert!(screen.contains("BANKER CARD"), "{screen}");
    }
}

#[test]
fn a_long_message_wraps_at_words_its_start_first() {
    let mut model = online(dealing());
    scan(&mut model, "QH");
    refused(
        &mut model,
        "cannot take back QH: the last card dealt is 7S; the croupier console sent an undo for a \
         card that the table no longer shows as the last one of the hand, so nothing was taken \
         back and the hand is as it was before",
    );
    shots("long_message", &model);
    for (w, h) in SIZES {
        let screen = render(&model, w, h).backend().to_string();
        assert!(
            screen.contains("REFUSED QH: cannot take back QH:"),
            "{screen}"
        );
    }
}

#[test]
fn the_burn_is_shown() {
    let mut s = rich(state(3, T::Idle, S::InPlay));
    s.burn = Some(pb::ShoeBurn {
        exposed_card: "7H".into(),
        burned_face_down: 7,
    });
    s.cards_left = 408;
    shots("burn_shown", &online(s));
}

#[test]
fn the_result_names_the_winner_and_its_flags_player_first() {
    let mut s = result();
    s.cards = dealt(&[("8H", P), ("9D", B), ("8C", P), ("9S", B)]);
    s.player_total = 6;
    s.banker_total = 8;
    s.result = Some(pb::HandResult {
        player_cards: vec!["8H".into(), "8C".into()],
        banker_cards: vec!["9D".into(), "9S".into()],
        player_total: 6,
        banker_total: 8,
        winner: pb::Winner::Banker.into(),
        natural: true,
        player_pair: true,
        banker_pair: true,
        cards_dealt: 4,
        ..Default::default()
    });
    let model = online(s);
    assert_eq!(
        view::prompt(&model).text,
        "RESULT: BANKER WINS · Player 6 – Banker 8 · natural · player pair · banker pair"
    );
    shots("result_flags", &model);
}

#[test]
fn after_r_the_round_shows_what_it_paid() {
    let mut s = result();
    s.phase = T::Settled.into();
    s.seq = 45;
    s.round_totals = Some(pb::RoundTotals {
        staked_minor: 155_500,
        returned_minor: 58_500,
        house_result_minor: 97_000,
    });
    shots("payout", &online(s));
}

#[test]
fn after_e_then_n_the_new_shoe_is_shown_and_the_old_hands_are_gone() {
    // The last round of shoe 3 on screen, then E: the shoe ends.
    let mut model = online(result());
    let mut ended = state(46, T::Idle, S::NoShoe);
    ended.round_id = "T01-S0003-H017".into();
    update(&mut model, Action::State(Box::new(ended)));
    // N: the table opens shoe 4 with no round, no cards, no results yet.
    let mut fresh = state(47, T::Idle, S::AwaitingBurn);
    fresh.shoe_id = "T01-S0004".into();
    fresh.round_id = String::new();
    fresh.cards_left = 416;
    fresh.roads = roads("");
    update(&mut model, Action::State(Box::new(fresh)));
    shots("new_shoe", &model);
    let screen = render(&model, 80, 24).backend().to_string();
    assert!(screen.contains("T01-S0004"), "{screen}");
    assert!(!screen.contains("T01-S0003"), "{screen}");
    assert!(!screen.contains("7♠"), "{screen}");
}

#[test]
fn ending_the_shoe_asks_again() {
    let mut model = online(rich(state(3, T::Idle, S::InPlay)));
    keys(&mut model, "eshift change");
    key(&mut model, KeyCode::Enter);
    shots("end_shoe_confirm", &model);
}

#[test]
fn a_stale_question_is_withdrawn_with_a_message() {
    let mut s = dealing();
    s.cards = dealt(&[("7H", P), ("KD", B), ("QH", P)]);
    s.player_total = 7;
    let mut model = online(s.clone());
    keys(&mut model, "u");
    shots("undo_question", &model);
    keys(&mut model, "misre");
    s.seq = 41;
    s.cards = dealt(&[("7H", P), ("KD", B), ("QH", P), ("7S", B)]);
    s.banker_total = 7;
    update(&mut model, Action::State(Box::new(s)));
    shots("stale_question", &model);
}

#[test]
fn the_roads_cover_the_whole_shoe() {
    let all = format!("{ROADS}{ROADS}PPBBT");
    assert!(all.len() > 59);
    let mut s = rich(state(60, T::Idle, S::InPlay));
    s.last_results = winners(&all[all.len() - 59..]);
    s.roads = roads(&all);
    s.cards_left = 60;
    let model = online(s);
    shots("whole_shoe_roads", &model);
    let count = |c| all.matches(c).count();
    let stats = format!(
        "Player {} · Banker {} · Tie {}",
        count('P'),
        count('B'),
        count('T')
    );
    let screen = render(&model, 120, 40).backend().to_string();
    assert!(screen.contains(&stats), "{stats}\n{screen}");
}

#[test]
fn chat_lines_wrap() {
    let mut s = rich(state(3, T::Idle, S::InPlay));
    s.chat.push(pb::ChatLine {
        at: Some(ts(0)),
        player: "carol_the_lucky".into(),
        text: "that was the longest banker streak I have seen all week, well played".into(),
    });
    s.players = 120;
    s.bettors = 16;
    let model = online(s);
    shots("chat_wrapped", &model);
    let screen = render(&model, 80, 24).backend().to_string();
    assert!(screen.contains("120 players"), "{screen}");
    assert!(screen.contains("bettors 16"), "{screen}");
}
