//! `--print-config`: the effective settings as TOML.

use clap::{ArgMatches, Command};

use crate::{PrintError, Shape, key_of, shape};

/// The effective settings of `matches` (parsed by `service`), defaults included, as TOML
/// that [`crate::read`] reads back to the same settings. Secrets stay out: settings are
/// paths to them, never their contents. A flag with no value (no default, not given) is
/// left out.
pub fn print(service: &Command, matches: &ArgMatches) -> Result<String, PrintError> {
    let mut table = toml::Table::new();
    for arg in service.get_arguments() {
        let Some(key) = key_of(arg) else { continue };
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
}
