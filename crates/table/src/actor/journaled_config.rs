//! The journal's first record: the configuration the table runs under.
//!
//! A journal replays only under the configuration it was written with (limits, paytable,
//! pacing, timings all decide what its commands did). So a new journal starts with the
//! configuration, and every later start compares its own configuration with it and refuses
//! to run on any difference, naming the first differing setting: an operator cannot
//! silently change the limits or the paytable under a live journal.

use banco_records::journal::{self, ConfigRecord, JOURNAL_FORMAT, TableSettings};
use serde_json::Value;

use crate::currency::Currency;
use crate::policy::{ChatPolicy, Limits, Pacing, TableConfig, TablePolicy, UnderMinimum};

/// Record 1 of every journal, as stored ([`ConfigRecord`] of [`TableSettings`]).
pub type JournaledConfig = ConfigRecord;

impl From<&TableConfig> for TableSettings {
    fn from(config: &TableConfig) -> TableSettings {
        TableSettings {
            table_id: config.table_id.clone(),
            pacing: config.pacing.into(),
            policy: (&config.policy).into(),
        }
    }
}

/// A journal's configuration read back, to replay the journal under it (an auditor's copy
/// of a table). `Err` names the setting that this version cannot take.
impl TryFrom<&TableSettings> for TableConfig {
    type Error = String;

    fn try_from(settings: &TableSettings) -> Result<TableConfig, String> {
        let journal::Policy {
            currency,
            limits,
            position_limits,
            under_minimum,
            tie_needs_main_bet,
            progression_cap,
            paytable,
            live_betting_ms,
            automated_betting_ms,
            automated_draw_delay_ms,
            seats,
            pass_window_ms,
            chat,
        } = &settings.policy;
        Ok(TableConfig {
            table_id: settings.table_id.clone(),
            pacing: settings.pacing.into(),
            policy: TablePolicy {
                currency: Currency::parse(currency)
                    .map_err(|e| format!("table.policy.currency: {e}"))?,
                limits: (*limits).into(),
                position_limits: position_limits
                    .iter()
                    .map(|(kind, limits)| (*kind, (*limits).into()))
                    .collect(),
                under_minimum: (*under_minimum).into(),
                tie_needs_main_bet: *tie_needs_main_bet,
                progression_cap: *progression_cap,
                paytable: paytable.clone(),
                live_betting_ms: *live_betting_ms,
                automated_betting_ms: *automated_betting_ms,
                automated_draw_delay_ms: *automated_draw_delay_ms,
                seats: *seats,
                pass_window_ms: *pass_window_ms,
                chat: chat.into(),
            },
        })
    }
}

impl From<&TablePolicy> for journal::Policy {
    fn from(policy: &TablePolicy) -> journal::Policy {
        // Destructured, so that a setting added to the table fails to compile here until
        // the journal's format says how it is kept.
        let TablePolicy {
            currency,
            limits,
            position_limits,
            under_minimum,
            tie_needs_main_bet,
            progression_cap,
            paytable,
            live_betting_ms,
            automated_betting_ms,
            automated_draw_delay_ms,
            seats,
            pass_window_ms,
            chat,
        } = policy;
        journal::Policy {
            currency: currency.to_string(),
            limits: (*limits).into(),
            position_limits: position_limits
                .iter()
                .map(|(kind, limits)| (*kind, (*limits).into()))
                .collect(),
            under_minimum: (*under_minimum).into(),
            tie_needs_main_bet: *tie_needs_main_bet,
            progression_cap: *progression_cap,
            paytable: paytable.clone(),
            live_betting_ms: *live_betting_ms,
            automated_betting_ms: *automated_betting_ms,
            automated_draw_delay_ms: *automated_draw_delay_ms,
            seats: *seats,
            pass_window_ms: *pass_window_ms,
            chat: chat.into(),
        }
    }
}

impl From<Pacing> for journal::Pacing {
    fn from(pacing: Pacing) -> journal::Pacing {
        match pacing {
            Pacing::Live => journal::Pacing::Live,
            Pacing::AutomatedMultiplayer => journal::Pacing::AutomatedMultiplayer,
            Pacing::SinglePlayer => journal::Pacing::SinglePlayer,
        }
    }
}

impl From<journal::Pacing> for Pacing {
    fn from(pacing: journal::Pacing) -> Pacing {
        match pacing {
            journal::Pacing::Live => Pacing::Live,
            journal::Pacing::AutomatedMultiplayer => Pacing::AutomatedMultiplayer,
            journal::Pacing::SinglePlayer => Pacing::SinglePlayer,
        }
    }
}

impl From<UnderMinimum> for journal::UnderMinimum {
    fn from(under: UnderMinimum) -> journal::UnderMinimum {
        match under {
            UnderMinimum::Raise => journal::UnderMinimum::Raise,
            UnderMinimum::Reject => journal::UnderMinimum::Reject,
        }
    }
}

impl From<journal::UnderMinimum> for UnderMinimum {
    fn from(under: journal::UnderMinimum) -> UnderMinimum {
        match under {
            journal::UnderMinimum::Raise => UnderMinimum::Raise,
            journal::UnderMinimum::Reject => UnderMinimum::Reject,
        }
    }
}

impl From<Limits> for journal::Limits {
    fn from(Limits { min, max }: Limits) -> journal::Limits {
        journal::Limits { min, max }
    }
}

impl From<journal::Limits> for Limits {
    fn from(journal::Limits { min, max }: journal::Limits) -> Limits {
        Limits { min, max }
    }
}

impl From<&ChatPolicy> for journal::Chat {
    fn from(chat: &ChatPolicy) -> journal::Chat {
        let ChatPolicy {
            max_chars,
            burst,
            window_ms,
            blocked_words,
        } = chat;
        journal::Chat {
            max_chars: *max_chars,
            burst: *burst,
            window_ms: *window_ms,
            blocked_words: blocked_words.clone(),
        }
    }
}

impl From<&journal::Chat> for ChatPolicy {
    fn from(chat: &journal::Chat) -> ChatPolicy {
        ChatPolicy {
            max_chars: chat.max_chars,
            burst: chat.burst,
            window_ms: chat.window_ms,
            blocked_words: chat.blocked_words.clone(),
        }
    }
}

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
            table: (&TableConfig::new("T01", Pacing::Live)).into(),
            default_shoe: None,
            format: JOURNAL_FORMAT,
        }
    }

    /// Journals written before the configuration had a type of its own in banco-records
    /// hold the table's `TableConfig` as serde wrote it: the stored type must write the
    /// very same JSON, for every setting.
    #[test]
    fn the_stored_settings_write_what_the_table_config_wrote() {
        let mut varied = TableConfig::new("T09", Pacing::AutomatedMultiplayer);
        let policy = &mut varied.policy;
        policy.currency = crate::currency::Currency::parse("USD").unwrap();
        policy.limits.max = 50_000;
        policy
            .position_limits
            .insert(banco_rules::BetKind::Tie, Limits { min: 100, max: 900 });
        policy.under_minimum = UnderMinimum::Reject;
        policy.tie_needs_main_bet = false;
        policy.progression_cap = Some(true);
        policy.paytable = banco_rules::Paytable::no_commission();
        policy.live_betting_ms = Some(15_000);
        policy.seats = 5;
        policy.chat.blocked_words = vec!["cheat".to_owned()];
        for table in [
            TableConfig::new("T01", Pacing::Live),
            TableConfig::new("T02", Pacing::SinglePlayer),
            varied,
        ] {
            let stored = TableSettings::from(&table);
            assert_eq!(
                serde_json::to_string(&stored).unwrap(),
                serde_json::to_string(&table).unwrap()
            );
            let read: TableSettings =
                serde_json::from_str(&serde_json::to_string(&table).unwrap()).unwrap();
            assert_eq!(read, stored);
            assert_eq!(TableConfig::try_from(&read), Ok(table));
        }
    }

    #[test]
    fn a_currency_this_version_cannot_take_is_named() {
        let mut settings = TableSettings::from(&TableConfig::new("T01", Pacing::Live));
        settings.policy.currency = "euro".to_owned();
        let why = TableConfig::try_from(&settings).unwrap_err();
        assert!(
            why.starts_with("table.policy.currency: currency `euro`"),
            "{why}"
        );
    }

    #[test]
    fn a_journal_of_an_older_format_runs_and_of_a_newer_one_is_refused() {
        let old = JournaledConfig {
            format: 0,
            ..config()
        };
        assert_eq!(check_same(&old, &config()), Ok(()));
        assert!(!serde_json::to_string(&old).unwrap().contains("format"));
        let one = JournaledConfig {
            format: 1,
            ..config()
        };
        assert_eq!(check_same(&one, &config()), Ok(()));
        let newer = JournaledConfig {
            format: JOURNAL_FORMAT + 1,
            ..config()
        };
        let why = check_same(&newer, &config()).unwrap_err();
        assert!(why.contains("format 3, written by a newer banco"), "{why}");
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
