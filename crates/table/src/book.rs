//! The bet book of one round, and the table's bet rules applied to a request.
//!
//! A request adds chips to positions; the limits, the self-limit and the progression cap
//! apply to the player's resulting total on each position. [`check_bets`] is pure: it
//! says what would be accepted (after raising to the minimum) or why not, position by
//! position, and the table then posts it all or nothing.

use std::collections::BTreeMap;
use std::fmt;

use banco_rules::BetKind;
use serde::{Deserialize, Serialize};

use crate::currency::Currency;
use crate::policy::{TablePolicy, UnderMinimum};

/// A player's stakes in one round, by position.
pub use banco_records::round::Stakes;

/// What everyone has on one position: what a subscriber sees of other players' bets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PositionTotal {
    pub amount: i64,
    pub bettors: u32,
}

/// The stakes of every player in the round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Book {
    bets: BTreeMap<String, Stakes>,
    /// What everyone has on each position, by [`BetKind::index`]: kept up to date by every
    /// change, because every accepted bet publishes it and summing a busy round's book
    /// for each bet would cost a pass over every player.
    totals: [PositionTotal; BetKind::ALL.len()],
}

impl Book {
    pub fn of(&self, player: &str) -> Option<&Stakes> {
        self.bets.get(player)
    }

    pub fn players(&self) -> &BTreeMap<String, Stakes> {
        &self.bets
    }

    /// Distinct players with a stake in the round: a player is in the book exactly while
    /// they have a stake (clearing removes them), so this is the map's size, O(1).
    pub fn bettors(&self) -> u32 {
        u32::try_from(self.bets.len()).unwrap_or(u32::MAX)
    }

    /// Sum of every stake in the book.
    pub fn total(&self) -> i64 {
        self.bets.values().flat_map(|s| s.values()).sum()
    }

    /// The positions someone bet on, with everyone's total there.
    pub fn totals(&self) -> BTreeMap<BetKind, PositionTotal> {
        BetKind::ALL
            .into_iter()
            .zip(self.totals)
            .filter(|(_, t)| t.bettors > 0)
            .collect()
    }

    /// The running totals agree with the stakes (for [`crate::Table::check_books`]).
    pub(crate) fn check_totals(&self) -> Result<(), String> {
        if let Some((player, _)) = self.bets.iter().find(|(_, s)| s.is_empty()) {
            return Err(format!("{player} is counted as a bettor without a stake"));
        }
        let mut counted = [PositionTotal::default(); BetKind::ALL.len()];
        for (&kind, &amount) in self.bets.values().flat_map(|s| s.iter()) {
            let t = &mut counted[kind.index()];
            t.amount += amount;
            t.bettors += 1;
        }
        if counted == self.totals {
            Ok(())
        } else {
            Err(format!(
                "bet totals {:?} disagree with the stakes, which sum to {counted:?}",
                self.totals
            ))
        }
    }

    /// Adds chips. The amounts were checked (positive, within the table limits), and the
    /// ledger holds them, so the sums stay far from overflowing.
    pub(crate) fn add(&mut self, player: &str, bets: &[(BetKind, i64)]) {
        if bets.is_empty() {
            return;
        }
        let stakes = self.bets.entry(player.to_owned()).or_default();
        for &(kind, amount) in bets {
            let total = &mut self.totals[kind.index()];
            let stake = stakes.entry(kind).or_insert_with(|| {
                total.bettors += 1;
                0
            });
            *stake += amount;
            total.amount += amount;
        }
    }

    pub(crate) fn clear(&mut self, player: &str) -> Option<Stakes> {
        let stakes = self.bets.remove(player)?;
        for (&kind, &amount) in &stakes {
            let total = &mut self.totals[kind.index()];
            total.amount -= amount;
            total.bettors -= 1;
        }
        Some(stakes)
    }
}

/// A stake raised to the position's minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Raise {
    pub kind: BetKind,
    /// What the player asked to add.
    pub asked: i64,
    /// What was added, so that the position holds the minimum.
    pub accepted: i64,
}

/// Why one position of a request was refused. Amounts are the player's resulting total
/// on the position, in minor units of `currency`; the sentence shows them as money.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum PositionRefusal {
    #[error("{kind}: {} is not a positive amount", currency.amount(*amount))]
    NonPositive {
        kind: BetKind,
        amount: i64,
        currency: Currency,
    },
    #[error("{kind}: {} is under the table minimum of {}", currency.amount(*total), currency.amount(*min))]
    UnderMinimum {
        kind: BetKind,
        total: i64,
        min: i64,
        currency: Currency,
    },
    #[error("{kind}: {} is over the table maximum of {}", currency.amount(*total), currency.amount(*max))]
    OverMaximum {
        kind: BetKind,
        total: i64,
        max: i64,
        currency: Currency,
    },
    #[error("{kind}: {} is over your self-limit of {} per bet", currency.amount(*total), currency.amount(*limit))]
    OverSelfLimit {
        kind: BetKind,
        total: i64,
        limit: i64,
        currency: Currency,
    },
    #[error(
        "{kind}: {} is over the progression cap of {} (your previous stake {} plus 50%, rounded down), from the 4th consecutive round on a chance",
        currency.amount(*total),
        currency.amount(*cap),
        currency.amount(*previous)
    )]
    ProgressionCap {
        kind: BetKind,
        total: i64,
        previous: i64,
        cap: i64,
        currency: Currency,
    },
    #[error("tie: may only be bet together with a player or banker bet in the same round")]
    TieWithoutMainBet,
}

/// The positions a request added, after raises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// One entry per position, in position order; duplicates in the request are merged.
    pub bets: Vec<(BetKind, i64)>,
    pub raised: Vec<Raise>,
}

impl Accepted {
    pub fn total(&self) -> i64 {
        self.bets.iter().map(|&(_, a)| a).sum()
    }
}

/// The refusals of one request, all of them, so the player can fix every one at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PositionRefusals(pub Vec<PositionRefusal>);

impl fmt::Display for PositionRefusals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// What the rules need to know about the player besides the request.
#[derive(Clone, Copy, Debug)]
pub struct PlayerContext<'a> {
    /// Stakes already in this round.
    pub existing: Option<&'a Stakes>,
    pub self_limit: Option<i64>,
    /// For Player and Banker: the previous round's stake when this round would be the
    /// player's 4th (or later) consecutive one on that chance and the cap is on.
    pub capped_previous: [Option<i64>; 2],
}

/// The largest total allowed on a capped chance: `previous + floor(previous / 2)`.
pub const fn progression_cap(previous: i64) -> i64 {
    previous.saturating_add(previous / 2)
}

/// Player → 0, Banker → 1 (the main chances, first in [`BetKind::ALL`]): the index of a
/// chance in per-chance arrays such as [`PlayerContext::capped_previous`].
pub(crate) fn main_chance(kind: BetKind) -> Option<usize> {
    kind.is_main().then(|| kind.index())
}

/// Applies the table's bet rules to a request. Pure.
pub fn check_bets(
    policy: &TablePolicy,
    request: &[(BetKind, i64)],
    player: PlayerContext<'_>,
) -> Result<Accepted, PositionRefusals> {
    let currency = policy.currency;
    let mut refusals = Vec::new();
    let mut merged: BTreeMap<BetKind, i64> = BTreeMap::new();
    for &(kind, amount) in request {
        if amount <= 0 {
            refusals.push(PositionRefusal::NonPositive {
                kind,
                amount,
                currency,
            });
            continue;
        }
        let slot = merged.entry(kind).or_insert(0);
        *slot = slot.saturating_add(amount);
    }
    let existing = |kind: BetKind| {
        player
            .existing
            .and_then(|s| s.get(&kind))
            .copied()
            .unwrap_or(0)
    };
    let mut bets = Vec::new();
    let mut raised = Vec::new();
    for (&kind, &asked) in &merged {
        let limits = policy.limits_of(kind);
        let before = existing(kind);
        let mut amount = asked;
        let mut total = before.saturating_add(asked);
        if total < limits.min {
            match policy.under_minimum {
                UnderMinimum::Raise => {
                    amount = limits.min - before;
                    total = limits.min;
                    raised.push(Raise {
                        kind,
                        asked,
                        accepted: amount,
                    });
                }
                UnderMinimum::Reject => {
                    refusals.push(PositionRefusal::UnderMinimum {
                        kind,
                        total,
                        min: limits.min,
                        currency,
                    });
                    continue;
                }
            }
        }
        if total > limits.max {
            refusals.push(PositionRefusal::OverMaximum {
                kind,
                total,
                max: limits.max,
                currency,
            });
            continue;
        }
        if let Some(limit) = player.self_limit
            && total > limit
        {
            refusals.push(PositionRefusal::OverSelfLimit {
                kind,
                total,
                limit,
                currency,
            });
            continue;
        }
        if let Some(previous) = main_chance(kind).and_then(|i| player.capped_previous[i]) {
            let cap = progression_cap(previous);
            if total > cap {
                refusals.push(PositionRefusal::ProgressionCap {
                    kind,
                    total,
                    previous,
                    cap,
                    currency,
                });
                continue;
            }
        }
        bets.push((kind, amount));
    }
    if policy.tie_needs_main_bet && merged.contains_key(&BetKind::Tie) {
        let main_after = [BetKind::Player, BetKind::Banker]
            .iter()
            .any(|&k| existing(k) > 0 || merged.contains_key(&k));
        if !main_after {
            refusals.push(PositionRefusal::TieWithoutMainBet);
        }
    }
    if refusals.is_empty() {
        Ok(Accepted { bets, raised })
    } else {
        Err(PositionRefusals(refusals))
    }
}
