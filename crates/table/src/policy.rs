//! A table's configuration: its pacing, its limits and bet rules, and its paytable.
//!
//! Everything here is data (serde, with the defaults of docs/src/rules/index.md), so that a
//! table's rules are read from its config file and written into the journal's first record,
//! never hard-coded in the round logic.

use std::collections::BTreeMap;
use std::fmt;

use banco_rules::{BetKind, Paytable};
use serde::{Deserialize, Serialize};

use crate::currency::Currency;

/// Who paces the round (docs/src/rules/pacing.md).
///
/// How the actor drives each one with [`crate::Command`]s:
/// - **Live**: the croupier sends `OpenBetting`, `CloseBetting` (or, with
///   [`TablePolicy::live_betting_ms`] set, the actor's `Tick` closes betting at
///   `closes_at`), then one `DealCard` per scanned card, then `ConfirmResult`.
/// - **AutomatedMultiplayer**: the actor sends `OpenBetting` (betting lasts
///   [`TablePolicy::automated_betting_ms`]), `Tick`s until one closes betting, waits until
///   the `draw_at` of the `BettingClosed` event ([`TablePolicy::automated_draw_delay_ms`]
///   later; a card before it is refused), sends a `DealCard` with source `Shuffler` for
///   each card of its seeded `banco_rules::Shoe::shuffled` until `Result`, then
///   `ConfirmResult` and the next `OpenBetting`. [`crate::Table::next_deadline`] says when
///   the next `Tick` matters.
/// - **SinglePlayer**: like automated, but betting has no timer: the player's own `Deal`
///   command closes betting and the draw follows at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    #[default]
    Live,
    AutomatedMultiplayer,
    SinglePlayer,
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pacing::Live => "live",
            Pacing::AutomatedMultiplayer => "automated multiplayer",
            Pacing::SinglePlayer => "single player",
        })
    }
}

/// What to do with a bet under the position's minimum (docs/src/rules/limits.md: raise, seed 000).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnderMinimum {
    /// The stake is raised to the minimum and the reply says so.
    #[default]
    Raise,
    /// The position is refused.
    Reject,
}

/// Minimum and maximum stake on one position, in minor units, inclusive. The limits apply
/// to a player's total on the position in the round (chips added together).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    pub min: i64,
    pub max: i64,
}

impl Default for Limits {
    /// Seed 004's 5–102 € tier, in cents.
    fn default() -> Limits {
        Limits {
            min: 500,
            max: 10_200,
        }
    }
}

/// The bet rules of a table. Every field has the default of docs/src/rules/index.md.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TablePolicy {
    /// The money the table plays in: its limits, stakes and balances are minor units of it.
    pub currency: Currency,
    /// Limits of every position without its own entry in `position_limits`.
    pub limits: Limits,
    /// Per-position overrides (e.g. lower limits on side bets).
    pub position_limits: BTreeMap<BetKind, Limits>,
    pub under_minimum: UnderMinimum,
    /// Tie may be bet only together with a Player or Banker bet in the same round (seed 004).
    pub tie_needs_main_bet: bool,
    /// The progression cap (seed 004). `None`: on for automated tables, off for live ones.
    pub progression_cap: Option<bool>,
    pub paytable: Paytable,
    /// Live tables: betting closes by itself this long after it opens (`None`: only the
    /// croupier closes it).
    pub live_betting_ms: Option<u64>,
    /// Automated multiplayer tables: how long betting stays open (seed 004: 20 s).
    pub automated_betting_ms: u64,
    /// Automated tables: from the close of betting to the draw (seed 004: 5 s).
    pub automated_draw_delay_ms: u64,
    /// Seats at the table (docs/src/rules/pacing.md: 5 or none). 0: no seats, any number of players
    /// bet behind. With seats, only a seated player may bet, and on automated and single-player
    /// tables betting closes as soon as every seated player has bet or passed.
    pub seats: u8,
    /// A seated player may pass a hand within this long of betting opening (seed 000: 15 s).
    pub pass_window_ms: u64,
    /// Table chat: length, rate limit and blocked words.
    pub chat: ChatPolicy,
}

/// The rules of a table's chat. Chat lines are journaled (regulators keep chat logs), so
/// these limits also bound what the journal takes from one player.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChatPolicy {
    /// Longest line, in characters (not bytes), after trimming.
    pub max_chars: usize,
    /// A player may send at most this many lines within `window_ms`.
    pub burst: u32,
    pub window_ms: u64,
    /// Words masked with `*` in what players see (whole words, case-insensitive). Each is
    /// letters and digits only.
    pub blocked_words: Vec<String>,
}

impl Default for ChatPolicy {
    fn default() -> ChatPolicy {
        ChatPolicy {
            max_chars: 200,
            burst: 5,
            window_ms: 10_000,
            blocked_words: Vec::new(),
        }
    }
}

impl Default for TablePolicy {
    fn default() -> TablePolicy {
        TablePolicy {
            currency: Currency::EUR,
            limits: Limits::default(),
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
            chat: ChatPolicy::default(),
        }
    }
}

/// A configuration that cannot be run; names the bad value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("table id `{0}`: must be 1 to 16 ASCII letters or digits")]
    TableId(String),
    #[error("limits of {kind}: min {min} and max {max} must satisfy 0 < min <= max")]
    Limits { kind: BetKind, min: i64, max: i64 },
    #[error("chat.{field}: must be at least 1")]
    ChatLimit { field: &'static str },
    #[error("chat.blocked_words: `{0}` must be one word of letters and digits")]
    BlockedWord(String),
}

impl TablePolicy {
    /// The limits that apply to `kind`.
    pub fn limits_of(&self, kind: BetKind) -> Limits {
        self.position_limits
            .get(&kind)
            .copied()
            .unwrap_or(self.limits)
    }

    /// Whether the progression cap applies on a table of this pacing.
    pub fn progression_cap_on(&self, pacing: Pacing) -> bool {
        self.progression_cap.unwrap_or(pacing != Pacing::Live)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        for kind in BetKind::ALL {
            let Limits { min, max } = self.limits_of(kind);
            if min <= 0 || min > max {
                return Err(ConfigError::Limits { kind, min, max });
            }
        }
        if self.chat.max_chars == 0 {
            return Err(ConfigError::ChatLimit { field: "max_chars" });
        }
        if self.chat.burst == 0 {
            return Err(ConfigError::ChatLimit { field: "burst" });
        }
        if let Some(word) = self
            .chat
            .blocked_words
            .iter()
            .find(|w| w.is_empty() || !w.chars().all(char::is_alphanumeric))
        {
            return Err(ConfigError::BlockedWord(word.clone()));
        }
        Ok(())
    }
}

/// Everything a [`crate::Table`] is built from. A journal replay must start from the same
/// value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// Short id used in round ids, e.g. `T01`.
    pub table_id: String,
    #[serde(default)]
    pub pacing: Pacing,
    #[serde(default)]
    pub policy: TablePolicy,
}

impl TableConfig {
    pub fn new(table_id: &str, pacing: Pacing) -> TableConfig {
        TableConfig {
            table_id: table_id.to_owned(),
            pacing,
            policy: TablePolicy::default(),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let id = &self.table_id;
        if id.is_empty() || id.len() > 16 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ConfigError::TableId(id.clone()));
        }
        self.policy.validate()
    }
}
