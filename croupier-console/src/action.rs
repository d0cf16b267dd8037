//! What happens to the console (actions) and what the console does about it (effects).

use banco_wire::pb;
use ratatui::crossterm::event::KeyEvent;

use crate::command::Pending;

/// Everything that can change the model. Each comes from one place: the keyboard, the
/// scanner task, the gRPC task, or the clock.
#[derive(Clone, Debug)]
pub enum Action {
    /// Milliseconds since the console started; sent before every other action and a few
    /// times a second, so the countdown moves and retries fire.
    Tick {
        now_ms: u64,
    },
    Key(KeyEvent),
    /// One line from the card scanner, as read (not yet checked).
    ScannerLine(String),
    /// The scanner source's condition, for the header ("unix:///run/shoe.sock: connected").
    ScannerStatus {
        ok: bool,
        text: String,
    },
    /// The table's stream is (back) up: its first state, a full snapshot.
    Connected(Box<pb::TableState>),
    /// A later state from the stream.
    State(Box<pb::TableState>),
    /// The stream broke; the gRPC task is reconnecting.
    Disconnected(String),
    /// The table answered a command.
    Reply {
        id: String,
        reply: Box<pb::CommandReply>,
    },
    /// A command got no answer from the table (transport failure, or the request was
    /// refused before reaching the table).
    SendFailed {
        id: String,
        code: tonic::Code,
        message: String,
    },
    /// The terminal changed size (the view adapts by itself; this only redraws).
    Resize,
}

/// What `update` asks the main loop to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send this command (again, after a reconnect: same id).
    Send(Pending),
    /// Ring the terminal bell (a refusal).
    Bell,
    Quit,
}
