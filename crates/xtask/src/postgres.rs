//! The PostgreSQL the archive's tests run against a second time (the first is SQLite).
//!
//! `DATABASE_URL` set: used as it is. Otherwise, as root on Debian (CI): the packaged
//! cluster is started on loopback and a `banco` role and `banco_test` database are made
//! once. Anyone else gets the SQLite run only, and is told how to add PostgreSQL.

use std::env;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Debian 12's PostgreSQL.
const CLUSTER: [&str; 2] = ["15", "main"];
const URL: &str = "postgres://banco:banco@127.0.0.1:5432/banco_test";

/// The URL the tests should use, if there is a PostgreSQL to test against.
pub(crate) fn database_url() -> Result<Option<String>> {
    if let Some(url) = env::var_os("DATABASE_URL") {
        return Ok(Some(url.to_string_lossy().into_owned()));
    }
    if !crate::packages::is_root()?
        || Command::new("pg_ctlcluster")
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
    {
        eprintln!(
            "xtask: the archive's PostgreSQL tests are skipped: set DATABASE_URL=postgres://… (CI, as root, starts the Debian cluster itself)"
        );
        return Ok(None);
    }
    start_cluster()?;
    if psql("SELECT 1 FROM pg_roles WHERE rolname = 'banco'")?.trim() != "1" {
        psql("CREATE ROLE banco LOGIN CREATEDB PASSWORD 'banco'")?;
    }
    if psql("SELECT 1 FROM pg_database WHERE datname = 'banco_test'")?.trim() != "1" {
        psql("CREATE DATABASE banco_test OWNER banco")?;
    }
    eprintln!(
        "xtask: PostgreSQL {} ready for the archive's tests",
        CLUSTER[0]
    );
    Ok(Some(URL.to_owned()))
}

fn start_cluster() -> Result<()> {
    let status = Command::new("pg_lsclusters")
        .args(["--no-header", CLUSTER[0], CLUSTER[1]])
        .output()
        .context("could not run pg_lsclusters")?;
    if String::from_utf8_lossy(&status.stdout).contains("online") {
        return Ok(());
    }
    eprintln!("xtask: starting PostgreSQL {} {}", CLUSTER[0], CLUSTER[1]);
    let started = Command::new("pg_ctlcluster")
        .args([CLUSTER[0], CLUSTER[1], "start"])
        .status()
        .context("could not run pg_ctlcluster")?;
    if !started.success() {
        bail!(
            "`pg_ctlcluster {} {} start` failed ({started})",
            CLUSTER[0],
            CLUSTER[1]
        );
    }
    Ok(())
}

/// Runs one statement as the `postgres` superuser; its unaligned output.
fn psql(sql: &str) -> Result<String> {
    let output = Command::new("su")
        .args(["postgres", "-c"])
        .arg(format!("psql -v ON_ERROR_STOP=1 -tAc \"{sql}\""))
        .stdin(Stdio::null())
        .output()
        .context("could not run psql as postgres")?;
    if !output.status.success() {
        bail!(
            "psql `{sql}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
