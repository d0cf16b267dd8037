//! What the production binary must not carry: `banco` (the banco-cli package) is built
//! without the benchmarks and their NATS server, the croupier's console, and the
//! simulators (bots, shoe reader, demo: `banco-sim`) (issue 21, "Crates by audience": they
//! have crates and binaries of their own); built without its default features, it carries
//! neither GStreamer nor the NATS client.
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// Crates that `cargo tree -p banco-cli -e normal` must not list.
const NOT_IN_BANCO: [&str; 4] = [
    "banco-bench",
    "banco-natsd",
    "banco-sim",
    "croupier-console",
];

/// Crates that banco-cli built with `--no-default-features` must not list either: its
/// features `gstreamer` and `jetstream` alone bring them, so that an edge or a node
/// without a camera can be built without GStreamer's libraries or the NATS client.
const ONLY_WITH_FEATURES: [&str; 2] = ["async-nats", "gstreamer"];

/// Runs `cargo tree` on banco-cli's normal dependencies, with its default features and
/// without them; fails naming any crate of [`NOT_IN_BANCO`] (and, without the features,
/// of [`ONLY_WITH_FEATURES`]) it finds.
pub(crate) fn check(root: &Path, target_dir: &Path) -> Result<()> {
    let found = forbidden(&tree(root, target_dir, &[])?, &NOT_IN_BANCO);
    if !found.is_empty() {
        bail!(
            "banco-cli depends on {}: the `banco` binary must not carry it",
            found.join(", ")
        );
    }
    let bare = tree(root, target_dir, &["--no-default-features"])?;
    let found = forbidden(
        &bare,
        &NOT_IN_BANCO
            .into_iter()
            .chain(ONLY_WITH_FEATURES)
            .collect::<Vec<_>>(),
    );
    if !found.is_empty() {
        bail!(
            "banco-cli --no-default-features depends on {}: only its features `gstreamer` \
             and `jetstream` may bring it",
            found.join(", ")
        );
    }
    Ok(())
}

/// `cargo tree -p banco-cli -e normal --prefix none` with `extra` arguments: its listing.
fn tree(root: &Path, target_dir: &Path, extra: &[&str]) -> Result<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec![
        "tree",
        "-p",
        "banco-cli",
        "-e",
        "normal",
        "--prefix",
        "none",
    ];
    args.extend_from_slice(extra);
    eprintln!("xtask: cargo {}", args.join(" "));
    let out = super::cargo_command(cargo)
        .args(&args)
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
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The crates of `names` that a `cargo tree --prefix none` listing names.
fn forbidden<'a>(tree: &str, names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|name| {
            tree.lines()
                .any(|line| line.split_whitespace().next() == Some(*name))
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
        assert_eq!(forbidden(tree, &NOT_IN_BANCO), vec!["croupier-console"]);
        assert_eq!(forbidden(tree, &ONLY_WITH_FEATURES), vec!["async-nats"]);
        assert!(
            forbidden(
                "banco-cli v0.1.0\nbanco-natsd-extra v1.0.0\n",
                &NOT_IN_BANCO
            )
            .is_empty()
        );
    }
}
