//! The main loop on ratatui's TestBackend: actions in, commands out, the bell rung, the
//! screen drawn, and quitting.
#![allow(clippy::unwrap_used)]

mod common;

use banco_wire::pb;
use common::state;
use croupier_console::action::Action;
use croupier_console::app;
use croupier_console::command::Command;
use croupier_console::model::Model;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc;

fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

#[tokio::test]
async fn actions_in_commands_out_screen_drawn() {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut model = Model::new("T01", "maria", 0, "run");
    let (actions, actions_rx) = mpsc::unbounded_channel();
    let (commands_tx, mut commands) = mpsc::unbounded_channel();
    let idle = state(1, pb::TablePhase::Idle, pb::ShoeState::NoShoe);
    actions.send(Action::Connected(Box::new(idle))).unwrap();
    actions.send(key('n')).unwrap();
    actions
        .send(Action::ScannerLine("nonsense".into()))
        .unwrap();
    drop(actions);
    let mut bells = 0;
    app::run(&mut terminal, &mut model, actions_rx, commands_tx, || {
        bells += 1
    })
    .await
    .unwrap();
    let sent = commands.recv().await.unwrap();
    assert_eq!(sent.command, Command::OpenShoe);
    assert_eq!(sent.id, "run-1");
    assert_eq!(bells, 1);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("NEW SHOE"), "{screen}");
    assert!(
        screen.contains("SCANNER: `nonsense` is not a card"),
        "{screen}"
    );
    assert!(screen.contains("pending (sending): new shoe"), "{screen}");
}

#[tokio::test]
async fn ctrl_q_quits_between_rounds() {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut model = Model::new("T01", "maria", 0, "run");
    let (actions, actions_rx) = mpsc::unbounded_channel();
    let (commands_tx, _commands) = mpsc::unbounded_channel();
    let idle = state(1, pb::TablePhase::Idle, pb::ShoeState::InPlay);
    actions.send(Action::Connected(Box::new(idle))).unwrap();
    actions
        .send(Action::Key(KeyEvent::new(
            KeyCode::Char('q'),
            KeyModifiers::CONTROL,
        )))
        .unwrap();
    // Kept open: the loop must end on the key, not because the channel closed.
    let run = app::run(&mut terminal, &mut model, actions_rx, commands_tx, || {});
    tokio::time::timeout(std::time::Duration::from_secs(5), run)
        .await
        .unwrap()
        .unwrap();
    drop(actions);
}
