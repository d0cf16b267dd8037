//! The journal's first record: the configuration the table runs under.
//!
//! A journal replays only under the configuration it was written with (limits, paytable,
//! pacing, timings all decide what its commands did). So a new journal starts with the
//! configuration, and every later start compares its own configuration with it and refuses
//! to run on any difference, naming the first differing setting: an operator cannot
//! silently change the limits or the paytable under a live journal.

use banco_records::journal::{ConfigRecord, JOURNAL_FORMAT};
use serde_json::Value;

use crate::policy::TableConfig;

/// Record 1 of every journal: the stored record ([`ConfigRecord`]) around this version's
/// [`TableConfig`].
pub type JournaledConfig = ConfigRecord<TableConfig>;

/// `Err` names the first setting (as a dotted path) where the journal's configuration and
/// `configured` differ, with both values; or says the journal is of a format this version
/// cannot read. The format itself may differ (a journal keeps the one it was started with).
pub(crate) fn check_same(
    journaled: &JournaledConfig,
    configured: &JournaledConfig,
) -> Result<(), String> {
    if journaled.format > JOURNAL_FORMAT {
        return Err(format!(
            "the journal is of format {}, written by a newer banco; this version reads \
             format {JOURNAL_FORMAT} and earlier",
            journaled.format
        ));
    }
    let configured = JournaledConfig {
        format: journaled.format,
        ..configured.clone()
    };
    if *journaled == configured {
        return Ok(());
    }
    let encode = |c: &JournaledConfig| serde_json::to_value(c).map_err(|e| e.to_string());
    let (journaled, now) = (encode(journaled)?, encode(&configured)?);
    Err(first_difference("", &journaled, &now).unwrap_or_else(|| {
        "the configurations differ (in a way their JSON does not show)".to_owned()
    }))
}

/// The first path (keys in order) where `journaled` and `now` differ.
fn first_difference(path: &str, journaled: &Value, now: &Value) -> Option<String> {
    let child = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (journaled, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|key| {
                let missing = Value::Null;
                let (x, y) = (
                    a.get(key).unwrap_or(&missing),
                    b.get(key).unwrap_or(&missing),
                );
                first_difference(&child(key), x, y)
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y)),
        (a, b) if a == b => None,
        (a, b) => Some(format!(
            "{}: the journal has {a}, this start has {b}",
            if path.is_empty() { "config" } else { path }
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use banco_rules::shoe::ShoeConfig;

    use super::*;
    use crate::policy::Pacing;

    fn config() -> JournaledConfig {
        JournaledConfig {
            table: TableConfig::new("T01", Pacing::Live),
            default_shoe: None,
            format: JOURNAL_FORMAT,
        }
    }

    #[test]
    fn a_journal_of_an_older_format_runs_and_of_a_newer_one_is_refused() {
        let old = JournaledConfig {
            format: 0,
            ..config()
        };
        assert_eq!(check_same(&old, &config()), Ok(()));
        assert!(!serde_json::to_string(&old).unwrap().contains("format"));
        let newer = JournaledConfig {
            format: JOURNAL_FORMAT + 1,
            ..config()
        };
        let why = check_same(&newer, &config()).unwrap_err();
        assert!(why.contains("format 2, written by a newer banco"), "{why}");
    }

    #[test]
    fn names_the_first_differing_setting() {
        assert_eq!(check_same(&config(), &config()), Ok(()));
        let mut other = config();
        other.table.policy.limits.max = 20_000;
        other.table.policy.automated_betting_ms = 1;
        let why = check_same(&config(), &other).unwrap_err();
        assert_eq!(
            why,
            "table.policy.automated_betting_ms: the journal has 20000, this start has 1"
        );
        let mut other = config();
        other.table.policy.limits.max = 20_000;
        let why = check_same(&config(), &other).unwrap_err();
        assert_eq!(
            why,
            "table.policy.limits.max: the journal has 10200, this start has 20000"
        );
        let mut other = config();
        other.default_shoe = Some(ShoeConfig::default());
        let why = check_same(&config(), &other).unwrap_err();
        assert!(
            why.starts_with("default_shoe: the journal has null"),
            "{why}"
        );
    }
}
