//! The journal's first record: the configuration the table runs under.
//!
//! A journal replays only under the configuration it was written with (limits, paytable,
//! pacing, timings all decide what its commands did). So a new journal starts with the
//! configuration, and every later start compares its own configuration with it and refuses
//! to run on any difference, naming the first differing setting: an operator cannot
//! silently change the limits or the paytable under a live journal.

use banco_rules::shoe::ShoeConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::TableConfig;

/// Record 1 of every journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournaledConfig {
    pub table: TableConfig,
    /// The shoe an `OpenShoe` without its own config opens, if the host has a default.
    #[serde(default)]
    pub default_shoe: Option<ShoeConfig>,
}

impl JournaledConfig {
    /// `Err` names the first setting (as a dotted path) where the journal's configuration
    /// and `configured` differ, with both values.
    pub(crate) fn check_same(&self, configured: &JournaledConfig) -> Result<(), String> {
        if self == configured {
            return Ok(());
        }
        let encode = |c: &JournaledConfig| serde_json::to_value(c).map_err(|e| e.to_string());
        let (journaled, now) = (encode(self)?, encode(configured)?);
        Err(first_difference("", &journaled, &now).unwrap_or_else(|| {
            "the configurations differ (in a way their JSON does not show)".to_owned()
        }))
    }
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
    use super::*;
    use crate::policy::Pacing;

    fn config() -> JournaledConfig {
        JournaledConfig {
            table: TableConfig::new("T01", Pacing::Live),
            default_shoe: None,
        }
    }

    #[test]
    fn names_the_first_differing_setting() {
        assert_eq!(config().check_same(&config()), Ok(()));
        let mut other = config();
        other.table.policy.limits.max = 20_000;
        other.table.policy.automated_betting_ms = 1;
        let why = config().check_same(&other).unwrap_err();
        assert_eq!(
            why,
            "table.policy.automated_betting_ms: the journal has 20000, this start has 1"
        );
        let mut other = config();
        other.table.policy.limits.max = 20_000;
        let why = config().check_same(&other).unwrap_err();
        assert_eq!(
            why,
            "table.policy.limits.max: the journal has 10200, this start has 20000"
        );
        let mut other = config();
        other.default_shoe = Some(ShoeConfig::default());
        let why = config().check_same(&other).unwrap_err();
        assert!(
            why.starts_with("default_shoe: the journal has null"),
            "{why}"
        );
    }
}
