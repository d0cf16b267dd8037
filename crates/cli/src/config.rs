//! Settings of the services (`validator`, `broadcaster`, `archive`, `stream`) from four
//! places, each overriding the one before: the flags' defaults < a TOML file (`--config`)
//! < `BANCO_<SERVICE>_<KEY>` environment variables < flags. `--print-config` prints the
//! result as TOML that `--config` reads back.
//!
//! A key is a flag's long name with `_` for `-` (`--public-key` is `public_key`, and
//! `BANCO_BROADCASTER_PUBLIC_KEY`). The file's values become the flags' defaults, so clap
//! itself applies the order above and reports where each value came from.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Command};

/// The subcommands that take `--config` and `--print-config`.
pub(crate) const SERVICES: [&str; 4] = ["validator", "broadcaster", "archive", "stream"];

/// Flags that are not settings.
const NOT_SETTINGS: [&str; 4] = ["help", "version", "config", "print_config"];

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
    let mut cli = cli.mut_subcommand(service, |sub| with_env(sub, service));
    let Some(path) = config_path(&args, service) else {
        return Ok(cli.get_matches_from(args));
    };
    let sub = cli
        .find_subcommand(service)
        .ok_or_else(|| anyhow!("no subcommand {service}"))?;
    let settings = read_file(&path, sub)?;
    let installed = settings.clone();
    cli = cli.mut_subcommand(service, |mut sub| {
        for setting in installed {
            sub = sub.mut_arg(setting.id, |arg| {
                arg.default_values(setting.values).required(false)
            });
        }
        sub
    });
    match cli.try_get_matches_from(args) {
        Ok(matches) => Ok(matches),
        Err(err) => {
            // Clap checks the file's values as defaults: name the file and key when one
            // of them is the bad value.
            if matches!(
                err.kind(),
                ErrorKind::InvalidValue | ErrorKind::ValueValidation
            ) {
                let text = err.to_string();
                for setting in &settings {
                    let flag = format!("--{}", setting.key.replace('_', "-"));
                    if setting
                        .values
                        .iter()
                        .any(|v| text.contains(&format!("'{v}' for '{flag}")))
                    {
                        bail!(
                            "--config {}: `{}`: {}",
                            path.display(),
                            setting.key,
                            first_line(&text)
                        );
                    }
                }
            }
            err.exit()
        }
    }
}

/// One key of the file.
#[derive(Debug, Clone)]
struct Setting {
    key: String,
    /// The clap id of its flag.
    id: String,
    values: Vec<String>,
}

/// The TOML key of a flag.
fn key_of(arg: &Arg) -> Option<String> {
    let long = arg.get_long()?;
    let id = arg.get_id().as_str();
    (!NOT_SETTINGS.contains(&id)).then(|| long.replace('-', "_"))
}

/// `BANCO_<SERVICE>_<KEY>` on every setting that has no variable of its own.
fn with_env(sub: Command, service: &str) -> Command {
    let service = service.to_ascii_uppercase();
    sub.mut_args(|arg| {
        let Some(long) = arg.get_long() else {
            return arg;
        };
        if arg.get_env().is_some() || ["help", "version", "print-config"].contains(&long) {
            return arg;
        }
        let name = format!(
            "BANCO_{service}_{}",
            long.replace('-', "_").to_ascii_uppercase()
        );
        arg.env(name)
    })
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

/// The file's settings. An unknown key, or a value of the wrong shape, is an error naming
/// the file and the key (values are checked by the flags' own parsers afterwards).
fn read_file(path: &Path, sub: &Command) -> anyhow::Result<Vec<Setting>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--config {}: could not read it", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| anyhow!("--config {}: not valid TOML: {e}", path.display()))?;
    let by_key: BTreeMap<String, &Arg> = sub
        .get_arguments()
        .filter_map(|arg| key_of(arg).map(|key| (key, arg)))
        .collect();
    let mut settings = Vec::new();
    for (key, value) in table {
        let bad = |why: String| anyhow!("--config {}: `{key}`: {why}", path.display());
        let Some(arg) = by_key.get(&key) else {
            bail!(
                "--config {}: unknown key `{key}` (`banco {} --print-config` shows every key)",
                path.display(),
                sub.get_name()
            );
        };
        let values = match value {
            toml::Value::Array(items) if takes_many(arg) => items
                .into_iter()
                .map(scalar)
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?,
            toml::Value::Array(_) => return Err(bad("takes one value, not a list".to_owned())),
            other => vec![scalar(other).map_err(bad)?],
        };
        settings.push(Setting {
            id: arg.get_id().to_string(),
            key,
            values,
        });
    }
    Ok(settings)
}

fn takes_many(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
}

fn scalar(value: toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(s),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!("{} is not a setting's value", other.type_str())),
    }
}

fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// With `--print-config` on a service subcommand: its effective settings as TOML.
/// Secrets stay out: settings are paths to them, never their contents.
pub(crate) fn printed(cli: &Command, matches: &ArgMatches) -> Option<String> {
    let (name, sub_matches) = matches.subcommand()?;
    if !SERVICES.contains(&name) || !sub_matches.get_flag("print_config") {
        return None;
    }
    let sub = cli.find_subcommand(name)?;
    let mut table = toml::Table::new();
    for arg in sub.get_arguments() {
        let Some(key) = key_of(arg) else { continue };
        // Defaults too: the effective configuration, whatever set it.
        let Some(raw) = sub_matches.get_raw(arg.get_id().as_str()) else {
            continue;
        };
        let values: Vec<toml::Value> = raw.map(|v| typed(&v.to_string_lossy())).collect();
        let value = if takes_many(arg) {
            toml::Value::Array(values)
        } else {
            match values.into_iter().next() {
                Some(value) => value,
                None => continue,
            }
        };
        table.insert(key, value);
    }
    Some(toml::to_string(&table).unwrap_or_default())
}

/// Numbers and booleans unquoted; anything else a string. Read back, each gives the same
/// text, so the round trip is exact.
fn typed(text: &str) -> toml::Value {
    if let Ok(b) = text.parse::<bool>() {
        return toml::Value::Boolean(b);
    }
    match text.parse::<i64>() {
        Ok(i) if i.to_string() == text => toml::Value::Integer(i),
        _ => toml::Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn typed_values_read_back_as_the_same_text() {
        for text in [
            "8",
            "-3",
            "true",
            "false",
            "007",
            "127.0.0.1:7101",
            "T01=5-300",
            "",
        ] {
            assert_eq!(scalar(typed(text)).unwrap(), text);
        }
    }
}
