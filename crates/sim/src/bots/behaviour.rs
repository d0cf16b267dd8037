//! How a simulated player bets, as a pure function of its temperament, what it knows of
//! the round, and a seeded RNG: replayable, and testable without a table.
//!
//! People at a baccarat table mostly back Banker, some Player, a few chase Ties; they
//! stack a few chips of their usual size, now and then rebet or sit a hand out, add a pair
//! bet for fun, and never stake money they do not have.

use std::num::NonZeroU64;

use banco_rules::BetKind;
use banco_rules::shoe::random_below;
use rand_core::Rng;

/// The chips on the layout, in major units (seed 000).
pub(crate) const CHIPS: [i64; 5] = [1, 5, 25, 100, 500];
const MINOR_PER_MAJOR: i64 = 100;

/// The position a player comes back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Favourite {
    Banker,
    Player,
    /// Backs a main position, and a Tie most rounds.
    Tie,
}

/// One simulated player's habits, drawn once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Temperament {
    /// Only watches: never bets.
    pub(crate) watcher: bool,
    pub(crate) favourite: Favourite,
    /// The usual chip, an index into `CHIPS`.
    pub(crate) chip: usize,
    /// Percent of rounds sat out.
    pub(crate) skip: u64,
    /// Percent of rounds where the previous bets are simply repeated.
    pub(crate) rebet: u64,
    /// Percent of rounds with a pair bet on the side.
    pub(crate) side: u64,
    /// Percent of rounds on the favourite main position (the rest on the other one).
    pub(crate) loyalty: u64,
}

/// What the player knows when it decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoundView {
    /// (min, max) stake in minor units per position, indexed by `BetKind::index`.
    pub(crate) limits: [(i64, i64); 9],
    /// Available money, once known (a table may credit a welcome on the first bet, so a
    /// new player's zero is not yet a fact).
    pub(crate) balance: Option<i64>,
    /// The bets it placed in its previous round here (what Rebet repeats).
    pub(crate) previous: Vec<(BetKind, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A watcher: never bets.
    Watch,
    /// Cannot cover the table's minimum any more: stops betting.
    Broke,
    /// Sits this round out.
    Skip,
    /// Repeats the previous round's bets.
    Rebet,
    /// These stakes, in minor units (the main position first).
    Bets(Vec<(BetKind, i64)>),
}

fn below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    NonZeroU64::new(n).map_or(0, |n| random_below(rng, n))
}

fn chance<R: Rng + ?Sized>(rng: &mut R, percent: u64) -> bool {
    below(rng, 100) < percent
}

/// Picks from `weights` (summing to 100).
fn weighted<R: Rng + ?Sized>(rng: &mut R, weights: &[u64]) -> usize {
    let mut roll = below(rng, weights.iter().sum());
    for (i, &w) in weights.iter().enumerate() {
        if roll < w {
            return i;
        }
        roll -= w;
    }
    weights.len().saturating_sub(1)
}

impl Temperament {
    /// A player drawn from the population: `watchers_permille` of them only watch.
    pub(crate) fn draw<R: Rng + ?Sized>(rng: &mut R, watchers_permille: u64) -> Temperament {
        Temperament {
            watcher: below(rng, 1000) < watchers_permille,
            favourite: match weighted(rng, &[55, 35, 10]) {
                0 => Favourite::Banker,
                1 => Favourite::Player,
                _ => Favourite::Tie,
            },
            chip: weighted(rng, &[30, 35, 20, 10, 5]),
            skip: 5 + below(rng, 26),
            rebet: 10 + below(rng, 31),
            side: 3 + below(rng, 18),
            loyalty: 70 + below(rng, 26),
        }
    }
}

/// `count` chips of `chip` minor units, brought within `(min, max)`: raised to whole chips
/// over the minimum (a table minimum above the chip is met with more chips), lowered to
/// whole chips under the maximum, or the bound itself when no whole number of chips fits.
fn stack(chip: i64, count: i64, (min, max): (i64, i64)) -> i64 {
    let chip = chip.max(1);
    let mut stake = chip.saturating_mul(count);
    if stake < min {
        stake = (min / chip + i64::from(min % chip != 0)).saturating_mul(chip);
    }
    if stake > max {
        let fitted = max / chip * chip;
        stake = if fitted >= min { fitted } else { max };
    }
    stake
}

fn total(bets: &[(BetKind, i64)]) -> i64 {
    bets.iter().fold(0i64, |sum, b| sum.saturating_add(b.1))
}

/// One player's decision for one round.
pub(crate) fn decide<R: Rng + ?Sized>(t: &Temperament, view: &RoundView, rng: &mut R) -> Decision {
    if t.watcher {
        return Decision::Watch;
    }
    let limits = |kind: BetKind| view.limits[kind.index()];
    let cheapest_main = limits(BetKind::Player).0.min(limits(BetKind::Banker).0);
    if view.balance.is_some_and(|b| b < cheapest_main) {
        return Decision::Broke;
    }
    if chance(rng, t.skip) {
        return Decision::Skip;
    }
    if !view.previous.is_empty()
        && chance(rng, t.rebet)
        && view.balance.is_some_and(|b| total(&view.previous) <= b)
    {
        return Decision::Rebet;
    }
    let main = match t.favourite {
        Favourite::Banker if chance(rng, t.loyalty) => BetKind::Banker,
        Favourite::Banker => BetKind::Player,
        Favourite::Player if chance(rng, t.loyalty) => BetKind::Player,
        Favourite::Player => BetKind::Banker,
        Favourite::Tie if chance(rng, 60) => BetKind::Banker,
        Favourite::Tie => BetKind::Player,
    };
    // Mostly the usual chip, sometimes one size up or down.
    let chip_index = match below(rng, 10) {
        0 => t.chip.saturating_sub(1),
        1 => (t.chip + 1).min(CHIPS.len() - 1),
        _ => t.chip.min(CHIPS.len() - 1),
    };
    let chip = CHIPS[chip_index] * MINOR_PER_MAJOR;
    let count = 1 + below(rng, 3) as i64;
    let main_stake = stack(chip, count, limits(main));
    let mut bets = vec![(main, main_stake)];
    let tie_percent = if t.favourite == Favourite::Tie { 60 } else { 4 };
    if chance(rng, tie_percent) {
        bets.push((BetKind::Tie, stack(chip, 1, limits(BetKind::Tie))));
    }
    if chance(rng, t.side) {
        let pair = if chance(rng, 50) {
            BetKind::PlayerPair
        } else {
            BetKind::BankerPair
        };
        bets.push((pair, stack(chip, 1, limits(pair))));
    }
    // A new player whose money is not known yet starts with one modest main bet.
    let budget = view.balance.unwrap_or_else(|| stack(chip, 1, limits(main)));
    // Side bets go first; the Tie never stays without its main bet.
    while total(&bets) > budget && bets.len() > 1 {
        bets.pop();
    }
    if total(&bets) > budget {
        let (lo, _) = limits(main);
        let fitted = budget / chip * chip;
        let stake = if fitted >= lo { fitted } else { lo };
        if stake > budget {
            return Decision::Broke;
        }
        bets[0].1 = stake;
    }
    Decision::Bets(bets)
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng as _;

    use super::*;

    fn limits() -> [(i64, i64); 9] {
        let mut l = [(500, 10_200); 9];
        l[BetKind::Tie.index()] = (100, 2_000);
        l[BetKind::PlayerPair.index()] = (100, 1_000);
        l[BetKind::BankerPair.index()] = (100, 1_000);
        l
    }

    fn view(balance: Option<i64>) -> RoundView {
        RoundView {
            limits: limits(),
            balance,
            previous: vec![(BetKind::Banker, 2_500)],
        }
    }

    fn population(rng: &mut ChaCha20Rng, n: usize, watchers: u64) -> Vec<Temperament> {
        (0..n).map(|_| Temperament::draw(rng, watchers)).collect()
    }

    #[test]
    fn watchers_never_bet() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let t = Temperament {
            watcher: true,
            ..Temperament::draw(&mut rng, 0)
        };
        for _ in 0..1000 {
            assert_eq!(
                decide(&t, &view(Some(1_000_000)), &mut rng),
                Decision::Watch
            );
        }
        let all = population(&mut rng, 1000, 200);
        let watchers = all.iter().filter(|t| t.watcher).count();
        assert!((150..250).contains(&watchers), "{watchers} of 1000 watch");
        assert!(population(&mut rng, 500, 0).iter().all(|t| !t.watcher));
        assert!(population(&mut rng, 500, 1000).iter().all(|t| t.watcher));
    }

    #[test]
    fn never_over_the_balance_and_within_limits_and_tie_never_alone() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let people = population(&mut rng, 200, 0);
        let mut bets_seen = 0;
        for round in 0..20_000usize {
            let t = &people[round % people.len()];
            let balance = match round % 4 {
                0 => None,
                1 => Some(below(&mut rng, 2_000) as i64),
                2 => Some(below(&mut rng, 50_000) as i64),
                _ => Some(below(&mut rng, 5_000_000) as i64),
            };
            let v = view(balance);
            match decide(t, &v, &mut rng) {
                Decision::Bets(bets) => {
                    bets_seen += 1;
                    if let Some(b) = balance {
                        assert!(total(&bets) <= b, "{bets:?} over {b}");
                    }
                    assert!(bets[0].0.is_main(), "{bets:?}");
                    let tie = bets.iter().any(|b| b.0 == BetKind::Tie);
                    let main = bets.iter().any(|b| b.0.is_main());
                    assert!(!tie || main, "a Tie without a main bet: {bets:?}");
                    for &(kind, stake) in &bets {
                        let (lo, hi) = v.limits[kind.index()];
                        assert!(lo <= stake && stake <= hi, "{kind} {stake}");
                    }
                    let kinds: std::collections::BTreeSet<_> = bets.iter().map(|b| b.0).collect();
                    assert_eq!(kinds.len(), bets.len(), "one entry per position");
                }
                Decision::Rebet => {
                    let b = balance.unwrap_or(0);
                    assert!(total(&v.previous) <= b, "rebet over {b}");
                }
                Decision::Broke => {
                    assert!(balance.is_some_and(|b| b < 500), "broke with {balance:?}");
                }
                Decision::Skip => {}
                Decision::Watch => panic!("not a watcher"),
            }
        }
        assert!(bets_seen > 10_000, "{bets_seen}");
    }

    #[test]
    fn broke_below_the_minimum() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let t = Temperament {
            watcher: false,
            ..Temperament::draw(&mut rng, 0)
        };
        for _ in 0..100 {
            assert_eq!(decide(&t, &view(Some(499)), &mut rng), Decision::Broke);
            assert_ne!(decide(&t, &view(Some(500)), &mut rng), Decision::Broke);
        }
    }

    #[test]
    fn banker_most_then_player_few_ties_some_skips() {
        let mut rng = ChaCha20Rng::seed_from_u64(2026);
        let people = population(&mut rng, 500, 0);
        let mut main = [0u32; 2];
        let (mut ties, mut pairs, mut skips, mut rebets, mut bets, mut rounds) =
            (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
        for t in &people {
            for _ in 0..40 {
                rounds += 1;
                match decide(t, &view(Some(10_000_000)), &mut rng) {
                    Decision::Bets(b) => {
                        bets += 1;
                        match b[0].0 {
                            BetKind::Banker => main[0] += 1,
                            _ => main[1] += 1,
                        }
                        ties += u32::from(b.iter().any(|x| x.0 == BetKind::Tie));
                        pairs += u32::from(
                            b.iter()
                                .any(|x| matches!(x.0, BetKind::PlayerPair | BetKind::BankerPair)),
                        );
                    }
                    Decision::Skip => skips += 1,
                    Decision::Rebet => rebets += 1,
                    other => panic!("{other:?}"),
                }
            }
        }
        let share = |n: u32, of: u32| f64::from(n) / f64::from(of);
        assert!(
            main[0] > main[1],
            "Banker {} vs Player {}",
            main[0],
            main[1]
        );
        assert!(
            share(main[0], bets) > 0.5,
            "Banker share {}",
            share(main[0], bets)
        );
        assert!(
            share(main[1], bets) > 0.3,
            "Player share {}",
            share(main[1], bets)
        );
        let tie_share = share(ties, bets);
        assert!((0.05..0.2).contains(&tie_share), "Tie share {tie_share}");
        let pair_share = share(pairs, bets);
        assert!(
            (0.03..0.25).contains(&pair_share),
            "pair share {pair_share}"
        );
        let skip_share = share(skips, rounds);
        assert!((0.05..0.3).contains(&skip_share), "skip share {skip_share}");
        let rebet_share = share(rebets, rounds);
        assert!(
            (0.05..0.4).contains(&rebet_share),
            "rebet share {rebet_share}"
        );
    }

    #[test]
    fn chips_are_multiplied_up_to_a_high_minimum() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let t = Temperament {
            watcher: false,
            favourite: Favourite::Banker,
            chip: 0,
            skip: 0,
            rebet: 0,
            side: 0,
            loyalty: 100,
        };
        let mut v = view(Some(1_000_000));
        v.limits = [(20_000, 210_000); 9];
        for _ in 0..100 {
            let Decision::Bets(bets) = decide(&t, &v, &mut rng) else {
                panic!("bets expected");
            };
            assert_eq!(bets[0].0, BetKind::Banker);
            assert!(bets[0].1 >= 20_000 && bets[0].1 % 100 == 0, "{bets:?}");
        }
        assert_eq!(stack(100, 3, (500, 10_200)), 500);
        assert_eq!(stack(2_500, 2, (500, 10_200)), 5_000);
        assert_eq!(stack(50_000, 1, (500, 10_200)), 10_200);
        assert_eq!(stack(10_000, 1, (250, 10_200)), 10_000);
    }

    #[test]
    fn a_seed_replays_the_same_decisions() {
        let run = |seed| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let people = population(&mut rng, 20, 200);
            people
                .iter()
                .map(|t| decide(t, &view(Some(100_000)), &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }
}
