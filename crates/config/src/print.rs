//! `--print-config`: the effective settings as TOML.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

use crate::conflicts::{conflict_pairs, set};
use crate::{PrintError, Shape, key_of, shape};

/// The effective settings of `matches` (parsed by `service`), defaults included, as TOML
/// that [`crate::read`] reads back to the same settings. Secrets stay out: settings are
/// paths to them, never their contents. A flag with no value (no default, not given) is
/// left out, and so is a default that conflicts with a flag given (`--seven-tiers`
/// hosts no `--table`, so the default `T01` is not shown: read back beside
/// `seven_tiers = true`, it would be refused).
pub fn print(service: &Command, matches: &ArgMatches) -> Result<String, PrintError> {
    let mut table = toml::Table::new();
    let pairs = conflict_pairs(service);
    for arg in service.get_arguments() {
        let Some(key) = key_of(arg) else { continue };
        if matches.value_source(arg.get_id().as_str()) == Some(ValueSource::DefaultValue)
            && pairs
                .iter()
                .any(|(a, other)| a.get_id() == arg.get_id() && given(other, matches))
        {
            continue;
        }
        let Some(raw) = matches.get_raw(arg.get_id().as_str()) else {
            continue;
        };
        let values: Vec<toml::Value> = raw.map(|v| typed(&v.to_string_lossy())).collect();
        let value = if shape(arg) == Some(Shape::Many) {
            if values.is_empty() {
                continue;
            }
            toml::Value::Array(values)
        } else {
            match values.into_iter().next() {
                Some(value) => value,
                None => continue,
            }
        };
        table.insert(key, value);
    }
    Ok(toml::to_string(&table)?)
}

/// Whether `arg` was given: on the command line or by its variable, or, for a switch,
/// turned on (its own default is off, so a file turned it on). A value that is a default
/// may be clap's own or the file's: it does not push a conflicting default out.
fn given(arg: &clap::Arg, matches: &ArgMatches) -> bool {
    set(arg, matches)
        && (shape(arg) == Some(Shape::Switch)
            || matches!(
                matches.value_source(arg.get_id().as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            ))
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
    use crate::read::scalar;

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

    #[test]
    fn a_default_that_conflicts_with_a_flag_given_is_left_out_and_reads_back() {
        use clap::{Arg, ArgAction};
        let service = Command::new("svc")
            .arg(Arg::new("decks").long("decks").default_value("8"))
            .arg(
                Arg::new("six")
                    .long("six")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("decks"),
            );
        let printed = |args: &[&str], file: &str| {
            let settings = crate::read(file, &service).unwrap();
            let command = crate::with_settings(service.clone(), &settings);
            let argv = std::iter::once("svc").chain(args.iter().copied());
            let matches = command.clone().try_get_matches_from(argv).unwrap();
            crate::check_conflicts(&command, &settings, &matches).unwrap();
            print(&command, &matches).unwrap()
        };
        assert_eq!(printed(&[], ""), "decks = 8\nsix = false\n");
        let with_six = printed(&["--six"], "");
        assert_eq!(with_six, "six = true\n");
        // Read back as a file, it prints the same, and is not refused.
        assert_eq!(printed(&[], &with_six), with_six);
        // A value given shows; the switch it conflicts with is left at its default, off.
        assert_eq!(printed(&["--decks", "6"], ""), "decks = 6\n");
    }
}
