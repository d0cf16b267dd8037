//! `croupier-console`: see the crate's README.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use croupier_console::action::Action;
use croupier_console::args::Args;
use croupier_console::model::Model;
use croupier_console::{app, net, scanner};
use futures::StreamExt as _;
use ratatui::crossterm::event::{Event, EventStream};
use tokio::sync::mpsc;

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("croupier-console: could not start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // A read from a serial device or stdin may sit on a blocking thread that nothing will
    // wake: quitting must not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("croupier-console: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Everything that can be wrong with the flags is said before the screen is taken.
    let token = banco_auth::client::read_token_file(&args.token_file).context("--token-file")?;
    let endpoint = banco_auth::client::endpoint(&args.server, args.ca_cert.as_deref())
        .context("--server, --ca-cert")?
        .connect_timeout(std::time::Duration::from_secs(3))
        .http2_keep_alive_interval(std::time::Duration::from_secs(5))
        .keep_alive_timeout(std::time::Duration::from_secs(5));
    let croupier = args
        .croupier_name
        .clone()
        .or(token.subject)
        .unwrap_or_else(|| "croupier".to_owned());
    let prefix = banco_auth::client::fresh_id().context("cannot draw a random id")?;
    let betting_ms = args
        .betting_seconds
        .checked_mul(1000)
        .context("--betting-seconds is too large")?;
    let mut model = Model::new(&args.table, &croupier, betting_ms, &prefix);

    let (actions_tx, actions_rx) = mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let client = banco_wire::pb::table_service_client::TableServiceClient::with_interceptor(
        endpoint.connect_lazy(),
        token.bearer,
    );
    net::spawn(client, args.table.clone(), actions_tx.clone(), commands_rx);
    if let Some(source) = args.scanner.clone() {
        tokio::spawn(scanner::run(source, actions_tx.clone()));
    }
    tokio::spawn(keyboard(actions_tx));

    let mut terminal = ratatui::init();
    let result = app::run(&mut terminal, &mut model, actions_rx, commands_tx, || {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x07");
        let _ = out.flush();
    })
    .await;
    ratatui::restore();
    result
}

/// Keys and resizes from the terminal, as actions.
async fn keyboard(actions: mpsc::UnboundedSender<Action>) {
    let mut events = EventStream::new();
    while let Some(event) = events.next().await {
        let action = match event {
            Ok(Event::Key(key)) => Action::Key(key),
            Ok(Event::Resize(..)) => Action::Resize,
            Ok(_) => continue,
            Err(_) => return,
        };
        if actions.send(action).is_err() {
            return;
        }
    }
}
