//! Flags that clap refuses together, when a config file gives one of them. clap checks
//! conflicts between what the command line and the environment give, but the file's
//! values are the flags' defaults, which it never checks: `no_clips = true` beside
//! `clips_dir = …` (or beside `--clips-dir`) would start with one of them ignored.

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command};

use crate::{ConfigError, Setting, Shape, shape};

/// Refuses a key of the file (read by [`crate::read`]) that is in effect in `matches`
/// (parsed by `service` with those settings) while a flag it conflicts with is too: another
/// key of the file, a flag on the command line or its environment variable.
pub fn check_conflicts(
    service: &Command,
    settings: &[Setting],
    matches: &ArgMatches,
) -> Result<(), ConfigError> {
    // A file's value is in effect when nothing overrode it: it is the flag's default.
    let from_file = |id: &str| {
        (matches.value_source(id) == Some(ValueSource::DefaultValue))
            .then(|| settings.iter().find(|s| s.id == id))
            .flatten()
    };
    let pairs = conflict_pairs(service);
    for setting in settings {
        let Some(&(arg, _)) = pairs
            .iter()
            .find(|(a, _)| a.get_id() == setting.id.as_str())
        else {
            // A flag that conflicts with nothing.
            continue;
        };
        if from_file(&setting.id).is_none() || !set(arg, matches) {
            continue;
        }
        for &(_, other) in pairs.iter().filter(|(a, _)| a.get_id() == arg.get_id()) {
            if !set(other, matches) {
                continue;
            }
            let id = other.get_id().as_str();
            let with = match matches.value_source(id) {
                Some(ValueSource::CommandLine) => match other.get_long() {
                    Some(long) => format!("--{long} on the command line"),
                    None => format!("{id} on the command line"),
                },
                Some(ValueSource::EnvVariable) => match other.get_env() {
                    Some(name) => name.to_string_lossy().into_owned(),
                    None => format!("{id} from the environment"),
                },
                _ => match from_file(id) {
                    Some(theirs) => format!("`{}` in the same file", theirs.key),
                    // A default of clap's own: clap does not hold that against a flag.
                    None => continue,
                },
            };
            return Err(ConfigError::Conflict {
                key: setting.key.clone(),
                with,
            });
        }
    }
    Ok(())
}

/// Every pair of flags of `service` that conflict, each both ways round (clap keeps a
/// conflict on the flag that declares it), once.
pub(crate) fn conflict_pairs(service: &Command) -> Vec<(&Arg, &Arg)> {
    let mut pairs: Vec<(&Arg, &Arg)> = Vec::new();
    for arg in service.get_arguments() {
        for other in service.get_arg_conflicts_with(arg) {
            for pair in [(arg, other), (other, arg)] {
                let known = pairs
                    .iter()
                    .any(|(a, b)| a.get_id() == pair.0.get_id() && b.get_id() == pair.1.get_id());
                if !known {
                    pairs.push(pair);
                }
            }
        }
    }
    pairs
}

/// Whether `arg` has a value in `matches`, a switch only when it is on.
pub(crate) fn set(arg: &Arg, matches: &ArgMatches) -> bool {
    let Ok(Some(mut raw)) = matches.try_get_raw(arg.get_id().as_str()) else {
        return false;
    };
    if shape(arg) == Some(Shape::Switch) {
        return raw.next().is_some_and(|v| v == "true");
    }
    raw.next().is_some()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::ffi::OsString;

    use super::*;
    use crate::{read, with_env, with_settings};

    fn service() -> Command {
        Command::new("svc")
            .arg(Arg::new("clips_dir").long("clips-dir"))
            .arg(
                Arg::new("no_clips")
                    .long("no-clips")
                    .action(clap::ArgAction::SetTrue)
                    .conflicts_with("clips_dir"),
            )
            .arg(Arg::new("decks").long("decks").default_value("8"))
            .arg(
                Arg::new("six")
                    .long("six")
                    .action(clap::ArgAction::SetTrue)
                    .conflicts_with("decks"),
            )
    }

    /// What `file`, then `args`, make of the conflicts.
    fn conflicts(file: &str, args: &[&str]) -> Result<(), String> {
        let settings = read(file, &service()).unwrap();
        let command = with_settings(with_env(service()), &settings);
        let argv: Vec<OsString> = std::iter::once("svc")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        let matches = command.clone().try_get_matches_from(argv).unwrap();
        check_conflicts(&command, &settings, &matches).map_err(|e| e.to_string())
    }

    #[test]
    fn two_keys_of_the_file_that_conflict_are_refused_by_name() {
        let refused = conflicts("no_clips = true\nclips_dir = \"/x\"\n", &[]).unwrap_err();
        assert!(
            refused.contains("`clips_dir`") && refused.contains("`no_clips`"),
            "{refused}"
        );
        assert!(refused.contains("in the same file"), "{refused}");
    }

    #[test]
    fn a_key_that_conflicts_with_a_flag_is_refused_naming_the_flag() {
        let refused = conflicts("no_clips = true\n", &["--clips-dir", "/y"]).unwrap_err();
        assert!(refused.starts_with("`no_clips`"), "{refused}");
        assert!(
            refused.contains("--clips-dir on the command line"),
            "{refused}"
        );
        let refused = conflicts("clips_dir = \"/x\"\n", &["--no-clips"]).unwrap_err();
        assert!(
            refused.contains("--no-clips on the command line"),
            "{refused}"
        );
    }

    #[test]
    fn what_does_not_conflict_is_accepted() {
        // A switch that is off conflicts with nothing.
        conflicts("no_clips = false\nclips_dir = \"/x\"\n", &[]).unwrap();
        // A default of clap's own is not held against a key (`six` beside `decks = 8`).
        conflicts("six = true\n", &[]).unwrap();
        // The flag overrides the same key.
        conflicts("clips_dir = \"/x\"\n", &["--clips-dir", "/y"]).unwrap();
        conflicts("", &["--no-clips"]).unwrap();
    }
}
