//! `banco-sim demo`: what banco does, shown to a newcomer.
//!
//! - `table`: a whole live table on this machine (every service, video, bots, the croupier
//!   console or a built-in croupier), as `cargo xtask demo` runs it.
//! - `rules`: one seeded shoe played through the rules engine alone, in this process.

mod rules;
mod table;

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DemoCommand {
    /// A whole table on this machine: validator, archive, broadcaster, video, 20 bots, and
    /// the croupier console fed by a simulated shoe reader (or, headless, a built-in
    /// croupier and a summary).
    Table(table::TableDemoArgs),
    /// Play one seeded shoe through the rules engine alone: every hand, its settlement,
    /// roads and odds.
    Rules(rules::RulesDemoArgs),
}

pub(crate) fn run(command: &DemoCommand) -> anyhow::Result<ExitCode> {
    match command {
        DemoCommand::Table(args) => table::run(args),
        DemoCommand::Rules(args) => rules::run(args),
    }
}
