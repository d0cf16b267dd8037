//! The text forms of a table's configuration that operators type or keep in files: a
//! table spec (`T01`, `T01=5-300`) and a blocked-words file. Shared by `banco broadcaster`
//! and its fuzz target.

use banco_rules::amount::parse_stake;

use crate::policy::Limits;

/// One table to host: its id, and its limits per position when given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub id: String,
    pub limits: Option<Limits>,
}

/// Why a table spec was refused; the message quotes the spec.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableSpecError {
    #[error("table spec `{0}`: limits are MIN-MAX in major units, e.g. T01=5-300")]
    BadLimits(String),
    #[error("table spec `{spec}`: the minimum {min} is above the maximum {max} (minor units)")]
    MinAboveMax { spec: String, min: i64, max: i64 },
}

/// `T01` or `T01=5-300` (limits in major units, whole or with cents: `2.50-41`). The id's
/// own syntax is checked with the rest of the table's configuration.
pub fn parse_table_spec(spec: &str) -> Result<TableSpec, TableSpecError> {
    let Some((id, limits)) = spec.split_once('=') else {
        return Ok(TableSpec {
            id: spec.to_owned(),
            limits: None,
        });
    };
    let bad = || TableSpecError::BadLimits(spec.to_owned());
    let (min, max) = limits.split_once('-').ok_or_else(bad)?;
    let min = parse_stake("the minimum", min).map_err(|_| bad())?;
    let max = parse_stake("the maximum", max).map_err(|_| bad())?;
    if min > max {
        return Err(TableSpecError::MinAboveMax {
            spec: spec.to_owned(),
            min,
            max,
        });
    }
    Ok(TableSpec {
        id: id.to_owned(),
        limits: Some(Limits { min, max }),
    })
}

/// The blocked words of a `--chat-blocked-words` file's text: one per line, blank lines
/// and `#` comments skipped, each word trimmed.
pub fn parse_blocked_words(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}
