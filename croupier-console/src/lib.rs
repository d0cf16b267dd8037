//! The croupier console of a live Punto Banco table.
//!
//! Model / update / view, as gitui and the ratatui component template do it:
//! - [`model`]: everything the screen shows and the commands waiting to be sent;
//! - [`update`]: the one pure function that turns an [`action::Action`] (a key, a scanned
//!   line, a table state, a command's reply, a clock tick) into a new model and the
//!   [`action::Effect`]s to carry out (send this command, ring the bell, quit);
//! - [`view`]: draws a model on any ratatui backend (a terminal, or `TestBackend` in tests);
//! - [`net`]: the gRPC task, which only turns the table's stream and the replies into actions;
//! - [`scanner`]: line sources (serial device, FIFO, TCP or Unix socket, stdin);
//!   [`scan_line`] decides what each line is;
//! - [`app`]: the main loop, generic over the backend.

pub mod action;
pub mod app;
pub mod args;
pub mod command;
pub mod entry;
pub mod model;
pub mod net;
/// A scanned line, decided (the shared `banco-scanner` crate).
pub mod scan_line {
    pub use banco_scanner::line::*;
}
pub mod scanner;
pub mod update;
pub mod view;
