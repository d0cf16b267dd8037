//! `banco wallet conformance URL`: runs the seamless protocol's checks against an
//! operator's implementation and prints one line per check, PASS or FAIL with what was
//! seen, and the totals; exit status 1 if any failed. The checks themselves are
//! `banco_wallet::seamless::conformance`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_wallet::seamless::conformance::{self, MIN_TEST_BALANCE, Options};
use banco_wallet::seamless::{Endpoint, SeamlessSecret};

#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// The operator's prefix, e.g. `https://casino.example/banco/` (or
    /// `seamless+https://…`, as given to `--wallet`); plain http only to this machine.
    url: String,
    /// The secret shared with the operator (at least 32 bytes, mode 0600).
    #[arg(long, value_name = "FILE")]
    secret_file: PathBuf,
    /// The test player the operator has set up for the checks, with at least 10.00 in
    /// `--currency`. Every check gives back what it takes.
    #[arg(long, default_value = "banco-conformance")]
    player: String,
    /// The test player's currency (ISO 4217).
    #[arg(long, default_value = "EUR")]
    currency: String,
    /// The operator's CA certificate (PEM), when its certificate is not from a public CA.
    #[arg(long, value_name = "PEM")]
    ca_cert: Option<PathBuf>,
    /// Every answer must come within this many milliseconds (the tables' limit for a
    /// debit).
    #[arg(long, default_value_t = 3_000, value_name = "MS")]
    limit_ms: u64,
}

pub(crate) fn run(args: &ConformanceArgs) -> anyhow::Result<ExitCode> {
    if !(args.currency.len() == 3 && args.currency.bytes().all(|b| b.is_ascii_uppercase())) {
        bail!(
            "--currency {}: not an ISO 4217 code (three capital letters, e.g. EUR)",
            args.currency
        );
    }
    let endpoint = Endpoint::parse(&args.url, args.ca_cert.as_deref())?;
    let secret = SeamlessSecret::from_file(&args.secret_file)?;
    let options = Options {
        player: args.player.clone(),
        currency: args.currency.clone(),
        limit: Duration::from_millis(args.limit_ms),
    };
    println!(
        "conformance of {} with test player {} ({}, needs at least {})",
        endpoint.base(),
        options.player,
        options.currency,
        banco_rules::Money::new(MIN_TEST_BALANCE, &options.currency)
    );
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    let report = runtime.block_on(conformance::run(endpoint, secret, &options));
    for check in &report.checks {
        let verdict = if check.passed { "PASS" } else { "FAIL" };
        println!("{verdict}  {}: {}", check.name, check.seen);
    }
    println!("{} passed, {} failed", report.passed(), report.failed());
    Ok(if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
