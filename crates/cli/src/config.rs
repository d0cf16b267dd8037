//! The services' `--config` and `--print-config` on the command line: which file, reading
//! it, and the errors with its name. What the file means is `banco-config`'s.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use clap::{ArgMatches, Command};

/// The subcommands that take `--config` and `--print-config`.
pub(crate) const SERVICES: [&str; 6] = [
    "validator",
    "broadcaster",
    "edge",
    "archive",
    "stream",
    "wallet",
];

/// `args` parsed by `cli`, with the environment and the `--config` file of a service
/// subcommand applied. Clap's own errors (and `--help`) exit as clap does.
pub(crate) fn matches(cli: Command, args: Vec<OsString>) -> anyhow::Result<ArgMatches> {
    let Some(service) = args
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(|a| SERVICES.into_iter().find(|s| *s == a))
    else {
        return Ok(cli.get_matches_from(args));
    };
    let cli = cli.mut_subcommand(service, banco_config::with_env);
    let Some(path) = config_path(&args, service) else {
        return Ok(cli.get_matches_from(args));
    };
    let sub = cli
        .find_subcommand(service)
        .ok_or_else(|| anyhow!("no subcommand {service}"))?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("--config {}: could not read it", path.display()))?;
    let settings =
        banco_config::read(&text, sub).map_err(|e| anyhow!("--config {}: {e}", path.display()))?;
    let mut cli = cli.mut_subcommand(service, |sub| banco_config::with_settings(sub, &settings));
    let matches = cli
        .try_get_matches_from_mut(args)
        .unwrap_or_else(|e| e.exit());
    if let (Some(sub), Some(sub_matches)) = (
        cli.find_subcommand(service),
        matches.subcommand_matches(service),
    ) {
        banco_config::check_conflicts(sub, &settings, sub_matches)
            .map_err(|e| anyhow!("--config {}: {e}", path.display()))?;
    }
    Ok(matches)
}

/// `--config FILE` (or `--config=FILE`) from the command line, else its variable.
fn config_path(args: &[OsString], service: &str) -> Option<PathBuf> {
    let mut iter = args.iter().skip(2);
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            break;
        }
        if text == "--config" {
            return iter.next().map(PathBuf::from);
        }
        if let Some(path) = text.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    let name = format!("BANCO_{}_CONFIG", service.to_ascii_uppercase());
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// With `--print-config` on a service subcommand: its effective settings as TOML.
pub(crate) fn printed(cli: &Command, matches: &ArgMatches) -> anyhow::Result<Option<String>> {
    let Some((name, sub_matches)) = matches.subcommand() else {
        return Ok(None);
    };
    if !SERVICES.contains(&name) || !sub_matches.get_flag("print_config") {
        return Ok(None);
    }
    let Some(sub) = cli.find_subcommand(name) else {
        return Ok(None);
    };
    Ok(Some(banco_config::print(sub, sub_matches)?))
}
