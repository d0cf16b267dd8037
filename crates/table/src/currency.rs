//! The money a table plays in, and how the table's own sentences show its amounts and
//! instants to people: `€5,025.00`, `2026-12-01T19:27:30.323Z`. The numbers themselves stay
//! in the variants' fields, exact, for programs.

use std::fmt;

use banco_rules::Money;
use serde::{Deserialize, Serialize};

/// The ISO 4217 code of a table's money (`EUR`). Every amount at the table, its limits,
/// stakes and balances, is in this currency's minor units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency([u8; 3]);

/// A currency code that is not three capital letters.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("currency `{0}`: must be an ISO 4217 code of three capital letters, such as EUR")]
pub struct BadCurrency(pub String);

impl Currency {
    pub const EUR: Currency = Currency(*b"EUR");

    pub fn parse(code: &str) -> Result<Currency, BadCurrency> {
        match <[u8; 3]>::try_from(code.as_bytes()) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_uppercase) => Ok(Currency(bytes)),
            _ => Err(BadCurrency(code.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        // Three ASCII capitals, checked by `parse`, the only way in.
        std::str::from_utf8(&self.0).unwrap_or("")
    }

    /// `minor` units of this currency as people read them.
    pub fn amount(&self, minor: i64) -> Money<'_> {
        Money::new(minor, self.as_str())
    }
}

impl Default for Currency {
    fn default() -> Currency {
        Currency::EUR
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Currency {
    type Error = BadCurrency;

    fn try_from(code: String) -> Result<Currency, BadCurrency> {
        Currency::parse(&code)
    }
}

impl From<Currency> for String {
    fn from(currency: Currency) -> String {
        currency.as_str().to_owned()
    }
}

/// An instant of the server clock (unix milliseconds) in RFC 3339, UTC, to the
/// millisecond: the same for every reader wherever they are. One past the calendar's
/// range (year 9999) is shown as the number it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc(pub u64);

impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match i64::try_from(self.0)
            .ok()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        {
            Some(at) => write!(f, "{at:.3}"),
            None => write!(f, "{} (unix ms, past the calendar)", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_three_capitals() {
        assert_eq!(Currency::parse("EUR"), Ok(Currency::EUR));
        assert_eq!(
            Currency::parse("CHF").map(|c| c.to_string()).as_deref(),
            Ok("CHF")
        );
        for bad in ["", "EU", "EURO", "eur", "E1R", "€€€", "ÉUR"] {
            let err = Currency::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
        assert_eq!(Currency::EUR.amount(502_500).to_string(), "€5,025.00");
        assert_eq!(
            Currency::parse("CHF")
                .map(|c| c.amount(-45_140).to_string())
                .as_deref(),
            Ok("-451.40 CHF")
        );
    }

    #[test]
    fn a_currency_reads_and_writes_as_its_code() {
        assert_eq!(
            serde_json::to_string(&Currency::EUR).ok().as_deref(),
            Some("\"EUR\"")
        );
        let err = serde_json::from_str::<Currency>("\"eur\"").expect_err("lower case");
        assert!(err.to_string().contains("ISO 4217"), "{err}");
    }

    #[test]
    fn instants_are_rfc_3339_utc_to_the_millisecond() {
        assert_eq!(
            Utc(1_796_153_250_323).to_string(),
            "2026-12-01T19:27:30.323Z"
        );
        assert_eq!(Utc(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Utc(16_000).to_string(), "1970-01-01T00:00:16.000Z");
        assert_eq!(
            Utc(u64::MAX).to_string(),
            "18446744073709551615 (unix ms, past the calendar)"
        );
    }
}
