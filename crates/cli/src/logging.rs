//! One tracing setup for every service: human-readable lines by default, JSON objects
//! (one per line, with `timestamp`, `level`, `target` and `message` at the top) on request.
//! Logs go to stderr: stdout carries the `… listening on ADDR` lines scripts read.

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

static JSON: AtomicBool = AtomicBool::new(false);

/// Installs the process's subscriber; `RUST_LOG` filters (default `info`).
pub(crate) fn init(format: LogFormat) {
    init_filtered(format, "info");
}

/// Benchmarks run the services with the same subscriber as when they serve (without
/// one, every span of the libraries below falls back to the `log` crate, a cost the
/// services do not pay), showing warnings only unless `RUST_LOG` says otherwise.
pub fn init_for_bench() {
    init_filtered(LogFormat::Text, "warn");
}

fn init_filtered(format: LogFormat, default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Colours only for a person at a terminal: a log file (the demo's logs/, systemd's
    // journal) would keep the escape codes as noise.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    // Err only if a subscriber is already set, which then keeps logging.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => {
            JSON.store(true, Ordering::Relaxed);
            builder.json().flatten_event(true).try_init()
        }
    };
}

/// A fatal error: a log line when logging JSON (so every line stays parseable), else
/// plain text.
pub(crate) fn fatal(err: &anyhow::Error) {
    let line = crate::sentence::sentence(err);
    if JSON.load(Ordering::Relaxed) {
        tracing::error!("banco: {line}");
    } else {
        eprintln!("banco: {line}");
    }
}
