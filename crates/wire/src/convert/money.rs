//! Payout ratios, paytables, bets and settlements. Money is `i64` minor units on both
//! sides, so amounts cross unchanged; what is checked is that they make sense.

use std::collections::BTreeSet;

use banco_rules::settle::BetOutcome;
use banco_rules::{Bet, BetKind, Payout, Paytable, Rounding, Settlement};

use super::{ConversionError, enums, optional, repeated, required};
use crate::pb;

impl From<Payout> for pb::Ratio {
    fn from(payout: Payout) -> pb::Ratio {
        pb::Ratio {
            numerator: payout.numerator(),
            denominator: payout.denominator(),
        }
    }
}

/// Refuses a zero denominator.
impl TryFrom<pb::Ratio> for Payout {
    type Error = ConversionError;

    fn try_from(ratio: pb::Ratio) -> Result<Payout, ConversionError> {
        Payout::new(ratio.numerator, ratio.denominator).ok_or_else(|| {
            ConversionError::invalid(
                "denominator",
                ratio.denominator.to_string(),
                "a ratio's denominator must be positive",
            )
        })
    }
}

/// Reads a required ratio field.
pub fn payout(field: &str, ratio: Option<pb::Ratio>) -> Result<Payout, ConversionError> {
    required(field, ratio)
}

impl From<&Paytable> for pb::Paytable {
    fn from(table: &Paytable) -> pb::Paytable {
        let ratio = |p: Payout| Some(pb::Ratio::from(p));
        pb::Paytable {
            name: table.name.clone(),
            player: ratio(table.player),
            banker: ratio(table.banker),
            banker_win_on_six: table.banker_win_on_six.map(pb::Ratio::from),
            tie: ratio(table.tie),
            player_pair: ratio(table.player_pair),
            banker_pair: ratio(table.banker_pair),
            either_pair: ratio(table.either_pair),
            perfect_pair: ratio(table.perfect_pair),
            big: ratio(table.big),
            small: ratio(table.small),
        }
    }
}

impl From<Paytable> for pb::Paytable {
    fn from(table: Paytable) -> pb::Paytable {
        pb::Paytable::from(&table)
    }
}

/// Every ratio but `banker_win_on_six` is required.
impl TryFrom<pb::Paytable> for Paytable {
    type Error = ConversionError;

    fn try_from(table: pb::Paytable) -> Result<Paytable, ConversionError> {
        Ok(Paytable {
            name: table.name,
            player: payout("player", table.player)?,
            banker: payout("banker", table.banker)?,
            banker_win_on_six: optional("banker_win_on_six", table.banker_win_on_six)?,
            tie: payout("tie", table.tie)?,
            player_pair: payout("player_pair", table.player_pair)?,
            banker_pair: payout("banker_pair", table.banker_pair)?,
            either_pair: payout("either_pair", table.either_pair)?,
            perfect_pair: payout("perfect_pair", table.perfect_pair)?,
            big: payout("big", table.big)?,
            small: payout("small", table.small)?,
        })
    }
}

impl From<Bet> for pb::Bet {
    fn from(bet: Bet) -> pb::Bet {
        pb::Bet {
            kind: pb::BetKind::from(bet.kind).into(),
            stake_minor: bet.stake,
        }
    }
}

/// A stake must be a positive number of minor units.
fn stake(field: &str, stake: i64) -> Result<i64, ConversionError> {
    if stake <= 0 {
        return Err(ConversionError::invalid(
            field,
            stake.to_string(),
            "a stake must be a positive number of minor units",
        ));
    }
    Ok(stake)
}

/// Refuses an unspecified kind and a stake that is not positive.
impl TryFrom<pb::Bet> for Bet {
    type Error = ConversionError;

    fn try_from(bet: pb::Bet) -> Result<Bet, ConversionError> {
        Ok(Bet {
            kind: enums::bet_kind("kind", bet.kind)?,
            stake: stake("stake_minor", bet.stake_minor)?,
        })
    }
}

/// Reads a repeated bet field; the error names the element (`bets[2].stake_minor`).
pub fn bets(field: &str, bets: Vec<pb::Bet>) -> Result<Vec<Bet>, ConversionError> {
    repeated(field, bets)
}

/// The bets of a PlaceBets request (`bets`): at least one, each valid, at most one per
/// position; errors name the element (`bets[1].kind`).
pub fn requested_bets(bets: Vec<pb::Bet>) -> Result<Vec<(BetKind, i64)>, ConversionError> {
    if bets.is_empty() {
        return Err(ConversionError::missing("bets"));
    }
    let bets = repeated::<pb::Bet, Bet>("bets", bets)?;
    let mut seen = BTreeSet::new();
    for (i, bet) in bets.iter().enumerate() {
        if !seen.insert(bet.kind) {
            return Err(ConversionError::invalid(
                format!("bets[{i}].kind"),
                bet.kind.to_string(),
                "at most one entry per position",
            ));
        }
    }
    Ok(bets.iter().map(|b| (b.kind, b.stake)).collect())
}

impl From<Rounding> for pb::Rounding {
    fn from(rounding: Rounding) -> pb::Rounding {
        pb::Rounding {
            remainder: rounding.remainder,
            denominator: rounding.denominator,
        }
    }
}

const fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Requires `denominator > 0`, `0 <= remainder < denominator`, in lowest terms (`0/1`
/// when exact), as the rules produce it, so that equal roundings compare equal.
impl TryFrom<pb::Rounding> for Rounding {
    type Error = ConversionError;

    fn try_from(rounding: pb::Rounding) -> Result<Rounding, ConversionError> {
        let pb::Rounding {
            remainder,
            denominator,
        } = rounding;
        if denominator <= 0 {
            return Err(ConversionError::invalid(
                "denominator",
                denominator.to_string(),
                "must be positive",
            ));
        }
        if remainder < 0 || remainder >= denominator {
            return Err(ConversionError::invalid(
                "remainder",
                remainder.to_string(),
                format!("must be at least 0 and below the denominator {denominator}"),
            ));
        }
        if gcd(remainder, denominator) != 1 {
            return Err(ConversionError::invalid(
                "remainder",
                format!("{remainder}/{denominator}"),
                "a rounding is sent in lowest terms (0/1 when exact)",
            ));
        }
        Ok(Rounding {
            remainder,
            denominator,
        })
    }
}

impl From<Settlement> for pb::Settlement {
    fn from(s: Settlement) -> pb::Settlement {
        pb::Settlement {
            kind: pb::BetKind::from(s.kind).into(),
            stake_minor: s.stake,
            outcome: pb::BetOutcome::from(s.outcome).into(),
            payout: s.payout.map(pb::Ratio::from),
            winnings_minor: s.winnings,
            returned_minor: s.returned,
            rounding: Some(pb::Rounding::from(s.rounding)),
        }
    }
}

/// Checks the settlement's shape: a payout and winnings only on a win, `returned` equal to
/// stake + winnings on a win, the stake on a push, 0 on a loss, and a rounding only where
/// something was rounded. Whether the amounts are right for the hand is for whoever holds
/// the hand to check, by settling again.
impl TryFrom<pb::Settlement> for Settlement {
    type Error = ConversionError;

    fn try_from(s: pb::Settlement) -> Result<Settlement, ConversionError> {
        let kind = enums::bet_kind("kind", s.kind)?;
        let stake = stake("stake_minor", s.stake_minor)?;
        let outcome = enums::bet_outcome("outcome", s.outcome)?;
        let rounding: Rounding = required("rounding", s.rounding)?;
        let won = outcome == BetOutcome::Win;
        let payout = match (won, s.payout) {
            (true, ratio) => Some(payout("payout", ratio)?),
            (false, None) => None,
            (false, Some(ratio)) => {
                return Err(ConversionError::invalid(
                    "payout",
                    format!("{}/{}", ratio.numerator, ratio.denominator),
                    format!("set on a bet that did not win ({outcome})"),
                ));
            }
        };
        let winnings = s.winnings_minor;
        if winnings < 0 || (!won && winnings != 0) {
            return Err(ConversionError::invalid(
                "winnings_minor",
                winnings.to_string(),
                format!("a {outcome} cannot have these winnings"),
            ));
        }
        if !won && !rounding.is_exact() {
            return Err(ConversionError::invalid(
                "rounding",
                format!("{}/{}", rounding.remainder, rounding.denominator),
                format!("nothing is rounded on a {outcome}"),
            ));
        }
        let returned = match outcome {
            BetOutcome::Win => stake.checked_add(winnings),
            BetOutcome::Push => Some(stake),
            BetOutcome::Lose => Some(0),
        };
        if returned != Some(s.returned_minor) {
            return Err(ConversionError::invalid(
                "returned_minor",
                s.returned_minor.to_string(),
                format!(
                    "a {outcome} with stake {stake} and winnings {winnings} returns {}",
                    returned.map_or_else(
                        || "more than an account can hold".to_owned(),
                        |r| r.to_string()
                    )
                ),
            ));
        }
        Ok(Settlement {
            kind,
            stake,
            outcome,
            payout,
            winnings,
            returned: s.returned_minor,
            rounding,
        })
    }
}

/// Reads a repeated settlement field; the error names the element.
pub fn settlements(
    field: &str,
    settlements: Vec<pb::Settlement>,
) -> Result<Vec<Settlement>, ConversionError> {
    repeated(field, settlements)
}
