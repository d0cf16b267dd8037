//! Exact odds of a full 8-deck shoe and of a depleted one (the live odds display
//! recomputes after every card, so this is on the table's hot path).
//!
//! The results are checked before anything is timed: a fast wrong answer is no answer.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use banco_rules::odds::probabilities;
use banco_rules::{Card, Composition};
use criterion::{Criterion, criterion_group, criterion_main};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

/// 8 decks less the first `dealt` cards of a seeded Fisher–Yates shuffle.
fn depleted(dealt: usize) -> Composition {
    let mut cards: Vec<Card> = (0..8).flat_map(|_| Card::ALL).collect();
    let mut rng = ChaCha20Rng::seed_from_u64(20_240_601);
    for i in (1..cards.len()).rev() {
        // The slight modulo bias is irrelevant to a benchmark.
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        cards.swap(i, j);
    }
    let mut shoe = Composition::full(8).unwrap();
    for &card in &cards[..dealt] {
        shoe.remove(card, 8).unwrap();
    }
    shoe
}

fn check(shoe: &Composition) {
    let p = probabilities(shoe).unwrap();
    assert!(
        (p.wins.banker + p.wins.player + p.wins.tie - 1.0).abs() < 1e-12,
        "{p:?}"
    );
    assert!((p.wins.big + p.wins.small - 1.0).abs() < 1e-12, "{p:?}");
}

fn bench(c: &mut Criterion) {
    let full = Composition::full(8).unwrap();
    let depleted = depleted(200);
    assert_eq!(depleted.len(), 216);
    check(&full);
    check(&depleted);
    let p = probabilities(&full).unwrap();
    assert_eq!((p.wins.banker * 1e6).round(), 458_597.0, "{p:?}");

    c.bench_function("probabilities/8 decks full", |b| {
        b.iter(|| probabilities(black_box(&full)))
    });
    c.bench_function("probabilities/8 decks less 200 cards", |b| {
        b.iter(|| probabilities(black_box(&depleted)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
