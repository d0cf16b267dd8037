//! Money and bets as people type them: major units with up to two decimals (`25`, `2.50`),
//! converted exactly to minor units, and bet arguments `player=25 tie=5`. No floats:
//! `2.555` is refused, never rounded. Shared by the `banco` command line and its fuzz
//! target, so that what is fuzzed is what players type into.

use std::collections::BTreeSet;
use std::fmt;

use crate::bet::{BetKind, UnknownBet};

/// Minor units per major unit (every table currency so far has two decimals: EUR, USD, GBP).
pub const MINOR_PER_MAJOR: i64 = 100;

/// Why a typed amount was refused. `what` names the argument (e.g. `player=2.555`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("{what}: `{text}` is negative; amounts are positive")]
    Negative { what: String, text: String },
    #[error("{what}: `{text}` is not an amount (expected e.g. 25 or 2.50)")]
    NotAnAmount { what: String, text: String },
    #[error("{what}: `{text}` has more than 2 decimals; the smallest unit is 0.01")]
    TooPrecise { what: String, text: String },
    #[error("{what}: `{text}` is too large")]
    TooLarge { what: String, text: String },
    #[error("{what}: the amount must be more than zero")]
    Zero { what: String },
}

/// A positive stake typed by a person, in minor units.
pub fn parse_stake(what: &str, text: &str) -> Result<i64, AmountError> {
    let minor = parse_amount(what, text)?;
    if minor <= 0 {
        return Err(AmountError::Zero {
            what: what.to_owned(),
        });
    }
    Ok(minor)
}

/// A non-negative amount in major units (`0`, `25`, `2.5`, `2.50`), in minor units.
pub fn parse_amount(what: &str, text: &str) -> Result<i64, AmountError> {
    let names = || (what.to_owned(), text.to_owned());
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if text.starts_with('-') {
        let (what, text) = names();
        return Err(AmountError::Negative { what, text });
    }
    let not_an_amount = || {
        let (what, text) = names();
        AmountError::NotAnAmount { what, text }
    };
    if !digits_only(whole) {
        return Err(not_an_amount());
    }
    let cents = match fraction {
        None => 0,
        Some(f) if !digits_only(f) => return Err(not_an_amount()),
        Some(f) if f.len() > 2 => {
            let (what, text) = names();
            return Err(AmountError::TooPrecise { what, text });
        }
        Some(f) => {
            let value: i64 = f.parse().map_err(|_| not_an_amount())?;
            if f.len() == 1 { value * 10 } else { value }
        }
    };
    let too_large = || {
        let (what, text) = names();
        AmountError::TooLarge { what, text }
    };
    let whole: i64 = whole.parse().map_err(|_| too_large())?;
    whole
        .checked_mul(MINOR_PER_MAJOR)
        .and_then(|m| m.checked_add(cents))
        .ok_or_else(too_large)
}

/// An amount as people read it: `€5,025.00`, `-€451.40`, `1,250.00 CHF`. Machines are
/// given the minor units themselves; this is only ever for a person's eyes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Money<'a> {
    minor: i64,
    currency: &'a str,
    signed: bool,
}

impl<'a> Money<'a> {
    /// `minor` units of `currency` (an ISO 4217 code such as `EUR`; empty: no currency
    /// shown).
    pub fn new(minor: i64, currency: &'a str) -> Money<'a> {
        Money {
            minor,
            currency,
            signed: false,
        }
    }

    /// Always shows the sign, as a change does: `+€19.00`, `-€25.00`, `+€0.00`.
    #[must_use]
    pub fn signed(self) -> Money<'a> {
        Money {
            signed: true,
            ..self
        }
    }
}

impl fmt::Display for Money<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = match (self.minor < 0, self.signed) {
            (true, _) => "-",
            (false, true) => "+",
            (false, false) => "",
        };
        let grouped = grouped(self.minor);
        match symbol(self.currency) {
            Some(symbol) => write!(f, "{sign}{symbol}{grouped}"),
            None if self.currency.is_empty() => write!(f, "{sign}{grouped}"),
            None => write!(f, "{sign}{grouped} {}", self.currency),
        }
    }
}

/// The sign people put before the amount, for the currencies that have one in common use.
fn symbol(currency: &str) -> Option<&'static str> {
    match currency {
        "EUR" => Some("€"),
        "USD" => Some("$"),
        "GBP" => Some("£"),
        _ => None,
    }
}

/// The absolute amount with thousands separated: `1,234,567.89`.
fn grouped(minor: i64) -> String {
    let abs = minor.unsigned_abs();
    let per = MINOR_PER_MAJOR.unsigned_abs();
    let units = (abs / per).to_string();
    let mut out = String::with_capacity(units.len() + units.len() / 3 + 3);
    for (i, c) in units.chars().enumerate() {
        if i > 0 && (units.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}.{:02}", abs % per)
}

/// `1900` → `19.00`, `-5` → `-0.05`.
pub fn money(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    let per = MINOR_PER_MAJOR.unsigned_abs();
    format!("{sign}{}.{:02}", abs / per, abs % per)
}

/// A change, always signed: `+19.00`, `-25.00`, `+0.00`.
pub fn signed_money(minor: i64) -> String {
    if minor < 0 {
        money(minor)
    } else {
        format!("+{}", money(minor))
    }
}

/// Why typed bet arguments were refused; each names the argument at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BetArgsError {
    #[error("no bet given: write them as position=amount, e.g. player=25 tie=5")]
    Empty,
    #[error("`{0}`: expected position=amount, e.g. banker=25")]
    NoEquals(String),
    #[error("`{arg}`: {error}")]
    Position { arg: String, error: UnknownBet },
    #[error(transparent)]
    Amount(AmountError),
    #[error("`{arg}`: {kind} is given twice; put the whole stake in one argument")]
    Twice { arg: String, kind: BetKind },
}

/// `kind=amount` arguments → (position, stake in minor units), in the order given. Every
/// argument is checked before anything is sent, so a typo never places half a bet.
pub fn parse_bet_args<S: AsRef<str>>(args: &[S]) -> Result<Vec<(BetKind, i64)>, BetArgsError> {
    if args.is_empty() {
        return Err(BetArgsError::Empty);
    }
    let mut seen = BTreeSet::new();
    let mut bets = Vec::with_capacity(args.len());
    for arg in args {
        let arg = arg.as_ref();
        let Some((name, amount)) = arg.split_once('=') else {
            return Err(BetArgsError::NoEquals(arg.to_owned()));
        };
        let kind = BetKind::parse(name).map_err(|error| BetArgsError::Position {
            arg: arg.to_owned(),
            error,
        })?;
        let stake = parse_stake(&format!("`{arg}`"), amount).map_err(BetArgsError::Amount)?;
        if !seen.insert(kind) {
            return Err(BetArgsError::Twice {
                arg: arg.to_owned(),
                kind,
            });
        }
        bets.push((kind, stake));
    }
    Ok(bets)
}
