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

/// The journal format this version writes: the JSON of [`crate::actor::JournalEntry`]
/// (and of the commands in it) in each record after the first. Its golden journals are
/// `crates/records/tests/golden/v1/*.journal`, which every later version must replay.
pub const JOURNAL_FORMAT: u32 = 1;

/// Record 1 of every journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournaledConfig {
    pub table: TableConfig,
    /// The shoe an `OpenShoe` without its own config opens, if the host has a default.
    #[serde(default)]
    pub default_shoe: Option<ShoeConfig>,
    /// The journal's format ([`JOURNAL_FORMAT`] when this version starts it); 0 (absent)
    /// in journals started before formats were numbered, which read as format 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub format: u32,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if"
)]
const fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl JournaledConfig {
    /// `Err` names the first setting (as a dotted path) where the journal's configuration
    /// and `configured` differ, with both values; or says the journal is of a format this
    /// version cannot read. The format itself may differ (a journal keeps the one it was
    /// started with).
    pub(crate) fn check_same(&self, configured: &JournaledConfig) -> Result<(), String> {
        if self.format > JOURNAL_FORMAT {
            return Err(format!(
                "the journal is of format {}, written by a newer banco; this version reads \
                 format {JOURNAL_FORMAT} and earlier",
                self.format
            ));
        }
        let configured = JournaledConfig {
            format: self.format,
            ..configured.clone()
        };
        if *self == configured {
            return Ok(());
        }
        let configured = &configured;
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
            format: JOURNAL_FORMAT,
        }
    }

    #[test]
    fn a_journal_of_an_older_format_runs_and_of_a_newer_one_is_refused() {
        let old = JournaledConfig {
            format: 0,
            ..config()
        };
        assert_eq!(old.check_same(&config()), Ok(()));
        assert!(!serde_json::to_string(&old).unwrap().contains("format"));
        let newer = JournaledConfig {
            format: JOURNAL_FORMAT + 1,
            ..config()
        };
        let why = newer.check_same(&config()).unwrap_err();
        assert!(why.contains("format 2, written by a newer banco"), "{why}");
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
