//! Each player's own recent rounds ("my bets"): kept by the table as it applies commands,
//! so a journal replay rebuilds it exactly, and bounded per player. The archive keeps
//! everything older.

use std::collections::VecDeque;

use banco_rules::{CoupResult, Settlement};
use serde::{Deserialize, Serialize};

use crate::book::Stakes;
use crate::round_id::RoundId;

/// How many finished rounds with a stake the table keeps per player (plus the round under
/// way). Bounded so that a table with thousands of players stays small (about 25 KB a
/// player at most); the archive answers for older rounds.
pub const HISTORY_PER_PLAYER: usize = 50;

/// One round a player staked on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub round_id: RoundId,
    /// When the player's first accepted bet of the round was placed.
    pub placed_at: u64,
    /// The player's stakes by position (final once betting closed).
    pub bets: Stakes,
    /// Empty until the round is settled, and for a void round.
    pub settlements: Vec<Settlement>,
    /// `None` until the round is settled, and for a void round.
    pub result: Option<CoupResult>,
    pub voided: bool,
    /// What came back minus what was staked; 0 for a void round and until settlement.
    pub net: i64,
}

impl HistoryEntry {
    /// Settled or voided.
    pub fn finished(&self) -> bool {
        self.voided || self.result.is_some()
    }
}

/// One player's entries, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct History {
    entries: VecDeque<HistoryEntry>,
}

impl History {
    /// The entry of `round_id`, if it is the newest (the only one that can change).
    fn current(&mut self, round_id: &RoundId) -> Option<&mut HistoryEntry> {
        self.entries.back_mut().filter(|e| e.round_id == *round_id)
    }

    /// A bet was accepted: `stakes` are the player's stakes in the round after it.
    pub(crate) fn staked(&mut self, round_id: &RoundId, stakes: &Stakes, now: u64) {
        if let Some(entry) = self.current(round_id) {
            entry.bets.clone_from(stakes);
            return;
        }
        self.entries.push_back(HistoryEntry {
            round_id: round_id.clone(),
            placed_at: now,
            bets: stakes.clone(),
            settlements: Vec::new(),
            result: None,
            voided: false,
            net: 0,
        });
        // The bound, counting the round under way: its entry may still be cleared away.
        while self.entries.len() > HISTORY_PER_PLAYER + 1 {
            self.entries.pop_front();
        }
    }

    /// The player cleared every bet of the round: it is no longer one they staked on.
    pub(crate) fn cleared(&mut self, round_id: &RoundId) {
        if self.current(round_id).is_some() {
            self.entries.pop_back();
        }
    }

    /// The round was settled: `settlements` are the player's.
    pub(crate) fn settled(
        &mut self,
        round_id: &RoundId,
        settlements: &[Settlement],
        result: Option<CoupResult>,
    ) {
        if let Some(entry) = self.current(round_id) {
            entry.settlements = settlements.to_vec();
            entry.result = result;
            entry.net = settlements.iter().map(Settlement::net).sum();
        }
        self.trim();
    }

    pub(crate) fn voided(&mut self, round_id: &RoundId) {
        if let Some(entry) = self.current(round_id) {
            entry.voided = true;
            entry.net = 0;
        }
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > HISTORY_PER_PLAYER {
            self.entries.pop_front();
        }
    }

    /// Up to `limit` entries, newest first, strictly older than `before` when given.
    pub(crate) fn page(&self, before: Option<&RoundId>, limit: usize) -> Vec<HistoryEntry> {
        self.entries
            .iter()
            .rev()
            .filter(|e| before.is_none_or(|b| e.round_id < *b))
            .take(limit)
            .cloned()
            .collect()
    }
}
