//! Money as people type and read it: major units with up to two decimals (`25`, `2.50`),
//! converted exactly to the wire's minor units. No floats: `2.555` is refused, never rounded.

use anyhow::{bail, ensure};

/// Minor units per major unit (every table currency so far has two decimals: EUR, USD, GBP).
const MINOR_PER_MAJOR: i64 = 100;

/// A positive stake typed by a person, in minor units. `what` names the argument in errors
/// (e.g. `player=2.555`).
pub(crate) fn parse_stake(what: &str, text: &str) -> anyhow::Result<i64> {
    let minor = parse_amount(what, text)?;
    ensure!(minor > 0, "{what}: the amount must be more than zero");
    Ok(minor)
}

/// A non-negative amount in major units (`0`, `25`, `2.5`, `2.50`), in minor units.
pub(crate) fn parse_amount(what: &str, text: &str) -> anyhow::Result<i64> {
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if text.starts_with('-') {
        bail!("{what}: `{text}` is negative; amounts are positive");
    }
    if !digits_only(whole) {
        bail!("{what}: `{text}` is not an amount (expected e.g. 25 or 2.50)");
    }
    let cents = match fraction {
        None => 0,
        Some(f) if !digits_only(f) => {
            bail!("{what}: `{text}` is not an amount (expected e.g. 25 or 2.50)")
        }
        Some(f) if f.len() > 2 => {
            bail!("{what}: `{text}` has more than 2 decimals; the smallest unit is 0.01")
        }
        Some(f) => {
            let value: i64 = f.parse()?;
            if f.len() == 1 { value * 10 } else { value }
        }
    };
    let too_large = || anyhow::anyhow!("{what}: `{text}` is too large");
    let whole: i64 = whole.parse().map_err(|_| too_large())?;
    whole
        .checked_mul(MINOR_PER_MAJOR)
        .and_then(|m| m.checked_add(cents))
        .ok_or_else(too_large)
}

/// `1900` → `19.00`, `-5` → `-0.05`.
pub(crate) fn money(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    let per = MINOR_PER_MAJOR.unsigned_abs();
    format!("{sign}{}.{:02}", abs / per, abs % per)
}

/// A change, always signed: `+19.00`, `-25.00`, `+0.00`.
pub(crate) fn signed_money(minor: i64) -> String {
    if minor < 0 {
        money(minor)
    } else {
        format!("+{}", money(minor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_amounts_are_exact() {
        for (text, minor) in [
            ("25", 2_500),
            ("2.50", 250),
            ("2.5", 250),
            ("0.01", 1),
            ("0.10", 10),
            ("007", 700),
            ("1000000", 100_000_000),
            ("92233720368547758.07", i64::MAX),
        ] {
            assert_eq!(parse_stake("x", text).ok(), Some(minor), "{text}");
        }
        assert_eq!(parse_amount("x", "0").ok(), Some(0));
    }

    #[test]
    fn bad_amounts_name_the_argument() {
        for text in [
            "2.555",
            "-1",
            "-0.5",
            "0",
            "0.00",
            "",
            "abc",
            "1e3",
            "+5",
            ".5",
            "5.",
            "1,5",
            "2.5.0",
            " 5",
            "5 ",
            "1_000",
            "92233720368547758.08",
            "99999999999999999999",
        ] {
            let err = parse_stake("player=…", text).expect_err(text).to_string();
            assert!(err.starts_with("player=…: "), "{text}: {err}");
        }
        let err = parse_stake("tie=2.555", "2.555")
            .expect_err("3 decimals")
            .to_string();
        assert!(err.contains("2 decimals"), "{err}");
        let err = parse_stake("tie=0", "0").expect_err("zero").to_string();
        assert!(err.contains("more than zero"), "{err}");
        let err = parse_stake("tie=-3", "-3")
            .expect_err("negative")
            .to_string();
        assert!(err.contains("negative"), "{err}");
    }

    #[test]
    fn money_prints_two_decimals() {
        assert_eq!(money(1_900), "19.00");
        assert_eq!(money(5), "0.05");
        assert_eq!(money(0), "0.00");
        assert_eq!(money(-2_505), "-25.05");
        assert_eq!(money(i64::MIN), "-92233720368547758.08");
        assert_eq!(signed_money(1_900), "+19.00");
        assert_eq!(signed_money(0), "+0.00");
        assert_eq!(signed_money(-100), "-1.00");
    }
}
