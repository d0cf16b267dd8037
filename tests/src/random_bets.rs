//! Seeded random bets for the model-checked runs, so that they bet the same mix.

use std::collections::BTreeSet;

use banco_rules::BetKind;
use rand_chacha::ChaCha20Rng;
use rand_core::Rng as _;

/// A number below `n` (the bias of the modulo is nothing at these sizes).
pub fn below(rng: &mut ChaCha20Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// 1 to 3 positions; mostly within the limits, some under the minimum (raised), a few
/// over the maximum (refused), a Tie alone now and then (refused).
pub fn random_request(rng: &mut ChaCha20Rng) -> Vec<(BetKind, i64)> {
    random_positions(rng)
        .into_iter()
        .map(|k| {
            let amount = match below(rng, 10) {
                0 => 1 + below(rng, 499) as i64,
                1 => 10_201 + below(rng, 1_000) as i64,
                _ => 500 + below(rng, 4_000) as i64,
            };
            (k, amount)
        })
        .collect()
}

/// 1 to 3 positions, each once, any of them.
pub fn random_positions(rng: &mut ChaCha20Rng) -> BTreeSet<BetKind> {
    let n = 1 + below(rng, 3) as usize;
    let mut kinds = BTreeSet::new();
    while kinds.len() < n {
        kinds.insert(BetKind::ALL[below(rng, 9) as usize]);
    }
    kinds
}
