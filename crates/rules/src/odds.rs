//! Exact odds of any shoe, full or depleted.
//!
//! Regulators and players compare a table's published return to player with this module,
//! and a depleted shoe's odds are shown live, so the figures are computed exactly, never
//! simulated: every quantity is a count of ordered draws without replacement, kept in
//! integers, and divided once at the end.
//!
//! - Main bets (and Big/Small): the deal is enumerated over card *values* (ten classes),
//!   each sequence weighted by the product of the falling counts. Cards are exchangeable,
//!   so a sequence's weight depends only on the multiset of values it draws; the two
//!   cards of each hand are therefore enumerated as unordered pairs with a multiplicity.
//!   Every outcome is counted in units of six-card ordered draws (a coup that stops after
//!   four or five cards is weighted by the ways the unused positions could be filled), so
//!   all counts share the denominator `n(n−1)…(n−5)`.
//! - Pairs and Perfect Pairs: closed forms over rank and card counts, with the joint
//!   four-card count of "both hands pair" for the inclusion–exclusion of the "either" bets.
//!
//! The third-card rule is asked of [`crate::draw`]; it is written down nowhere else.

use serde::Serialize;

use crate::bet::{BetKind, Paytable, PerBet};
use crate::composition::Composition;
use crate::draw::{banker_draws, is_natural, player_draws};

/// A coup may deal six cards; a shoe with fewer has no defined odds.
pub const MIN_CARDS: u32 = 6;

/// Above this many cards the six-card counts could overflow `u128`; a real shoe holds
/// at most 416 (8 decks), so this is only reached by a nonsensical composition.
pub const MAX_CARDS: u32 = 4096;

/// Why the odds of a shoe cannot be computed. Each variant names the card count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OddsError {
    #[error("only {cards} cards left in the shoe: a coup may need {MIN_CARDS}")]
    TooFewCards { cards: u32 },
    #[error("{cards} cards in the shoe: exact odds are computed for at most {MAX_CARDS}")]
    TooManyCards { cards: u32 },
}

/// The probability of each event of the next coup dealt from a shoe.
///
/// Serialises as the bet names (`banker`, `player`, …, `small`) with the probability that a
/// bet there wins; `banker_win_on_six` is an ingredient of the no-commission return, not a
/// bet, and is left out of the serialised form.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Probabilities {
    /// Per position, the probability that a bet there wins (for Player and Banker, not
    /// counting the push on a tie; Either Pair and Perfect Pair: at least one hand).
    #[serde(flatten)]
    pub wins: PerBet<f64>,
    /// Banker wins with a final total of 6 (part of `wins.banker`).
    #[serde(skip)]
    pub banker_win_on_six: f64,
}

impl Probabilities {
    /// The probability that a bet on `kind` wins.
    pub fn get(&self, kind: BetKind) -> f64 {
        *self.wins.get(kind)
    }
}

/// Return to player per bet, as a fraction of the stake (0.989426 is 98.9426 %).
pub type Rtp = PerBet<f64>;

impl PerBet<f64> {
    /// For an [`Rtp`]: `1 − rtp`, the house's expected gain per unit staked.
    pub fn house_edge(&self, kind: BetKind) -> f64 {
        1.0 - self.get(kind)
    }
}

/// The return to player of every bet under `paytable`.
///
/// Player and Banker push on a tie, so a tie returns the stake (`+ P(tie)`). A Banker win
/// with a total of 6 is paid at [`Paytable::banker_pays`]`(6)`, so a no-commission table is
/// handled by the same formula as a standard one.
pub fn rtp(p: &Probabilities, paytable: &Paytable) -> Rtp {
    let win = |kind: BetKind| p.get(kind) * (1.0 + paytable.pays(kind).as_f64());
    let banker_six = p.banker_win_on_six;
    PerBet::from_fn(|kind| match kind {
        BetKind::Banker => {
            (p.wins.banker - banker_six) * (1.0 + paytable.pays(kind).as_f64())
                + banker_six * (1.0 + paytable.banker_pays(6).as_f64())
                + p.wins.tie
        }
        BetKind::Player => win(kind) + p.wins.tie,
        _ => win(kind),
    })
}

/// The exact probabilities of the next coup dealt from `shoe`.
pub fn probabilities(shoe: &Composition) -> Result<Probabilities, OddsError> {
    let cards = shoe.len();
    if cards < MIN_CARDS {
        return Err(OddsError::TooFewCards { cards });
    }
    if cards > MAX_CARDS {
        return Err(OddsError::TooManyCards { cards });
    }
    let n = u64::from(cards);

    let main = main_counts(shoe.value_counts(), n);
    let d6 = falling(n, 6);
    let ratio6 = |count: u128| ratio(count, d6);

    let ranks = pair_counts(shoe.rank_counts().iter().map(|&c| u64::from(c)), n);
    let same_card = pair_counts(shoe.counts().iter().map(|&c| u64::from(c)), n);

    Ok(Probabilities {
        wins: PerBet {
            banker: ratio6(main.banker),
            player: ratio6(main.player),
            tie: ratio6(main.tie),
            player_pair: ranks.one_hand(),
            banker_pair: ranks.one_hand(),
            either_pair: ranks.either_hand(),
            perfect_pair: same_card.either_hand(),
            big: ratio6(main.big),
            small: ratio6(d6 - main.big),
        },
        banker_win_on_six: ratio6(main.banker_six),
    })
}

/// `x (x−1) … (x−k+1)`, zero when `x < k`.
fn falling(x: u64, k: u64) -> u128 {
    if x < k {
        return 0;
    }
    (0..k).fold(1u128, |acc, i| acc * u128::from(x - i))
}

/// One division at the end; both conversions and the quotient round once each, so the
/// result is within a few units in the last place of the exact fraction.
fn ratio(numerator: u128, denominator: u128) -> f64 {
    numerator as f64 / denominator as f64
}

/// Counts of "a hand's first two cards fall in the same class" for a partition of the
/// shoe into classes (ranks for pairs, the 52 cards for perfect pairs).
struct PairCounts {
    /// Ordered two-card draws within one class, over `n(n−1)`.
    one: u128,
    /// Ordered four-card draws where cards 1–2 share a class and cards 3–4 share a class
    /// (the same or another), over `n(n−1)(n−2)(n−3)`.
    both: u128,
    n: u64,
}

fn pair_counts(classes: impl Iterator<Item = u64>, n: u64) -> PairCounts {
    let (mut one, mut squares, mut four_same) = (0u128, 0u128, 0u128);
    for count in classes {
        let f = falling(count, 2);
        one += f;
        squares += f * f;
        four_same += falling(count, 4);
    }
    // Σ_r Σ_s f(r)·f(s) over distinct classes, plus the same class drawn four times.
    PairCounts {
        one,
        both: one * one - squares + four_same,
        n,
    }
}

impl PairCounts {
    fn one_hand(&self) -> f64 {
        ratio(self.one, falling(self.n, 2))
    }

    /// P(player) + P(banker) − P(both), as one fraction over the four-card count.
    fn either_hand(&self) -> f64 {
        let rest = u128::from(self.n - 2) * u128::from(self.n - 3);
        ratio(2 * self.one * rest - self.both, falling(self.n, 4))
    }
}

/// Main-bet counts in units of ordered six-card draws.
#[derive(Default)]
struct MainCounts {
    banker: u128,
    player: u128,
    tie: u128,
    /// Five or six cards dealt.
    big: u128,
    /// Banker wins with a final total of 6.
    banker_six: u128,
}

/// Counts of one four-card start, in units of ordered two-card continuations.
#[derive(Default)]
struct Local {
    banker: u64,
    player: u64,
    tie: u64,
    big: u64,
    banker_six: u64,
}

impl Local {
    #[inline]
    fn add(&mut self, player_total: usize, banker_total: usize, weight: u64) {
        match player_total.cmp(&banker_total) {
            std::cmp::Ordering::Greater => self.player += weight,
            std::cmp::Ordering::Equal => self.tie += weight,
            std::cmp::Ordering::Less => {
                self.banker += weight;
                if banker_total == 6 {
                    self.banker_six += weight;
                }
            }
        }
    }
}

fn main_counts(values: [u32; 10], n: u64) -> MainCounts {
    let mut left = values.map(u64::from);
    let mut out = MainCounts::default();
    // Player's two cards {a, b} and Banker's {c, d}, each as an unordered pair.
    for a in 0..10 {
        if left[a] == 0 {
            continue;
        }
        let wa = left[a];
        left[a] -= 1;
        for b in a..10 {
            if left[b] == 0 {
                continue;
            }
            let wb = wa * left[b];
            left[b] -= 1;
            let player_total = (a + b) % 10;
            let player_orders = if a == b { 1 } else { 2 };
            for c in 0..10 {
                if left[c] == 0 {
                    continue;
                }
                let wc = wb * left[c];
                left[c] -= 1;
                for d in c..10 {
                    if left[d] == 0 {
                        continue;
                    }
                    let wd = wc * left[d];
                    left[d] -= 1;
                    let banker_orders = if c == d { 1 } else { 2 };
                    let weight = u128::from(wd * player_orders * banker_orders);
                    let local = finish(player_total, (c + d) % 10, &mut left, n - 4);
                    out.banker += weight * u128::from(local.banker);
                    out.player += weight * u128::from(local.player);
                    out.tie += weight * u128::from(local.tie);
                    out.big += weight * u128::from(local.big);
                    out.banker_six += weight * u128::from(local.banker_six);
                    left[d] += 1;
                }
                left[c] += 1;
            }
            left[b] += 1;
        }
        left[a] += 1;
    }
    out
}

/// The rest of a coup after the first four cards, with `m` cards left (`left` holds them
/// by value; it is restored before returning). Counts are in ordered two-card
/// continuations, `m(m−1)` in all.
fn finish(player_total: usize, banker_total: usize, left: &mut [u64; 10], m: u64) -> Local {
    let mut local = Local::default();
    let all = m * (m - 1);
    // Totals are 0..=9, so the narrowing casts below are exact.
    if is_natural(player_total as u8) || is_natural(banker_total as u8) {
        local.add(player_total, banker_total, all);
        return local;
    }
    if !player_draws(player_total as u8) {
        if banker_draws(banker_total as u8, None) {
            // Fifth card to Banker; the sixth position is free.
            for (third, &count) in left.iter().enumerate() {
                let weight = count * (m - 1);
                if weight != 0 {
                    local.add(player_total, (banker_total + third) % 10, weight);
                }
            }
            local.big = all;
        } else {
            local.add(player_total, banker_total, all);
        }
        return local;
    }
    local.big = all;
    for third in 0..10 {
        let ways = left[third];
        if ways == 0 {
            continue;
        }
        let player_final = (player_total + third) % 10;
        if banker_draws(banker_total as u8, Some(third as u8)) {
            left[third] -= 1;
            for (banker_third, &count) in left.iter().enumerate() {
                let weight = ways * count;
                if weight != 0 {
                    local.add(player_final, (banker_total + banker_third) % 10, weight);
                }
            }
            left[third] += 1;
        } else {
            local.add(player_final, banker_total, ways * (m - 1));
        }
    }
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falling_factorials() {
        assert_eq!(falling(5, 0), 1);
        assert_eq!(falling(5, 2), 20);
        assert_eq!(falling(3, 4), 0);
        assert_eq!(falling(416, 6), 416 * 415 * 414 * 413 * 412 * 411);
    }

    #[test]
    fn main_counts_cover_every_six_card_draw() {
        for decks in 1..=8u8 {
            let shoe = Composition::full(decks).expect("decks");
            let n = u64::from(shoe.len());
            let main = main_counts(shoe.value_counts(), n);
            assert_eq!(
                main.banker + main.player + main.tie,
                falling(n, 6),
                "{decks}"
            );
        }
    }

    #[test]
    fn card_count_limits_are_named() {
        let mut counts = [0u16; 52];
        counts[..5].fill(1);
        let err = probabilities(&Composition::from_counts(counts)).expect_err("5 cards");
        assert_eq!(err, OddsError::TooFewCards { cards: 5 });
        assert!(err.to_string().contains("only 5 cards"), "{err}");
        let huge = Composition::from_counts([100; 52]);
        let err = probabilities(&huge).expect_err("5200 cards");
        assert!(err.to_string().contains("5200 cards"), "{err}");
    }
}
