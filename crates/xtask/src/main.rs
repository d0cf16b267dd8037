//! `cargo xtask`: the project's own automation, in Rust so that it runs wherever cargo does.
//!
//! - `setup`: installs the Debian packages banco needs, when any is missing.
//! - `test`:  setup, then formatting, clippy, and every test of the workspace.
//! - `ci`:    `test`, plus the benchmarks built and each fuzz target run for a short time.
//! - `bench`: the criterion benchmarks, printing their figures.
//! - `demo`:  setup, build, and run a whole table on this machine (`banco demo table`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

mod packages;
mod postgres;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup   install the Debian packages banco needs (as root; otherwise prints the command)
  test    setup, cargo fmt --check, clippy -D warnings, every test of the workspace
  ci      test, then build the benchmarks and run each fuzz target for 20 s (nightly)
  bench   run the criterion benchmarks and print their figures
  demo    setup, build, and run a whole table: services, video, 20 bots and the croupier
          console (--headless --rounds N: a built-in croupier and a summary;
          `demo rules`: a seeded shoe through the rules engine alone)
";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let Some((command, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        bail!("no command given");
    };
    match command.as_str() {
        "setup" => packages::setup(),
        "test" => test(),
        "ci" => ci(),
        "bench" => bench(rest),
        "demo" => demo(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("{USAGE}");
            bail!("unknown command `{other}`")
        }
    }
}

fn test() -> Result<()> {
    packages::setup()?;
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // The archive's suite runs on SQLite always, and again on PostgreSQL when there is one.
    let database = postgres::database_url()?;
    let env: Vec<(&str, &str)> = database
        .as_deref()
        .map(|url| ("DATABASE_URL", url))
        .into_iter()
        .collect();
    // --all-targets also runs each criterion benchmark once in test mode, so the checks
    // every benchmark makes of its own results run here too.
    cargo_with(&["test", "--workspace", "--all-targets"], &env)?;
    cargo(&["test", "--workspace", "--doc"])?;
    fuzz_lint()
}

fn ci() -> Result<()> {
    test()?;
    cargo(&["bench", "--workspace", "--no-run"])?;
    fuzz_run(FUZZ_SECONDS)
}

fn bench(extra: &[String]) -> Result<()> {
    let mut args = vec!["bench", "--workspace", "--bench", "*"];
    if !extra.is_empty() {
        args.push("--");
        args.extend(extra.iter().map(String::as_str));
    }
    cargo(&args)
}

/// Builds `banco` and `croupier-console` (release), then runs `banco demo table` with the
/// arguments given (`--headless --rounds N`, …) in the current folder, so the demo's data
/// lands in `./demo-data`. `cargo xtask demo rules [--seed N]` runs the rules-only
/// walk-through instead.
fn demo(extra: &[String]) -> Result<()> {
    packages::setup()?;
    cargo(&[
        "build",
        "--release",
        "--quiet",
        "--package",
        "banco-cli",
        "--package",
        "croupier-console",
    ])?;
    let banco = target_dir(&root()).join("release").join("banco");
    let mut args: Vec<&str> = vec!["demo"];
    if extra.first().map(String::as_str) != Some("rules") {
        args.push("table");
    }
    args.extend(extra.iter().map(String::as_str));
    eprintln!("xtask: {} {}", banco.display(), args.join(" "));
    let status = Command::new(&banco)
        .args(&args)
        .status()
        .with_context(|| format!("could not start {}", banco.display()))?;
    if !status.success() {
        bail!("the demo failed ({status})");
    }
    Ok(())
}

/// The fuzz crates, each a workspace of its own (cargo-fuzz wants that), and their targets:
/// the rules' parsers and dealing, then the parsers above them (tokens, bets typed and on
/// the wire, scanner lines and sources, table specs and blocked-words files).
const FUZZ_CRATES: [(&str, &[&str]); 2] = [
    ("crates/rules/fuzz", &["card", "hand"]),
    ("fuzz", &["tokens", "bets", "scanner", "config"]),
];

/// Seconds each fuzz target runs in `ci`: 6 targets, about 2 minutes in all.
const FUZZ_SECONDS: u32 = 20;

/// Their invariant checks run on stable from seeded corpora (the rules crate's tests and
/// the e2e crate's `fuzz_seeds`); here each fuzz crate is linted so that its targets keep
/// compiling.
fn fuzz_lint() -> Result<()> {
    for (dir, _) in FUZZ_CRATES {
        let manifest = root().join(dir).join("Cargo.toml");
        cargo(&[
            "clippy",
            "--manifest-path",
            &manifest.to_string_lossy(),
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])?;
    }
    Ok(())
}

/// Whether `cargo +nightly fuzz` runs.
fn cargo_fuzz_available() -> bool {
    Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a nightly toolchain is installed.
fn nightly_available() -> bool {
    Command::new("cargo")
        .args(["+nightly", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Each fuzz target for a short time under libFuzzer, from its committed seeds
/// (`seeds/<target>`, read only) and what earlier runs found (`corpus/<target>`, ignored
/// by git). Needs nightly; cargo-fuzz is installed when missing. A machine without
/// nightly skips with a note.
fn fuzz_run(seconds: u32) -> Result<()> {
    if !nightly_available() {
        eprintln!(
            "xtask: no nightly toolchain: fuzz targets not run (rustup toolchain install nightly)"
        );
        return Ok(());
    }
    if !cargo_fuzz_available() {
        eprintln!("xtask: installing cargo-fuzz");
        let status = Command::new("cargo")
            .args(["install", "cargo-fuzz", "--locked"])
            .status()
            .context("could not start cargo install")?;
        if !status.success() || !cargo_fuzz_available() {
            bail!("could not install cargo-fuzz ({status})");
        }
    }
    for (dir, targets) in FUZZ_CRATES {
        let fuzz_dir = root().join(dir);
        for target in targets.iter().copied() {
            let corpus = fuzz_dir.join("corpus").join(target);
            std::fs::create_dir_all(&corpus)
                .with_context(|| format!("could not create {}", corpus.display()))?;
            let seeds = fuzz_dir.join("seeds").join(target);
            eprintln!("xtask: fuzzing `{target}` ({dir}) for {seconds} s");
            let status = Command::new("cargo")
                .args(["+nightly", "fuzz", "run", target])
                .arg(&corpus)
                .arg(&seeds)
                .args(["--", &format!("-max_total_time={seconds}")])
                .current_dir(&fuzz_dir)
                .status()
                .context("could not start cargo fuzz")?;
            if !status.success() {
                bail!("fuzz target `{target}` failed ({status}): see {dir}/artifacts/{target}");
            }
        }
    }
    Ok(())
}

/// Runs cargo in the workspace root, sharing the workspace's target directory.
fn cargo(args: &[&str]) -> Result<()> {
    cargo_with(args, &[])
}

/// [`cargo`] with more environment variables.
fn cargo_with(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("xtask: cargo {}", args.join(" "));
    let root = root();
    let status = Command::new(cargo)
        .args(args)
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", target_dir(&root))
        .envs(env.iter().copied())
        .status()
        .context("could not start cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

fn target_dir(root: &Path) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| root.join("target"), PathBuf::from)
}

/// The workspace root: two levels above this crate's manifest.
fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .unwrap_or(manifest_dir)
        .to_path_buf()
}
