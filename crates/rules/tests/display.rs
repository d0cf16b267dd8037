//! What people read: money with its currency and thousands separated, and the score of a
//! coup always Player first.

use banco_rules::{Money, Score, Winner};

#[test]
fn money_reads_as_people_write_it() {
    let cases: &[(i64, &str, &str)] = &[
        (0, "EUR", "€0.00"),
        (5, "EUR", "€0.05"),
        (10_200, "EUR", "€102.00"),
        (502_500, "EUR", "€5,025.00"),
        (123_456_789, "EUR", "€1,234,567.89"),
        (-45_140, "EUR", "-€451.40"),
        (2_500, "USD", "$25.00"),
        (2_500, "GBP", "£25.00"),
        (125_000, "CHF", "1,250.00 CHF"),
        (100_000, "", "1,000.00"),
        (i64::MIN, "EUR", "-€92,233,720,368,547,758.08"),
    ];
    for &(minor, currency, shown) in cases {
        assert_eq!(
            Money::new(minor, currency).to_string(),
            shown,
            "{minor} {currency}"
        );
    }
}

#[test]
fn a_change_always_shows_its_sign() {
    assert_eq!(Money::new(1_900, "EUR").signed().to_string(), "+€19.00");
    assert_eq!(Money::new(0, "EUR").signed().to_string(), "+€0.00");
    assert_eq!(Money::new(-2_500, "EUR").signed().to_string(), "-€25.00");
}

#[test]
fn the_score_is_player_first_whoever_won() {
    let banker_won = Score {
        player: 7,
        banker: 9,
    };
    assert_eq!(banker_won.to_string(), "Player 7 – Banker 9");
    assert_eq!(banker_won.winner(), Winner::Banker);
    let player_won = Score {
        player: 8,
        banker: 4,
    };
    assert_eq!(player_won.to_string(), "Player 8 – Banker 4");
    assert_eq!(player_won.winner(), Winner::Player);
    assert_eq!(
        Score {
            player: 5,
            banker: 5
        }
        .winner(),
        Winner::Tie
    );
}
