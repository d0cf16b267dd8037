//! What the production binary must not carry: `banco` (the banco-cli package) is built
//! without the benchmarks and their NATS server, and without the croupier's console
//! (issue 21, "Crates by audience": they have crates and binaries of their own).

use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// Crates that `cargo tree -p banco-cli -e normal` must not list.
const NOT_IN_BANCO: [&str; 3] = ["banco-bench", "banco-natsd", "croupier-console"];

/// Runs `cargo tree` on banco-cli's normal dependencies; fails naming any of
/// [`NOT_IN_BANCO`] it finds.
pub(crate) fn check(root: &Path, target_dir: &Path) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let args = [
        "tree",
        "-p",
        "banco-cli",
        "-e",
        "normal",
        "--prefix",
        "none",
    ];
    eprintln!("xtask: cargo {}", args.join(" "));
    let out = super::cargo_command(cargo)
        .args(args)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target_dir)
        .output()
        .context("could not start cargo")?;
    if !out.status.success() {
        bail!(
            "`cargo {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let found = forbidden(&String::from_utf8_lossy(&out.stdout));
    if !found.is_empty() {
        bail!(
            "banco-cli depends on {}: the `banco` binary must not carry it",
            found.join(", ")
        );
    }
    Ok(())
}

/// The crates of [`NOT_IN_BANCO`] that a `cargo tree --prefix none` listing names.
fn forbidden(tree: &str) -> Vec<&'static str> {
    NOT_IN_BANCO
        .into_iter()
        .filter(|name| {
            tree.lines()
                .any(|line| line.split_whitespace().next() == Some(name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_searched_by_whole_crate_names() {
        let tree = "banco-cli v0.1.0 (/w/crates/cli)\nbanco-scanner v0.1.0 (/w/crates/scanner)\n\
                    async-nats v0.50.0\ncroupier-console v0.1.0 (/w/croupier-console) (*)\n";
        assert_eq!(forbidden(tree), vec!["croupier-console"]);
        assert!(forbidden("banco-cli v0.1.0\nbanco-natsd-extra v1.0.0\n").is_empty());
    }
}
