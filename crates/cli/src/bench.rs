//! `banco bench …`: the benchmarks. They live in a binary of their own, `banco-bench`
//! (crates/bench), so that `banco` carries neither them nor their load generators; this
//! command becomes that binary, found beside `banco` or on PATH, with the same arguments,
//! so that its figures, errors and exit status are the benchmark's own.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::sibling;

const BENCH: &str = "banco-bench";

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub(crate) struct BenchArgs {
    /// The benchmark and its flags, as `banco-bench` takes them: `bets --wallet embedded
    /// --rate 20000`, `wallet --db postgres://…`, `validator`, `fanout`, `video`,
    /// `archive`; `banco bench --help` lists them, `banco bench bets --help` the flags of one.
    #[arg(
        value_name = "BENCHMARK",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<OsString>,
}

pub(crate) fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let banco = std::env::current_exe().context("cannot tell where this banco binary is")?;
    let bench = sibling::find(
        &banco,
        BENCH,
        "build it beside banco (`cargo build --release -p banco-cli -p banco-bench`; \
         the figures mean something in a release build only)",
    )?;
    // Only returns if the benchmark could not be started.
    let err = std::process::Command::new(&bench).args(&args.args).exec();
    Err(err).with_context(|| format!("could not start {}", bench.display()))
}
