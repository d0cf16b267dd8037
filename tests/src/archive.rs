//! The archive as an auditor reaches it: `banco audit …` and `banco rules judge` run as
//! processes, the SQLite file edited with the `sqlite3` tool, and a PostgreSQL schema of
//! its own per test (made with `psql`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::banco;
use crate::procs::Keys;

/// Where an archive keeps its rounds.
#[derive(Debug)]
pub enum ArchiveDb {
    /// An SQLite file (`sqlite://PATH`).
    Sqlite(PathBuf),
    /// A schema of its own in `DATABASE_URL`'s database, dropped when this is dropped.
    Postgres { base: String, schema: String },
}

impl ArchiveDb {
    pub fn sqlite(path: &Path) -> ArchiveDb {
        ArchiveDb::Sqlite(path.to_owned())
    }

    /// A fresh schema `name` in `DATABASE_URL`'s database, or why there is none (not set,
    /// or no `psql` to create the schema with). `banco archive` creates its tables in the
    /// first schema of the search path, which must exist.
    pub fn postgres(name: &str) -> Result<ArchiveDb, String> {
        let base = std::env::var("DATABASE_URL").map_err(|_| "DATABASE_URL not set".to_owned())?;
        let schema = format!("e2e_{name}_{}", std::process::id());
        let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};");
        psql(&base, &sql)?;
        Ok(ArchiveDb::Postgres { base, schema })
    }

    /// The `--db` URL.
    pub fn url(&self) -> String {
        match self {
            ArchiveDb::Sqlite(path) => format!("sqlite://{}", path.display()),
            ArchiveDb::Postgres { base, schema } => {
                let sep = if base.contains('?') { '&' } else { '?' };
                format!("{base}{sep}options=-c%20search_path%3D{schema}")
            }
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            ArchiveDb::Sqlite(_) => "sqlite",
            ArchiveDb::Postgres { .. } => "postgres",
        }
    }
}

impl Drop for ArchiveDb {
    fn drop(&mut self) {
        if let ArchiveDb::Postgres { base, schema } = self {
            let _ = psql(base, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

/// `psql <url> -v ON_ERROR_STOP=1 -c <sql>`.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    let out = Command::new("psql")
        .args([url, "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .map_err(|e| format!("psql could not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "psql -c {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs `sql` on the SQLite file with the `sqlite3` tool (with the archive stopped);
/// its stdout.
pub fn sqlite3(db: &Path, sql: &str) -> String {
    // Waits up to 10 s for a lock: a just-stopped archive's file may still be closing.
    let out = Command::new("sqlite3")
        .args(["-cmd", ".timeout 10000"])
        .arg(db)
        .arg(sql)
        .output()
        .unwrap_or_else(|e| panic!("sqlite3: {e}"));
    assert!(
        out.status.success(),
        "sqlite3 {} {sql:?}: {}",
        db.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `banco audit --server <url> --token-file <file> …` with an auditor token.
#[derive(Clone, Debug)]
pub struct Auditor {
    pub server: String,
    pub token_file: PathBuf,
}

impl Auditor {
    /// An auditor token (`banco token issue --role auditor`) written to `dir/auditor.token`.
    pub fn new(keys: &Keys, server: &str, dir: &Path) -> Auditor {
        let token_file = dir.join("auditor.token");
        std::fs::write(&token_file, keys.issue("auditor", "regulator", "1h"))
            .unwrap_or_else(|e| panic!("{}: {e}", token_file.display()));
        Auditor {
            server: server.to_owned(),
            token_file,
        }
    }

    /// Runs `banco audit … <args>`; whatever it exits with.
    pub fn run(&self, args: &[&str]) -> Output {
        banco()
            .arg("audit")
            .arg("--server")
            .arg(&self.server)
            .arg("--token-file")
            .arg(&self.token_file)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("banco audit {args:?}: {e}"))
    }

    /// Runs `banco audit … <args>`; it must succeed. Its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "banco audit {args:?}: {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls `banco audit verify` until it says `ok: <records> records checked` (the outbox
    /// delivers behind the table) or `deadline` passes; the last output and how long it
    /// took. A verify that fails, or more records than expected, ends the wait at once.
    pub fn wait_verified(&self, records: u64, deadline: Duration) -> (Verified, Duration) {
        let start = Instant::now();
        let verified = crate::poll_blocking(
            deadline,
            Duration::from_millis(200),
            || self.verify(&[]),
            |verified| match verified {
                Verified::Ok { records: n, .. } => *n >= records,
                _ => true,
            },
        );
        (verified, start.elapsed())
    }

    /// `banco audit verify [args]`, parsed.
    pub fn verify(&self, args: &[&str]) -> Verified {
        let mut all = vec!["verify"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = out.status.code();
        if code == Some(0)
            && let Some(rest) = stdout.trim().strip_prefix("ok: ")
            && let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok())
        {
            return Verified::Ok { records: n, stdout };
        }
        if code == Some(1) && stdout.starts_with("BROKEN") {
            return Verified::Broken { stdout };
        }
        Verified::Failed {
            code,
            stdout,
            stderr,
        }
    }
}

/// What `banco audit verify` said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verified {
    /// Exit 0: `ok: N records checked; head …`.
    Ok { records: u64, stdout: String },
    /// Exit 1: `BROKEN at <round>: <problem>` and the details, or `BROKEN: <problem>` for
    /// a table derived from every record (Stats').
    Broken { stdout: String },
    /// Anything else (the archive unreachable, a usage error…).
    Failed {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

/// `banco rules judge` with `input` on stdin: its exit code and stdout lines.
pub fn judge(input: &[u8]) -> (Option<i32>, Vec<String>) {
    let mut child = banco()
        .args(["rules", "judge"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("banco rules judge: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let input = input.to_vec();
    // Written from another thread, so a full stdout pipe cannot stall the feed.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("banco rules judge: {e}"));
    let _ = feeder.join();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    (out.status.code(), lines)
}
