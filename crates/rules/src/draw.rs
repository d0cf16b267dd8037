//! The third-card rule (tableau) of Punto Banco, as pure functions of totals.
//!
//! These are the only place the tableau is written down; the coup, the exact odds and
//! the validator all ask here, so they can never disagree.

/// A two-card total of 8 or 9: both hands stand, whatever the other holds.
pub const fn is_natural(two_card_total: u8) -> bool {
    two_card_total >= 8
}

/// Whether Player draws a third card on this two-card total (neither hand a natural).
/// 0–5 draws, 6–7 stands.
pub const fn player_draws(player_total: u8) -> bool {
    player_total <= 5
}

/// Whether Banker draws a third card (neither hand a natural).
///
/// `player_third` is the value (0..=9) of Player's third card, or `None` when Player stood.
/// When Player stood, Banker draws on 0–5 like Player. Otherwise the tableau of
/// docs/src/rules/drawing.md.
pub const fn banker_draws(banker_total: u8, player_third: Option<u8>) -> bool {
    match player_third {
        None => banker_total <= 5,
        Some(t) => match banker_total {
            0..=2 => true,
            3 => t != 8,
            4 => t >= 2 && t <= 7,
            5 => t >= 4 && t <= 7,
            6 => t == 6 || t == 7,
            _ => false,
        },
    }
}

/// Sum of card values mod 10.
pub fn total<I: IntoIterator<Item = u8>>(values: I) -> u8 {
    (values.into_iter().map(u32::from).sum::<u32>() % 10) as u8
}
