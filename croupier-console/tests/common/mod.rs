//! Table states as the broadcaster sends them, for the console's tests.
#![allow(dead_code, unreachable_pub)]

use banco_wire::pb;
use croupier_console::action::{Action, Effect};
use croupier_console::model::Model;
use croupier_console::update::update;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub fn ts(ms: i64) -> banco_wire::Timestamp {
    banco_wire::Timestamp {
        seconds: 1_780_000_000 + ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

/// The table at seq `seq` in `phase`, shoe in play, no cards.
pub fn state(seq: u64, phase: pb::TablePhase, shoe: pb::ShoeState) -> pb::TableState {
    pb::TableState {
        table_id: "T01".into(),
        croupier: "maria".into(),
        phase: phase.into(),
        shoe_state: shoe.into(),
        shoe_id: if shoe == pb::ShoeState::NoShoe {
            String::new()
        } else {
            "T01-S0003".into()
        },
        server_time: Some(ts(0)),
        round_id: if matches!(phase, pb::TablePhase::Idle) {
            String::new()
        } else {
            "T01-S0003-H017".into()
        },
        cards_left: 371,
        seq,
        players: 12,
        currency: "EUR".into(),
        ..Default::default()
    }
}

pub fn dealt(cards: &[(&str, pb::Side)]) -> Vec<pb::DealtCard> {
    cards
        .iter()
        .map(|(card, side)| pb::DealtCard {
            card: (*card).into(),
            side: (*side).into(),
            source: pb::CardSource::Scanner.into(),
            dealt_at: Some(ts(0)),
        })
        .collect()
}

pub fn winners(text: &str) -> Vec<i32> {
    text.chars()
        .map(|c| match c {
            'B' => pb::Winner::Banker,
            'P' => pb::Winner::Player,
            _ => pb::Winner::Tie,
        })
        .map(Into::into)
        .collect()
}

/// Roads whose bead plate holds `text` (`BPT…`), as the table sends the whole shoe's.
pub fn roads(text: &str) -> Option<pb::Roads> {
    Some(pb::Roads {
        bead_plate: text.into(),
        ..Default::default()
    })
}

pub fn bets() -> Vec<pb::PositionTotal> {
    vec![
        pb::PositionTotal {
            kind: pb::BetKind::Player.into(),
            total_minor: 125_000,
            bettors: 4,
        },
        pb::PositionTotal {
            kind: pb::BetKind::Banker.into(),
            total_minor: 30_000,
            bettors: 2,
        },
        pb::PositionTotal {
            kind: pb::BetKind::PlayerPair.into(),
            total_minor: 500,
            bettors: 1,
        },
    ]
}

pub fn chat() -> Vec<pb::ChatLine> {
    vec![
        pb::ChatLine {
            at: Some(ts(0)),
            player: "alice".into(),
            text: "good luck everyone".into(),
        },
        pb::ChatLine {
            at: Some(ts(0)),
            player: "bob77".into(),
            text: "banker again!".into(),
        },
    ]
}

/// A console that has the table at `state`.
pub fn online(state: pb::TableState) -> Model {
    let mut model = Model::new("T01", "maria", 0, "c");
    update(&mut model, Action::Connected(Box::new(state)));
    model
}

pub fn key(model: &mut Model, code: KeyCode) -> Vec<Effect> {
    update(model, Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

pub fn keys(model: &mut Model, text: &str) -> Vec<Effect> {
    text.chars()
        .flat_map(|c| key(model, KeyCode::Char(c)))
        .collect()
}

pub fn ctrl(model: &mut Model, c: char) -> Vec<Effect> {
    update(
        model,
        Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)),
    )
}

pub fn scan(model: &mut Model, line: &str) -> Vec<Effect> {
    update(model, Action::ScannerLine(line.into()))
}

/// The commands among `effects`.
pub fn sent(effects: &[Effect]) -> Vec<croupier_console::command::Command> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send(p) => Some(p.command.clone()),
            _ => None,
        })
        .collect()
}

/// The table's OK reply to the command in flight, with `state` after it.
pub fn ok(model: &mut Model, state: pb::TableState) -> Vec<Effect> {
    let id = model
        .pending
        .front()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    update(
        model,
        Action::Reply {
            id,
            reply: Box::new(pb::CommandReply {
                seq: state.seq,
                state: Some(state),
                refusal: None,
                replayed: false,
            }),
        },
    )
}

pub fn refused(model: &mut Model, message: &str) -> Vec<Effect> {
    let id = model
        .pending
        .front()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    let state = model.table.clone();
    update(
        model,
        Action::Reply {
            id,
            reply: Box::new(pb::CommandReply {
                seq: state.as_ref().map_or(0, |s| s.seq),
                state,
                refusal: Some(pb::Refusal {
                    code: pb::RefusalCode::HandComplete.into(),
                    message: message.into(),
                    field: String::new(),
                }),
                replayed: false,
            }),
        },
    )
}
