//! How fast `Coup::judge` replays hands, as an auditor's replay of the archive does.
//!
//! Hands are cut from seeded, shuffled 8-deck shoes before timing. The timed loop counts
//! Banker, Player and Tie wins and checks them against counts made beforehand by dealing
//! the same cards through `Coup::deal`, so a fast wrong answer cannot pass.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use banco_rules::Card;
use banco_rules::Winner;
use banco_rules::coup::Coup;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

const DECKS: usize = 8;
const HANDS: usize = 100_000;

/// Fisher–Yates; the slight modulo bias is irrelevant to a benchmark.
fn shuffle(cards: &mut [Card], rng: &mut ChaCha20Rng) {
    for i in (1..cards.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        cards.swap(i, j);
    }
}

/// Hands in dealing order (each 4–6 cards, packed with its length), cut from shoes
/// dealt down to the last 16 cards, and the winner counts found by dealing card by card.
fn prepare() -> (Vec<([Card; 6], usize)>, [u64; 3]) {
    let mut rng = ChaCha20Rng::seed_from_u64(0xBACC_A2A7);
    let mut hands = Vec::with_capacity(HANDS);
    let mut counts = [0u64; 3];
    while hands.len() < HANDS {
        let mut shoe: Vec<Card> = (0..DECKS).flat_map(|_| Card::ALL).collect();
        shuffle(&mut shoe, &mut rng);
        let mut next = 0;
        while next + 16 < shoe.len() && hands.len() < HANDS {
            let mut coup = Coup::new();
            while !coup.is_complete() {
                coup.deal(shoe[next]).unwrap();
                next += 1;
            }
            let mut packed = [Card::ALL[0]; 6];
            packed[..coup.cards_dealt()].copy_from_slice(coup.cards());
            hands.push((packed, coup.cards_dealt()));
            counts[slot(coup.result().unwrap().winner())] += 1;
        }
    }
    (hands, counts)
}

fn slot(winner: Winner) -> usize {
    match winner {
        Winner::Banker => 0,
        Winner::Player => 1,
        Winner::Tie => 2,
    }
}

fn judge_all(hands: &[([Card; 6], usize)]) -> [u64; 3] {
    let mut counts = [0u64; 3];
    for (cards, len) in hands {
        let result = Coup::judge(black_box(&cards[..*len])).unwrap();
        counts[slot(result.winner())] += 1;
    }
    counts
}

fn bench_judge(c: &mut Criterion) {
    let (hands, expected) = prepare();
    // Sanity: an 8-deck shoe gives Banker ≈ 45.9%, Player ≈ 44.6%, Tie ≈ 9.5%.
    let share = |n: u64| n as f64 / HANDS as f64;
    assert!((0.44..0.48).contains(&share(expected[0])), "{expected:?}");
    assert!((0.43..0.47).contains(&share(expected[1])), "{expected:?}");
    assert!((0.08..0.11).contains(&share(expected[2])), "{expected:?}");

    let mut group = c.benchmark_group("judge");
    group.throughput(Throughput::Elements(HANDS as u64));
    group.bench_function("8-deck hands", |b| {
        b.iter(|| {
            let counts = judge_all(&hands);
            assert_eq!(counts, expected);
            counts
        });
    });
    group.finish();
}

criterion_group!(benches, bench_judge);
criterion_main!(benches);
