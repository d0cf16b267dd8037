//! The Debian 12 packages banco builds and tests against, and their installation.

use std::env;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// GStreamer 1.22 with its development headers and the plugins the video pipeline and its
/// tests use (x264 is in -ugly, the H.264 parser in -bad, the MP4 muxer in -good); the
/// servers the tests and benchmarks start on loopback (PostgreSQL 15 for the archive,
/// NATS for the fan-out comparison); the `sqlite3` tool the archive's tampering test
/// edits a row with, as a person would; and `tmux`, in which the croupier console's
/// end-to-end test runs the console and reads its screen; Chromium and its WebDriver, in
/// which the player page's end-to-end tests run.
const PACKAGES: &[&str] = &[
    "postgresql",
    "nats-server",
    "sqlite3",
    "tmux",
    "chromium",
    "chromium-driver",
    "libgstreamer1.0-dev",
    "libgstreamer-plugins-base1.0-dev",
    "gstreamer1.0-plugins-base",
    "gstreamer1.0-plugins-good",
    "gstreamer1.0-plugins-bad",
    "gstreamer1.0-plugins-ugly",
    "gstreamer1.0-libav",
    "gstreamer1.0-tools",
    "gstreamer1.0-x",
];

/// Set to skip the check on a machine that is not Debian and has the libraries its own way.
const SKIP_VAR: &str = "BANCO_SKIP_SETUP";

pub(crate) fn setup() -> Result<()> {
    if env::var_os(SKIP_VAR).is_some() {
        eprintln!("xtask: setup skipped ({SKIP_VAR} is set)");
        return Ok(());
    }
    let missing = missing_packages()?;
    if missing.is_empty() {
        return Ok(());
    }
    let install = format!(
        "apt-get update && apt-get install -y --no-install-recommends {}",
        missing.join(" ")
    );
    if !is_root()? {
        bail!(
            "missing Debian packages: {}\nrun as root:\n  {install}\n(or set {SKIP_VAR}=1 if you provide them another way)",
            missing.join(" ")
        );
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    apt(&["update"])?;
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(missing.iter().map(String::as_str));
    apt(&args)?;
    let still = missing_packages()?;
    if !still.is_empty() {
        bail!(
            "apt-get finished but these are still not installed: {}",
            still.join(" ")
        );
    }
    Ok(())
}

fn missing_packages() -> Result<Vec<String>> {
    let output = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Status}\n"])
        .args(PACKAGES)
        .stderr(Stdio::null())
        .output()
        .context(
            "dpkg-query not found: this is not a Debian system; install GStreamer 1.22 \
             development files yourself and set BANCO_SKIP_SETUP=1",
        )?;
    // dpkg-query exits non-zero when a package is unknown; its stdout still lists the known.
    let listed = String::from_utf8_lossy(&output.stdout);
    let installed: Vec<&str> = listed
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(_, status)| *status == "installed")
        .map(|(name, _)| name)
        .collect();
    Ok(PACKAGES
        .iter()
        .filter(|p| {
            !installed
                .iter()
                .any(|i| i == *p || i.starts_with(&format!("{p}:")))
        })
        .map(|p| (*p).to_owned())
        .collect())
}

pub(crate) fn is_root() -> Result<bool> {
    let output = Command::new("id")
        .arg("-u")
        .output()
        .context("could not run `id -u`")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn apt(args: &[&str]) -> Result<()> {
    eprintln!("xtask: apt-get {}", args.join(" "));
    let status = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .status()
        .context("could not start apt-get")?;
    if !status.success() {
        bail!("`apt-get {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
