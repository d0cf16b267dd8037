//! Settling bets on a judged coup, in integer minor units.
//!
//! Every amount is exact: winnings are `stake × numerator / denominator` computed in
//! `i128`, rounded down to the minor unit in the house's favour, and the fraction of a
//! minor unit so kept is written into the settlement, because a regulator must be able to
//! account for every part of a cent.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bet::{BetKind, Payout, Paytable};
use crate::coup::CoupResult;
use crate::outcome::Winner;

/// A stake on one betting position, in minor units (must be positive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bet {
    pub kind: BetKind,
    pub stake: i64,
}

impl Bet {
    pub const fn new(kind: BetKind, stake: i64) -> Bet {
        Bet { kind, stake }
    }
}

/// How a bet fared. Only Player and Banker can push (on a tie).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BetOutcome {
    Win,
    Lose,
    Push,
}

impl fmt::Display for BetOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BetOutcome::Win => "win",
            BetOutcome::Lose => "lose",
            BetOutcome::Push => "push",
        })
    }
}

/// Whether a bet on `kind` wins, loses or pushes on this coup. Side bets are decided by
/// their own event, whatever the main outcome.
pub fn bet_outcome(kind: BetKind, result: &CoupResult) -> BetOutcome {
    let wins = |yes: bool| {
        if yes {
            BetOutcome::Win
        } else {
            BetOutcome::Lose
        }
    };
    match (kind, result.winner()) {
        (BetKind::Player | BetKind::Banker, Winner::Tie) => BetOutcome::Push,
        (BetKind::Player, winner) => wins(winner == Winner::Player),
        (BetKind::Banker, winner) => wins(winner == Winner::Banker),
        (BetKind::Tie, winner) => wins(winner == Winner::Tie),
        (BetKind::PlayerPair, _) => wins(result.player_pair()),
        (BetKind::BankerPair, _) => wins(result.banker_pair()),
        (BetKind::EitherPair, _) => wins(result.either_pair()),
        (BetKind::PerfectPair, _) => wins(result.perfect_pair()),
        (BetKind::Big, _) => wins(result.cards_dealt() >= 5),
        (BetKind::Small, _) => wins(result.cards_dealt() == 4),
    }
}

/// The fraction of a minor unit the house kept by rounding winnings down:
/// `remainder / denominator`, in lowest terms, `0/1` when the winnings were exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rounding {
    pub remainder: i64,
    pub denominator: i64,
}

impl Rounding {
    pub const NONE: Rounding = Rounding {
        remainder: 0,
        denominator: 1,
    };

    /// `remainder / denominator` reduced; both non-negative, `denominator > 0`.
    fn reduced(remainder: i128, denominator: i128) -> Rounding {
        if remainder == 0 {
            return Rounding::NONE;
        }
        let (mut a, mut b) = (remainder, denominator);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        // Both are at most the payout denominator, a u32, so the casts are exact.
        Rounding {
            remainder: (remainder / a) as i64,
            denominator: (denominator / a) as i64,
        }
    }

    pub const fn is_exact(self) -> bool {
        self.remainder == 0
    }
}

impl Default for Rounding {
    fn default() -> Rounding {
        Rounding::NONE
    }
}

impl fmt::Display for Rounding {
    /// `none`, `0.95 of a minor unit`, or `1/3 of a minor unit` when no short decimal exists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_exact() {
            return f.write_str("none");
        }
        let (n, d) = (i128::from(self.remainder), i128::from(self.denominator));
        // Only a hand-edited record can have d <= 0; short_decimal refuses it and it prints
        // as it is.
        if let Some(decimal) = crate::bet::short_decimal(n, d, 9) {
            return write!(f, "{decimal} of a minor unit");
        }
        write!(f, "{n}/{d} of a minor unit")
    }
}

/// One settled bet.
///
/// `payout` is the ratio that was applied, present only on a win (on a push or a loss no
/// ratio applies). `winnings` is the profit paid on top of the stake; `returned` is what
/// goes back to the player: stake + winnings on a win, the stake on a push, 0 on a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settlement {
    pub kind: BetKind,
    pub stake: i64,
    pub outcome: BetOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout: Option<Payout>,
    pub winnings: i64,
    pub returned: i64,
    #[serde(default)]
    pub rounding: Rounding,
}

impl Settlement {
    /// The player's gain (positive) or loss (negative) on this bet.
    pub const fn net(&self) -> i64 {
        self.returned - self.stake
    }
}

/// A bet that cannot be settled. Nothing of the batch it came in is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    #[error("{kind} bet of {stake}: a stake must be a positive number of minor units")]
    NonPositiveStake { kind: BetKind, stake: i64 },
    #[error(
        "{kind} bet of {stake}: its winnings would exceed the largest amount an account can hold"
    )]
    Overflow { kind: BetKind, stake: i64 },
}

/// The ratios a winning bet on `kind` may be paid at under `paytable`.
fn possible_payouts(kind: BetKind, paytable: &Paytable) -> [Payout; 2] {
    let usual = paytable.pays(kind);
    match (kind, paytable.banker_win_on_six) {
        (BetKind::Banker, Some(six)) => [usual, six],
        _ => [usual, usual],
    }
}

/// `stake × payout`, floored, and the fraction kept; `None` if it does not fit with the
/// stake in an `i64`.
fn win(stake: i64, payout: Payout) -> Option<(i64, Rounding)> {
    let exact = i128::from(stake) * i128::from(payout.numerator());
    let denominator = i128::from(payout.denominator());
    let winnings = i64::try_from(exact / denominator).ok()?;
    stake.checked_add(winnings)?;
    Some((
        winnings,
        Rounding::reduced(exact % denominator, denominator),
    ))
}

/// Settles one bet.
///
/// A stake whose winnings could not be represented at any ratio the bet might be paid at
/// is refused whether or not it wins, so that a bet's validity never depends on the cards.
pub fn settle_bet(
    bet: Bet,
    result: &CoupResult,
    paytable: &Paytable,
) -> Result<Settlement, SettleError> {
    let Bet { kind, stake } = bet;
    if stake <= 0 {
        return Err(SettleError::NonPositiveStake { kind, stake });
    }
    for payout in possible_payouts(kind, paytable) {
        win(stake, payout).ok_or(SettleError::Overflow { kind, stake })?;
    }
    let outcome = bet_outcome(kind, result);
    let settled = |payout, winnings, returned, rounding| Settlement {
        kind,
        stake,
        outcome,
        payout,
        winnings,
        returned,
        rounding,
    };
    Ok(match outcome {
        BetOutcome::Lose => settled(None, 0, 0, Rounding::NONE),
        BetOutcome::Push => settled(None, 0, stake, Rounding::NONE),
        BetOutcome::Win => {
            let payout = match kind {
                BetKind::Banker => paytable.banker_pays(result.banker_total()),
                _ => paytable.pays(kind),
            };
            let (winnings, rounding) =
                win(stake, payout).ok_or(SettleError::Overflow { kind, stake })?;
            settled(Some(payout), winnings, stake + winnings, rounding)
        }
    })
}

/// Settles every bet of a round, or none: the first bad bet is the error.
pub fn settle(
    bets: &[Bet],
    result: &CoupResult,
    paytable: &Paytable,
) -> Result<Vec<Settlement>, SettleError> {
    bets.iter()
        .map(|&bet| settle_bet(bet, result, paytable))
        .collect()
}
