//! `banco-sim`: the simulators of a banco table, kept out of the production `banco` binary.
//!
//! - `bots`: simulated players that watch and bet like people, for demos and load.
//! - `shoe-sim`: a simulated shoe reader feeding the croupier console.
//! - `demo`: a whole live table on this machine (`table`), or a seeded shoe through the
//!   rules engine alone (`rules`).
//!
//! They reach the table with `banco`'s own clients ([`banco::clients`]); the demo starts
//! the services with the `banco` binary beside this one.

use std::process::ExitCode;

use clap::Parser;

mod bots;
mod demo;
mod shoe_sim;

/// Simulators of a live Punto Banco table: bots, a shoe reader and the demo.
#[derive(Debug, Parser)]
#[command(name = "banco-sim", version)]
enum Cli {
    /// A whole live table on this machine (`table`), or a seeded shoe through the rules
    /// engine alone (`rules`).
    #[command(subcommand)]
    Demo(demo::DemoCommand),
    /// A simulated shoe reader: a seeded shuffled shoe, one card per line into the
    /// console's scanner source each time the table wants one, with the odd misread.
    ShoeSim(shoe_sim::ShoeSimArgs),
    /// Simulated players that watch and bet like people, for demos and load.
    Bots(bots::BotsArgs),
}

/// `banco-sim` with the process's arguments; its exit status.
pub fn main() -> ExitCode {
    main_with(std::env::args_os().collect())
}

/// `banco-sim` with `args` (the program's name first), as if run with them; its exit
/// status.
pub fn main_with(args: Vec<std::ffi::OsString>) -> ExitCode {
    if let Err(err) = banco::clients::stop_with_parent::apply() {
        eprintln!("banco-sim: {err:#}");
        return ExitCode::from(2);
    }
    let result = match Cli::parse_from(args) {
        Cli::Demo(args) => demo::run(&args),
        Cli::Bots(args) => bots::run(&args),
        Cli::ShoeSim(args) => shoe_sim::run(&args),
    };
    result.unwrap_or_else(|err| banco::clients::fatal(&err))
}
