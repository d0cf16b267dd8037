//! `cargo xtask`: the project's own automation, in Rust so that it runs wherever cargo does.
//!
//! - `setup`: installs the Debian packages banco needs, when any is missing.
//! - `test`:  setup, the player page built and its own tests, then formatting, clippy
//!   (also of banco-broadcaster and banco-cli without their default features),
//!   `banco`'s dependencies checked (no benchmarks, no console; without its default
//!   features no GStreamer, no async-nats), every test of the workspace, and the book
//!   built with its links checked.
//! - `ci`:    `test`, plus the benchmarks built and each fuzz target run for a short time.
//! - `bench`: the criterion benchmarks, printing their figures.
//! - `demo`:  setup, build, and run a whole table on this machine (`banco-sim demo table`).
//! - `web`:   build the player page (`web/`, Node and npm) that the broadcaster serves.
//! - `docs`:  regenerate the book's CLI page, build the book (`docs/`, mdBook) and check
//!   every relative link of the book and the README.

use std::env;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};

mod deps;
mod docs;
mod packages;
mod postgres;
mod skipped;
mod web;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup   install the Debian packages banco needs (as root; otherwise prints the command)
  test    setup, the page built and its tests (npm), cargo fmt --check, clippy -D
          warnings (broadcaster and cli also --no-default-features), banco's
          dependencies checked (without the benchmarks and the console; without its
          default features, without GStreamer and async-nats), every test of the
          workspace, then the book built (mdbook, installed if missing) and its links
          checked
  ci      test, then build the benchmarks and run each fuzz target for 20 s (on nightly
          if installed, else on stable with RUSTC_BOOTSTRAP=1)
  bench   run the criterion benchmarks and print their figures
  demo    setup, build, and run a whole table: services, video, 20 bots and the croupier
          console (--headless --rounds N: a built-in croupier and a summary;
          `demo rules`: a seeded shoe through the rules engine alone)
  web     build the player page (web/: npm ci, then generate, type-check and bundle) when
          its sources changed; test and demo do it first
  docs    write docs/src/reference/cli.md from banco's clap command, build the book
          (docs/, mdbook, installed if missing) into target/book, and check that every
          relative link of the book and of README.md leads to a file
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
        "web" => web::build(&root()),
        "docs" => docs::docs(&root(), &target_dir(&root())),
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
    // Before any build: the broadcaster builds the page's files in. The page's own
    // type-check and unit tests run here too.
    web::test(&root())?;
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // The crates whose features leave GStreamer and async-nats out, built without them.
    cargo(&[
        "clippy",
        "-p",
        "banco-broadcaster",
        "-p",
        "banco-cli",
        "--no-default-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    deps::check(&root(), &target_dir(&root()))?;
    // The archive's suite runs on SQLite always, and again on PostgreSQL when there is one.
    let database = postgres::database_url()?;
    let skipped_log = skipped::fresh_log(&target_dir(&root()))?;
    let skipped_log_text = skipped_log.to_string_lossy();
    let mut env: Vec<(&str, &str)> = vec![(skipped::LOG_VAR, &skipped_log_text)];
    env.extend(database.as_deref().map(|url| ("DATABASE_URL", url)));
    // --all-targets also runs each criterion benchmark once in test mode, so the checks
    // every benchmark makes of its own results run here too.
    cargo_with(&["test", "--workspace", "--all-targets"], &env)?;
    // Without the features: their unit tests check that every option needing a left-out
    // feature is refused by name, which only a build without it can show.
    cargo(&[
        "test",
        "-p",
        "banco-broadcaster",
        "-p",
        "banco-cli",
        "--no-default-features",
        "--lib",
    ])?;
    skipped::report(&skipped_log)?;
    cargo(&["test", "--workspace", "--doc"])?;
    fuzz_lint()?;
    // Last: the book builds and its links resolve (its CLI page was checked against the
    // binary by the cli crate's `cli_reference` test above).
    docs::check(&root(), &target_dir(&root()))
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

/// Builds `banco`, `banco-sim` and `croupier-console` (release), then runs
/// `banco-sim demo table` with the arguments given (`--headless --rounds N`, …) in the
/// current folder, so the demo's data lands in `./demo-data`. `cargo xtask demo rules
/// [--seed N]` runs the rules-only walk-through instead.
fn demo(extra: &[String]) -> Result<()> {
    packages::setup()?;
    web::build(&root())?;
    cargo(&[
        "build",
        "--release",
        "--quiet",
        "--package",
        "banco-cli",
        "--package",
        "banco-sim",
        "--package",
        "croupier-console",
    ])?;
    // The demo runs the services from the `banco` beside `banco-sim`.
    let sim = target_dir(&root()).join("release").join("banco-sim");
    let mut args: Vec<&str> = vec!["demo"];
    if extra.first().map(String::as_str) != Some("rules") {
        args.push("table");
    }
    args.extend(extra.iter().map(String::as_str));
    eprintln!("xtask: {} {}", sim.display(), args.join(" "));
    let status = Command::new(&sim)
        .args(&args)
        .status()
        .with_context(|| format!("could not start {}", sim.display()))?;
    if !status.success() {
        bail!("the demo failed ({status})");
    }
    Ok(())
}

/// The fuzz crates, each a workspace of its own (cargo-fuzz wants that), and their targets:
/// the rules' parsers and dealing, then the parsers above them (tokens, bets typed and on
/// the wire, scanner lines and sources, table specs and blocked-words files, the
/// services' config files).
const FUZZ_CRATES: [(&str, &[&str]); 2] = [
    ("crates/rules/fuzz", &["card", "hand"]),
    (
        "fuzz",
        &["tokens", "bets", "scanner", "config", "service_config"],
    ),
];

/// Seconds each fuzz target runs in `ci`: 7 targets, about 2.5 minutes in all (and the
/// first build of the fuzz crates).
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

/// The toolchain the fuzz targets are built with. cargo-fuzz passes unstable flags
/// (`-Zsanitizer=address`, sanitizer coverage): nightly takes them; without nightly (the
/// machines here have only stable, and no other toolchain can be fetched) stable takes them
/// with `RUSTC_BOOTSTRAP=1`, which unlocks them on the same compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FuzzToolchain {
    Nightly,
    StableBootstrapped,
}

impl FuzzToolchain {
    /// Nightly if installed, else stable; `XTASK_FUZZ_TOOLCHAIN=stable` (or `nightly`)
    /// chooses, so that the stable way can be tried where nightly exists.
    fn find() -> Result<FuzzToolchain> {
        match env::var("XTASK_FUZZ_TOOLCHAIN").as_deref() {
            Ok("stable") => return Ok(FuzzToolchain::StableBootstrapped),
            Ok("nightly") => return Ok(FuzzToolchain::Nightly),
            Ok("") | Err(_) => {}
            Ok(other) => bail!("XTASK_FUZZ_TOOLCHAIN={other}: give stable or nightly"),
        }
        let nightly = cargo_command("cargo")
            .args(["+nightly", "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Ok(if nightly {
            FuzzToolchain::Nightly
        } else {
            FuzzToolchain::StableBootstrapped
        })
    }

    fn name(self) -> &'static str {
        match self {
            FuzzToolchain::Nightly => "nightly",
            FuzzToolchain::StableBootstrapped => "stable with RUSTC_BOOTSTRAP=1",
        }
    }

    /// `cargo fuzz` on this toolchain.
    fn cargo_fuzz(self) -> Command {
        let mut command = cargo_command("cargo");
        match self {
            FuzzToolchain::Nightly => {
                command.arg("+nightly");
            }
            FuzzToolchain::StableBootstrapped => {
                command.env("RUSTC_BOOTSTRAP", "1");
            }
        }
        command.arg("fuzz");
        command
    }

    /// Whether `cargo fuzz` runs on this toolchain.
    fn has_cargo_fuzz(self) -> bool {
        self.cargo_fuzz()
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// What one fuzz target did.
#[derive(Debug)]
struct FuzzReport {
    target: &'static str,
    runs: Option<u64>,
    seconds: Option<u64>,
}

/// Each fuzz target for a short time under libFuzzer, from its committed seeds
/// (`seeds/<target>`, read only) and what earlier runs found (`corpus/<target>`, ignored
/// by git), on nightly when there is one, else on stable (see [`FuzzToolchain`]);
/// cargo-fuzz is installed when missing. Prints how many inputs each target ran.
fn fuzz_run(seconds: u32) -> Result<()> {
    let toolchain = FuzzToolchain::find()?;
    eprintln!("xtask: fuzzing on {}", toolchain.name());
    if !toolchain.has_cargo_fuzz() {
        eprintln!("xtask: installing cargo-fuzz");
        let status = cargo_command("cargo")
            .args(["install", "cargo-fuzz", "--locked"])
            .status()
            .context("could not start cargo install")?;
        if !status.success() || !toolchain.has_cargo_fuzz() {
            bail!("could not install cargo-fuzz ({status})");
        }
    }
    let mut reports = Vec::new();
    for (dir, targets) in FUZZ_CRATES {
        let fuzz_dir = root().join(dir);
        for target in targets.iter().copied() {
            let corpus = fuzz_dir.join("corpus").join(target);
            std::fs::create_dir_all(&corpus)
                .with_context(|| format!("could not create {}", corpus.display()))?;
            let seeds = fuzz_dir.join("seeds").join(target);
            eprintln!("xtask: fuzzing `{target}` ({dir}) for {seconds} s");
            let mut child = toolchain
                .cargo_fuzz()
                .args(["run", target])
                .arg(&corpus)
                .arg(&seeds)
                .args(["--", &format!("-max_total_time={seconds}")])
                .current_dir(&fuzz_dir)
                .stderr(Stdio::piped())
                .spawn()
                .context("could not start cargo fuzz")?;
            let mut report = FuzzReport {
                target,
                runs: None,
                seconds: None,
            };
            // libFuzzer reports on stderr; passed on as it comes, its last word kept.
            if let Some(stderr) = child.stderr.take() {
                for line in BufReader::new(stderr).lines() {
                    let line = line.context("could not read cargo fuzz's output")?;
                    eprintln!("{line}");
                    if let Some((runs, secs)) = done_line(&line) {
                        report.runs = Some(runs);
                        report.seconds = Some(secs);
                    }
                }
            }
            let status = child.wait().context("cargo fuzz")?;
            if !status.success() {
                bail!("fuzz target `{target}` failed ({status}): see {dir}/artifacts/{target}");
            }
            reports.push(report);
        }
    }
    eprintln!("xtask: fuzz targets run ({}):", toolchain.name());
    for report in &reports {
        match (report.runs, report.seconds) {
            (Some(runs), Some(secs)) => eprintln!(
                "xtask:   {:<16} {runs:>10} runs in {secs} s ({} per second)",
                report.target,
                runs / secs.max(1)
            ),
            _ => eprintln!(
                "xtask:   {:<16} finished without libFuzzer's `Done … runs` line",
                report.target
            ),
        }
    }
    Ok(())
}

/// libFuzzer's last line: `Done 123456 runs in 21 second(s)`.
fn done_line(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("Done ")?;
    let (runs, rest) = rest.split_once(" runs in ")?;
    let (secs, _) = rest.split_once(' ')?;
    Some((runs.parse().ok()?, secs.parse().ok()?))
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
    let status = cargo_command(cargo)
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

/// A cargo command without what `cargo run` set for this xtask (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_NAME`, …). Build scripts that watch one of them (ring watches
/// `CARGO_MANIFEST_DIR`) would see it change between `cargo xtask …` and a plain
/// `cargo …`, and everything above them would be rebuilt each time one follows the other
/// (two minutes of release build, measured).
fn cargo_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    for (name, _) in env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(&name);
        }
    }
    command
}

fn set_by_cargo_run(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
    ) || name.starts_with("CARGO_PKG_")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libfuzzers_last_line_gives_the_runs_and_seconds() {
        assert_eq!(
            done_line("Done 1234567 runs in 21 second(s)"),
            Some((1_234_567, 21))
        );
        assert_eq!(done_line("#1024\tpulse  cov: 12 ft: 13 corp: 4/20b"), None);
        assert_eq!(done_line("Done lots runs in 2 second(s)"), None);
    }

    #[test]
    fn cargo_runs_without_what_cargo_run_set_for_the_xtask() {
        // This test runs under cargo, which sets them as `cargo run` does.
        assert!(env::var_os("CARGO_MANIFEST_DIR").is_some());
        let command = cargo_command("cargo");
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        assert!(
            removed.iter().any(|n| n == "CARGO_MANIFEST_DIR"),
            "{removed:?}"
        );
        assert!(removed.iter().any(|n| n == "CARGO_PKG_NAME"), "{removed:?}");
        assert!(set_by_cargo_run("CARGO_PKG_VERSION"));
        assert!(!set_by_cargo_run("CARGO_TARGET_DIR"));
        assert!(!set_by_cargo_run("CARGO_HOME"));
    }
}
