//! Helpers for banco's end-to-end tests: they run the real `banco` binary as a separate
//! process, as an operator or an auditor would.
//!
//! - [`procs`]: keys, tokens, and the validator and broadcaster as child processes.
//! - [`clients`]: a croupier console that numbers its commands, and player clients.
//! - [`follow`]: a player app following a table, resuming on another server when one
//!   goes.
//! - [`nats`]: NATS JetStream of the test's own, and a table's stream read back.
//! - [`studio`]: NATS, an origin broadcaster and edges, with players following on them.
//! - [`model`]: an independent model of bets, balances and settlements to compare with.
//! - [`random_bets`]: the seeded random requests the model-checked runs place.
//! - [`metrics`]: scraping a service's `/metrics` and checking the exposition format.
//! - [`outbox`]: reading `outbox.jsonl` and checking its hash chain from the bytes.
//! - [`webdriver`]: headless Chromium through chromedriver, for the player page.
//! - [`poll`], [`poll_blocking`]: waiting for what a service does a moment after its reply.

pub mod archive;
pub mod clients;
pub mod follow;
pub mod metrics;
pub mod model;
pub mod nats;
pub mod outbox;
pub mod procs;
pub mod random_bets;
pub mod studio;
pub mod wallet_proxy;
pub mod webdriver;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// A finished command's exit code and output, for an assertion's message.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub use banco_testkit::{eventually, eventually_async, eventually_within, poll, poll_blocking};

/// The `banco` binary of this workspace, built once per test process.
///
/// The tests crate cannot name another package's binary through cargo, so it asks cargo to
/// build it with the same profile into the same target directory (or runs the binary
/// `BANCO_E2E_BIN` names).
pub fn banco() -> Command {
    Command::new(banco_path())
}

fn banco_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| workspace_binary("banco-cli", "banco", "BANCO_E2E_BIN"))
}

/// The `banco-sim` binary (bots, shoe reader, demo), built like [`banco`] (or named by
/// `BANCO_E2E_SIM_BIN`). `banco` is built first: the demo runs the one beside it.
pub fn banco_sim() -> Command {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    Command::new(PATH.get_or_init(|| {
        banco_path();
        workspace_binary("banco-sim", "banco-sim", "BANCO_E2E_SIM_BIN")
    }))
}

/// The `banco-bench` binary, built like [`banco`] (or named by `BANCO_E2E_BENCH_BIN`).
pub fn banco_bench() -> Command {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    Command::new(
        PATH.get_or_init(|| workspace_binary("banco-bench", "banco-bench", "BANCO_E2E_BENCH_BIN")),
    )
}

/// The `croupier-console` binary, built like [`banco`] (or named by `BANCO_E2E_CONSOLE`).
pub fn croupier_console_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        workspace_binary("croupier-console", "croupier-console", "BANCO_E2E_CONSOLE")
    })
}

fn workspace_binary(package: &str, bin: &str, override_var: &str) -> PathBuf {
    // A binary built elsewhere (e.g. a release build, or a snapshot while the tree is
    // mid-change) can be named instead.
    if let Some(path) = std::env::var_os(override_var) {
        return PathBuf::from(path);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--package", package, "--bin", bin])
        .current_dir(&root)
        .status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "could not build the {bin} binary: {status:?}"
    );
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target
        .join("debug")
        .join(format!("{bin}{}", std::env::consts::EXE_SUFFIX))
}
