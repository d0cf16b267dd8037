//! The table's configuration as record 1 of a journal holds it, format 1
//! (`banco_table::TableConfig` as this version journals it).
//!
//! A journal replays only under the configuration it was started with: a start compares
//! its own configuration, converted to these types, with the journal's, and refuses to run
//! on any difference. So these are a format like the commands: a setting renamed or
//! re-typed in the table cannot change what an old journal says, and a setting added to
//! the table is a new format. The defaults are format 1's (what a journal written before a
//! setting existed meant by its absence), fixed here whatever the table's defaults become.
//! The paytable is embedded as `banco_rules` encodes it, as the round record embeds it.

use std::collections::BTreeMap;

use banco_rules::{BetKind, Paytable};
use serde::{Deserialize, Serialize};

/// The table: its id, pacing and bet rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSettings {
    pub table_id: String,
    #[serde(default)]
    pub pacing: Pacing,
    #[serde(default)]
    pub policy: Policy,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    #[default]
    Live,
    AutomatedMultiplayer,
    SinglePlayer,
}

/// What a bet under a position's minimum becomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnderMinimum {
    #[default]
    Raise,
    Reject,
}

/// Minimum and maximum stake on one position, minor units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub min: i64,
    pub max: i64,
}

/// The table's bet rules, field for field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// ISO 4217 code.
    pub currency: String,
    pub limits: Limits,
    pub position_limits: BTreeMap<BetKind, Limits>,
    pub under_minimum: UnderMinimum,
    pub tie_needs_main_bet: bool,
    pub progression_cap: Option<bool>,
    pub paytable: Paytable,
    pub live_betting_ms: Option<u64>,
    pub automated_betting_ms: u64,
    pub automated_draw_delay_ms: u64,
    pub seats: u8,
    pub pass_window_ms: u64,
    pub chat: Chat,
}

/// The table chat's limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Chat {
    pub max_chars: usize,
    pub burst: u32,
    pub window_ms: u64,
    pub blocked_words: Vec<String>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            currency: "EUR".to_owned(),
            limits: Limits {
                min: 500,
                max: 10_200,
            },
            position_limits: BTreeMap::new(),
            under_minimum: UnderMinimum::Raise,
            tie_needs_main_bet: true,
            progression_cap: None,
            paytable: Paytable::default(),
            live_betting_ms: None,
            automated_betting_ms: 20_000,
            automated_draw_delay_ms: 5_000,
            seats: 0,
            pass_window_ms: 15_000,
            chat: Chat::default(),
        }
    }
}

impl Default for Chat {
    fn default() -> Chat {
        Chat {
            max_chars: 200,
            burst: 5,
            window_ms: 10_000,
            blocked_words: Vec::new(),
        }
    }
}
