//! `banco-sim`: bots, a simulated shoe reader and the demo (the library holds it all).

use std::process::ExitCode;

fn main() -> ExitCode {
    banco_sim::main()
}
