//! What the tests of every crate share.
//!
//! - [`eventually`] and its kin wait for what a service does a moment after its reply (an
//!   outbox drained, a watermark written, a subscriber caught up) by asking again until it
//!   holds, instead of sleeping for a guessed time: a fixed sleep is either too short on a
//!   loaded CI machine or wastes time everywhere else.
//! - [`skipped`] reports a test that cannot run here (no PostgreSQL, no H.264 encoder): the
//!   test passes, but `cargo xtask test` counts and prints it, and CI, which installs
//!   everything, fails on it.
//! - [`self_signed_localhost`] gives the tests of TLS a server identity and the CA that
//!   trusts it.
#![allow(clippy::missing_panics_doc)]

use std::io::Write;
use std::time::{Duration, Instant};

/// How long [`eventually`] waits before the test fails: far beyond what any condition
/// takes on an idle machine, so that only a real failure (or a machine that stalls for
/// seconds) ends the wait.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The file `skipped` appends to, one line a skipped test, when the variable is set
/// (`cargo xtask test` sets it and reads the file when the tests are done).
pub const SKIPPED_LOG_VAR: &str = "BANCO_SKIPPED_LOG";

/// The pause before the `n`th retry: short at first, then every 50 ms, so that a quick
/// condition is seen at once and a slow one is not asked for thousands of times.
fn pause(n: u32) -> Duration {
    Duration::from_millis(match n {
        0..=9 => 5,
        10..=29 => 20,
        _ => 50,
    })
}

/// Waits up to [`PATIENCE`] until `done` holds; the test fails naming `what` otherwise.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    eventually_within(what, PATIENCE, async || done()).await;
}

/// [`eventually`] for a condition that has to be awaited (a call to a service).
pub async fn eventually_async(what: &str, done: impl AsyncFnMut() -> bool) {
    eventually_within(what, PATIENCE, done).await;
}

/// [`eventually_async`] with a limit of the caller's.
pub async fn eventually_within(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    let mut tries = 0;
    while !done().await {
        assert!(
            start.elapsed() < within,
            "timed out after {within:?} ({tries} tries) waiting for {what}"
        );
        tokio::time::sleep(pause(tries)).await;
        tries += 1;
    }
}

/// Reads `probe` every `every` until `done` holds of what it read or `limit` has passed,
/// and returns the last reading: the caller asserts on it, so a wait that ran out fails
/// showing what was seen rather than only that it timed out. `every` is the caller's, as a
/// probe may be costly (a command run to its end).
pub async fn poll<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl AsyncFnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let start = Instant::now();
    loop {
        let value = probe().await;
        if done(&value) || start.elapsed() >= limit {
            return value;
        }
        tokio::time::sleep(every).await;
    }
}

/// [`poll`] for a probe that blocks.
pub fn poll_blocking<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let start = Instant::now();
    loop {
        let value = probe();
        if done(&value) || start.elapsed() >= limit {
            return value;
        }
        std::thread::sleep(every);
    }
}

/// Reports that the test (or a part of it) `what` did not run here, and why. The caller
/// then returns: the test passes, and `cargo xtask test` lists it as skipped.
pub fn skipped(what: &str, why: &str) {
    let line = skip_line(what, why);
    eprintln!("skipped: {line}");
    if let Some(path) = std::env::var_os(SKIPPED_LOG_VAR) {
        record_skip(std::path::Path::new(&path), &line);
    }
}

/// One line a test, whatever the reason quotes (a command's stderr runs over lines).
fn skip_line(what: &str, why: &str) -> String {
    format!(
        "{what}: {}",
        why.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

fn record_skip(log: &std::path::Path, line: &str) {
    // One write of a whole line with O_APPEND: tests in parallel processes do not
    // interleave their lines.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        panic!(
            "skipped `{line}`, and that could not be recorded in {}: {e}",
            log.display()
        );
    }
}

/// A self-signed server identity for `localhost` and 127.0.0.1, and its certificate (PEM),
/// which a client trusts as its CA.
pub fn self_signed_localhost() -> (String, banco_auth::ServerTls) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("rcgen makes a certificate for two plain names");
    let cert = made.cert.pem();
    let tls = banco_auth::ServerTls::from_pem(
        cert.as_bytes(),
        made.signing_key.serialize_pem().as_bytes(),
    )
    .expect("banco-auth takes the PEM rcgen writes");
    (cert, tls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn eventually_returns_once_the_condition_holds() {
        let asked = AtomicU32::new(0);
        eventually("the third question", || {
            asked.fetch_add(1, Ordering::SeqCst) >= 2
        })
        .await;
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    #[should_panic(expected = "waiting for a condition that never holds")]
    async fn eventually_fails_naming_what_it_waited_for() {
        eventually_within(
            "a condition that never holds",
            Duration::from_millis(30),
            async || false,
        )
        .await;
    }

    #[tokio::test]
    async fn poll_returns_the_last_reading_when_time_runs_out() {
        let mut n = 0;
        let last = poll(
            Duration::from_millis(30),
            Duration::from_millis(5),
            async || {
                n += 1;
                n
            },
            |_| false,
        )
        .await;
        assert!(last > 1, "asked again until the limit: {last}");
    }

    #[test]
    fn skipped_tests_are_appended_to_the_log() {
        let dir = std::env::temp_dir().join(format!("banco-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let log = dir.join("skipped.txt");
        record_skip(&log, &skip_line("one", "no camera"));
        record_skip(&log, &skip_line("two", "psql: error:\nno PostgreSQL  here"));
        let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "one: no camera\ntwo: psql: error: no PostgreSQL here\n"
        );
    }
}
