//! The tests that did not run here: each reports itself through `banco_testkit::skipped`
//! into one file, which is counted and printed after the run. Where everything they need
//! is installed (CI sets `BANCO_NO_SKIPS=1`), a skipped test fails the run: a missing
//! package must not turn into a silently smaller suite.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// What `.ci/run` sets: no test may be skipped.
const NO_SKIPS_VAR: &str = "BANCO_NO_SKIPS";
/// `banco_testkit::SKIPPED_LOG_VAR`, without building the test kit into xtask.
pub(crate) const LOG_VAR: &str = "BANCO_SKIPPED_LOG";

/// The log for this run, emptied.
pub(crate) fn fresh_log(target: &Path) -> Result<PathBuf> {
    let log = target.join("skipped-tests.txt");
    match fs::remove_file(&log) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("could not empty {}", log.display())),
    }
    Ok(log)
}

/// Prints how many tests were skipped and which; fails when none may be.
pub(crate) fn report(log: &Path) -> Result<()> {
    let text = match fs::read_to_string(log) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("could not read {}", log.display())),
    };
    let skipped = lines(&text);
    eprintln!("xtask: {} tests skipped", skipped.len());
    for line in &skipped {
        eprintln!("xtask:   skipped {line}");
    }
    if !skipped.is_empty() && std::env::var_os(NO_SKIPS_VAR).is_some_and(|v| v == "1") {
        bail!(
            "{} tests were skipped where {NO_SKIPS_VAR}=1 says everything they need is installed",
            skipped.len()
        );
    }
    Ok(())
}

/// The skipped tests, sorted, each once (a test retried by its harness reports once).
fn lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_skipped_test_once() {
        assert_eq!(
            lines("b: no camera\na: no PostgreSQL\n\nb: no camera\n"),
            ["a: no PostgreSQL", "b: no camera"]
        );
        assert!(lines("").is_empty());
    }
}
