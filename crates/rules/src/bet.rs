//! Bet positions, payout ratios and paytables. Paytables are data: a table's config can
//! carry its own, and the presets below are just values of the same type.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A betting position on the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BetKind {
    Player,
    Banker,
    Tie,
    PlayerPair,
    BankerPair,
    EitherPair,
    PerfectPair,
    Big,
    Small,
}

/// A name that is not a bet position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a bet: expected player, banker, tie, player_pair, banker_pair, either_pair, perfect_pair, big or small"
)]
pub struct UnknownBet(pub String);

impl BetKind {
    pub const ALL: [BetKind; 9] = [
        BetKind::Player,
        BetKind::Banker,
        BetKind::Tie,
        BetKind::PlayerPair,
        BetKind::BankerPair,
        BetKind::EitherPair,
        BetKind::PerfectPair,
        BetKind::Big,
        BetKind::Small,
    ];

    /// The snake_case name used on the wire, in JSON and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            BetKind::Player => "player",
            BetKind::Banker => "banker",
            BetKind::Tie => "tie",
            BetKind::PlayerPair => "player_pair",
            BetKind::BankerPair => "banker_pair",
            BetKind::EitherPair => "either_pair",
            BetKind::PerfectPair => "perfect_pair",
            BetKind::Big => "big",
            BetKind::Small => "small",
        }
    }

    /// Player and Banker: the chances that push on a tie and that the progression cap watches.
    pub const fn is_main(self) -> bool {
        matches!(self, BetKind::Player | BetKind::Banker)
    }

    /// Position in [`BetKind::ALL`], for arrays indexed by bet.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Accepts the canonical name, `-` for `_`, and the short forms a croupier or a
    /// player types: `p`, `b`, `t`, `pp`, `bp`, `ep`/`either`, `perfect`.
    pub fn parse(text: &str) -> Result<BetKind, UnknownBet> {
        let lower = text.trim().to_ascii_lowercase().replace('-', "_");
        let kind = match lower.as_str() {
            "player" | "p" | "punto" => BetKind::Player,
            "banker" | "b" | "banco" => BetKind::Banker,
            "tie" | "t" => BetKind::Tie,
            "player_pair" | "pp" => BetKind::PlayerPair,
            "banker_pair" | "bp" => BetKind::BankerPair,
            "either_pair" | "ep" | "either" => BetKind::EitherPair,
            "perfect_pair" | "perfect" => BetKind::PerfectPair,
            "big" => BetKind::Big,
            "small" => BetKind::Small,
            _ => return Err(UnknownBet(text.to_owned())),
        };
        Ok(kind)
    }
}

impl fmt::Display for BetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BetKind {
    type Err = UnknownBet;
    fn from_str(s: &str) -> Result<BetKind, UnknownBet> {
        BetKind::parse(s)
    }
}

/// One value per betting position, named as the positions are on the wire and in JSON
/// (`player`, `banker`, …, `small`): probabilities, returns, totals per position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PerBet<T> {
    pub player: T,
    pub banker: T,
    pub tie: T,
    pub player_pair: T,
    pub banker_pair: T,
    pub either_pair: T,
    pub perfect_pair: T,
    pub big: T,
    pub small: T,
}

impl<T> PerBet<T> {
    /// Builds each position's value from its kind.
    pub fn from_fn(mut value: impl FnMut(BetKind) -> T) -> PerBet<T> {
        PerBet {
            player: value(BetKind::Player),
            banker: value(BetKind::Banker),
            tie: value(BetKind::Tie),
            player_pair: value(BetKind::PlayerPair),
            banker_pair: value(BetKind::BankerPair),
            either_pair: value(BetKind::EitherPair),
            perfect_pair: value(BetKind::PerfectPair),
            big: value(BetKind::Big),
            small: value(BetKind::Small),
        }
    }

    pub const fn get(&self, kind: BetKind) -> &T {
        match kind {
            BetKind::Player => &self.player,
            BetKind::Banker => &self.banker,
            BetKind::Tie => &self.tie,
            BetKind::PlayerPair => &self.player_pair,
            BetKind::BankerPair => &self.banker_pair,
            BetKind::EitherPair => &self.either_pair,
            BetKind::PerfectPair => &self.perfect_pair,
            BetKind::Big => &self.big,
            BetKind::Small => &self.small,
        }
    }
}

/// Winnings per unit staked, as an exact fraction `numerator / denominator`.
/// `0.95:1` is 95/100, `8:1` is 8/1, `1:2` is 1/2. The stake itself comes back on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Payout {
    numerator: u32,
    denominator: u32,
}

/// Why a payout text such as `0.95:1` could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a payout: expected `WIN:STAKE` such as `1:1`, `0.95:1`, `8:1` or `1:2` ({why})"
)]
pub struct PayoutParseError {
    pub input: String,
    pub why: &'static str,
}

impl Payout {
    /// `None` when the denominator is zero.
    pub const fn new(numerator: u32, denominator: u32) -> Option<Payout> {
        if denominator == 0 {
            None
        } else {
            Some(Payout {
                numerator,
                denominator,
            })
        }
    }

    pub const fn numerator(self) -> u32 {
        self.numerator
    }

    pub const fn denominator(self) -> u32 {
        self.denominator
    }

    /// Winnings per unit staked as a float, for odds and reports (never for money).
    pub fn as_f64(self) -> f64 {
        f64::from(self.numerator) / f64::from(self.denominator)
    }

    pub fn parse(input: &str) -> Result<Payout, PayoutParseError> {
        let err = |why| PayoutParseError {
            input: input.to_owned(),
            why,
        };
        let (win, stake) = input.trim().split_once(':').ok_or_else(|| err("no `:`"))?;
        let (wn, wd) = parse_decimal(win).ok_or_else(|| err("bad winning amount"))?;
        let (sn, sd) = parse_decimal(stake).ok_or_else(|| err("bad stake amount"))?;
        if sn == 0 {
            return Err(err("the stake side is zero"));
        }
        // win/stake = (wn/wd) / (sn/sd) = wn*sd / (wd*sn)
        let numerator = wn.checked_mul(sd).ok_or_else(|| err("too large"))?;
        let denominator = wd.checked_mul(sn).ok_or_else(|| err("too large"))?;
        let g = gcd(numerator, denominator);
        let numerator = u32::try_from(numerator / g).map_err(|_| err("too large"))?;
        let denominator = u32::try_from(denominator / g).map_err(|_| err("too large"))?;
        Ok(Payout {
            numerator,
            denominator,
        })
    }
}

/// `"0.95"` as (95, 100); at most 6 decimals, no sign.
fn parse_decimal(text: &str) -> Option<(u64, u64)> {
    let text = text.trim();
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty()
        || frac.len() > 6
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if int.len() > 9 {
        return None;
    }
    let scale = 10u64.pow(frac.len() as u32);
    let int: u64 = int.parse().ok()?;
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    Some((int * scale + frac, scale))
}

const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    if a == 0 { 1 } else { a }
}

impl fmt::Display for Payout {
    /// `1:1`, `0.95:1`, `1.5:1`, `8:1`; one unit against several and ratios with no short
    /// decimal form print as `NUM:DEN` (`1:2`, `2:3`), as casinos print them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, d) = (u64::from(self.numerator), u64::from(self.denominator));
        if n % d == 0 {
            return write!(f, "{}:1", n / d);
        }
        if n == 1 {
            return write!(f, "1:{d}");
        }
        match short_decimal(i128::from(n), i128::from(d), 6) {
            Some(decimal) => write!(f, "{decimal}:1"),
            None => write!(f, "{n}:{d}"),
        }
    }
}

/// `n / d` written as a decimal with at most `max_places` places (`0.95`, `1.5`), or
/// `None` when it has no such exact form (`1/3`) or `d` is not positive.
pub(crate) fn short_decimal(n: i128, d: i128, max_places: u32) -> Option<String> {
    if d <= 0 {
        return None;
    }
    if n % d == 0 {
        return Some((n / d).to_string());
    }
    (1..=max_places).find_map(|places| {
        let scale = 10i128.pow(places);
        ((n * scale) % d == 0).then(|| {
            let digits = n * scale / d;
            format!(
                "{}.{:0width$}",
                digits / scale,
                digits % scale,
                width = places as usize
            )
        })
    })
}

impl FromStr for Payout {
    type Err = PayoutParseError;
    fn from_str(s: &str) -> Result<Payout, PayoutParseError> {
        Payout::parse(s)
    }
}

impl Serialize for Payout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Payout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Payout, D::Error> {
        let text = String::deserialize(deserializer)?;
        Payout::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What each position pays on a win. Player and Banker push on a tie; every other
/// position wins or loses on its own event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paytable {
    pub name: String,
    pub player: Payout,
    pub banker: Payout,
    /// "No commission" tables: a Banker win with a total of 6 pays this instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banker_win_on_six: Option<Payout>,
    pub tie: Payout,
    pub player_pair: Payout,
    pub banker_pair: Payout,
    pub either_pair: Payout,
    pub perfect_pair: Payout,
    pub big: Payout,
    pub small: Payout,
}

/// A paytable name that is not a preset.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a paytable: expected standard, no-commission or tie-9")]
pub struct UnknownPaytable(pub String);

const fn ratio(numerator: u32, denominator: u32) -> Payout {
    Payout {
        numerator,
        denominator,
    }
}

impl Paytable {
    /// The names accepted by [`Paytable::preset`].
    pub const PRESETS: [&'static str; 3] = ["standard", "no-commission", "tie-9"];

    /// The defaults of docs/src/rules/bets.md: Banker 0.95:1, Tie 8:1, pairs 11:1, Either Pair 5:1,
    /// Perfect Pair 25:1, Big 0.54:1, Small 1.5:1.
    pub fn standard() -> Paytable {
        Paytable {
            name: "standard".to_owned(),
            player: ratio(1, 1),
            banker: ratio(19, 20),
            banker_win_on_six: None,
            tie: ratio(8, 1),
            player_pair: ratio(11, 1),
            banker_pair: ratio(11, 1),
            either_pair: ratio(5, 1),
            perfect_pair: ratio(25, 1),
            big: ratio(27, 50),
            small: ratio(3, 2),
        }
    }

    /// Banker pays 1:1, except a Banker win on a total of 6, which pays 1:2.
    pub fn no_commission() -> Paytable {
        Paytable {
            name: "no-commission".to_owned(),
            banker: ratio(1, 1),
            banker_win_on_six: Some(ratio(1, 2)),
            ..Paytable::standard()
        }
    }

    /// Standard, with Tie at 9:1 (seed 002).
    pub fn tie_9() -> Paytable {
        Paytable {
            name: "tie-9".to_owned(),
            tie: ratio(9, 1),
            ..Paytable::standard()
        }
    }

    pub fn preset(name: &str) -> Result<Paytable, UnknownPaytable> {
        match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "standard" => Ok(Paytable::standard()),
            "no-commission" | "nocommission" => Ok(Paytable::no_commission()),
            "tie-9" | "tie9" => Ok(Paytable::tie_9()),
            _ => Err(UnknownPaytable(name.to_owned())),
        }
    }

    /// What a winning bet on `kind` pays, but for the Banker-on-six exception
    /// (see [`Paytable::banker_pays`]).
    pub fn pays(&self, kind: BetKind) -> Payout {
        match kind {
            BetKind::Player => self.player,
            BetKind::Banker => self.banker,
            BetKind::Tie => self.tie,
            BetKind::PlayerPair => self.player_pair,
            BetKind::BankerPair => self.banker_pair,
            BetKind::EitherPair => self.either_pair,
            BetKind::PerfectPair => self.perfect_pair,
            BetKind::Big => self.big,
            BetKind::Small => self.small,
        }
    }

    /// What a winning Banker bet pays when Banker wins with `banker_total`.
    pub fn banker_pays(&self, banker_total: u8) -> Payout {
        match self.banker_win_on_six {
            Some(six) if banker_total == 6 => six,
            _ => self.banker,
        }
    }
}

impl Default for Paytable {
    fn default() -> Paytable {
        Paytable::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payouts_read_and_print_as_people_write_them() {
        for (text, n, d, shown) in [
            ("1:1", 1, 1, "1:1"),
            ("0.95:1", 19, 20, "0.95:1"),
            ("19:20", 19, 20, "0.95:1"),
            ("8:1", 8, 1, "8:1"),
            ("1.5:1", 3, 2, "1.5:1"),
            ("0.54:1", 27, 50, "0.54:1"),
            ("1:2", 1, 2, "1:2"),
            ("2:3", 2, 3, "2:3"),
        ] {
            let p = Payout::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((p.numerator(), p.denominator()), (n, d), "{text}");
            assert_eq!(p.to_string(), shown, "{text}");
        }
        for bad in [
            "",
            "1",
            "1:0",
            "-1:1",
            "a:1",
            "1:1:1",
            "0.1234567:1",
            "1e3:1",
        ] {
            let err = Payout::parse(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn presets_and_their_names() {
        for name in Paytable::PRESETS {
            assert_eq!(Paytable::preset(name).map(|p| p.name), Ok(name.to_owned()));
        }
        assert_eq!(Paytable::no_commission().banker_pays(6), ratio(1, 2));
        assert_eq!(Paytable::no_commission().banker_pays(7), ratio(1, 1));
        assert_eq!(Paytable::standard().banker_pays(6), ratio(19, 20));
        assert_eq!(Paytable::tie_9().pays(BetKind::Tie), ratio(9, 1));
        assert!(Paytable::preset("vegas").is_err());
    }

    #[test]
    fn paytable_round_trips_as_data() {
        let table = Paytable::no_commission();
        let json = serde_json::to_string(&table).expect("serialize");
        assert!(json.contains("\"banker\":\"1:1\""), "{json}");
        let back: Paytable = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, table);
    }

    #[test]
    fn bet_names() {
        for kind in BetKind::ALL {
            assert_eq!(BetKind::parse(kind.name()), Ok(kind));
            assert_eq!(BetKind::ALL[kind.index()], kind);
        }
        assert_eq!(BetKind::parse("PP"), Ok(BetKind::PlayerPair));
        assert_eq!(BetKind::parse("either-pair"), Ok(BetKind::EitherPair));
        assert!(BetKind::parse("dragon").is_err());
    }
}
