//! Money as people type and read it: the parsing and printing live in `banco_rules::amount`
//! (shared with the fuzz target); here they are named for the command line.

pub(crate) use banco_rules::amount::{money, parse_stake, signed_money};

#[cfg(test)]
mod tests {
    use super::*;
    use banco_rules::parse_amount;

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
