//! A config file's text, read against the flags of one service.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::{Arg, Command};

use crate::{ConfigError, Shape, key_of, shape};

/// One key of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// As written in the file: the flag's long name with `_` for `-`.
    pub key: String,
    /// The clap id of its flag.
    pub id: String,
    /// Its values as the flag's own text: one, or a list for a repeatable flag.
    pub values: Vec<String>,
}

/// The settings of `text`, a TOML file for `service` (a service subcommand). Refused,
/// naming the key: a key that is no flag of `service`, a value of the wrong shape (a
/// table, a list for a flag that takes one value, an empty list, a switch that is neither
/// `true` nor `false`), and a value the flag's own parser refuses. Relations between flags
/// are left to the whole command line, where the environment and flags can still complete
/// them: conflicts to [`crate::check_conflicts`], one flag requiring another to the service.
pub fn read(text: &str, service: &Command) -> Result<Vec<Setting>, ConfigError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::NotToml(e.to_string()))?;
    let by_key: BTreeMap<String, (&Arg, Shape)> = service
        .get_arguments()
        .filter_map(|arg| Some((key_of(arg)?, (arg, shape(arg)?))))
        .collect();
    let mut settings = Vec::with_capacity(table.len());
    for (key, value) in table {
        let Some(&(arg, shape)) = by_key.get(&key) else {
            return Err(ConfigError::UnknownKey {
                key,
                service: service.get_name().to_owned(),
            });
        };
        let values = match values(value, shape) {
            Ok(values) => values,
            Err(why) => return Err(ConfigError::BadValue { key, why }),
        };
        settings.push(Setting {
            id: arg.get_id().to_string(),
            key,
            values,
        });
    }
    check_values(service, &settings)?;
    Ok(settings)
}

/// The text of each value of a key, if its shape suits the flag.
fn values(value: toml::Value, shape: Shape) -> Result<Vec<String>, String> {
    let values = match (value, shape) {
        (toml::Value::Array(items), Shape::Many) if items.is_empty() => {
            // An empty list would silently drop the flag's default (`table = []`: no
            // tables at all), and could not be printed back.
            return Err("an empty list: leave the key out to keep the default".to_owned());
        }
        (toml::Value::Array(items), Shape::Many) => items
            .into_iter()
            .map(scalar)
            .collect::<Result<Vec<_>, _>>()?,
        (toml::Value::Array(_), _) => return Err("takes one value, not a list".to_owned()),
        (other, _) => vec![scalar(other)?],
    };
    if shape == Shape::Switch && !matches!(values[0].as_str(), "true" | "false") {
        return Err(format!(
            "takes true or false, not `{}`",
            values[0].escape_debug()
        ));
    }
    Ok(values)
}

/// A value as the text a flag would be given.
pub(crate) fn scalar(value: toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(s),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!("{} is not a setting's value", other.type_str())),
    }
}

/// Runs every value through its flag's own parser, as clap would once they are the
/// flags' defaults, so that a bad one is refused here, by key, not later by clap without
/// the file's name.
fn check_values(service: &Command, settings: &[Setting]) -> Result<(), ConfigError> {
    let valued: Vec<(&Setting, String)> = settings
        .iter()
        .filter_map(|setting| {
            let arg = service
                .get_arguments()
                .find(|arg| arg.get_id() == setting.id.as_str())?;
            let long = arg.get_long()?;
            (shape(arg) != Some(Shape::Switch)).then(|| (setting, long.to_owned()))
        })
        .collect();
    if valued.is_empty() {
        return Ok(());
    }
    // The environment is not the file's: leave it out. Flags the file does not give may be
    // given on the command line.
    let mut checker = service
        .clone()
        .mut_args(|arg| arg.env(None).required(false));
    let Some(error) = value_error(&mut checker, &valued) else {
        return Ok(());
    };
    // One parse for the whole file; only a refused one is taken apart, key by key.
    for one in &valued {
        if let Some(error) = value_error(&mut checker, std::slice::from_ref(one)) {
            return Err(ConfigError::BadValue {
                key: one.0.key.clone(),
                why: first_line(&error.to_string()),
            });
        }
    }
    Err(ConfigError::BadValue {
        key: valued[0].0.key.clone(),
        why: first_line(&error.to_string()),
    })
}

/// The error parsing `settings` as the only flags given, unless it is about how flags go
/// together.
fn value_error(checker: &mut Command, settings: &[(&Setting, String)]) -> Option<clap::Error> {
    let mut argv = vec![OsString::from(checker.get_name())];
    for (setting, long) in settings {
        // `--flag=value`, so that a value starting with `-` is still a value.
        argv.extend(
            setting
                .values
                .iter()
                .map(|value| OsString::from(format!("--{long}={value}"))),
        );
    }
    match checker.try_get_matches_from_mut(argv) {
        Ok(_) => None,
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::ArgumentConflict | ErrorKind::MissingRequiredArgument
            ) =>
        {
            None
        }
        Err(error) => Some(error),
    }
}

fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}
