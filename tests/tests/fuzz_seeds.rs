//! The invariants of the fuzz targets in `fuzz/` (tokens, bets, scanner, config,
//! service_config), on stable: each target's committed seeds, and deterministic variations
//! of them (every truncation, and bytes flipped by a seeded generator), go through the same
//! checks libFuzzer runs in `cargo xtask ci`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng as _, SeedableRng as _};

#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/bets.rs"]
mod bets;
#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/config.rs"]
mod config;
#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/scanner.rs"]
mod scanner;
#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/service_config.rs"]
mod service_config;
#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/tokens.rs"]
mod tokens;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

/// Each seed, each of its prefixes, and `mutants` copies with a few bytes changed.
fn run(target: &str, mutants: usize, check: fn(&[u8])) -> usize {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5EC0_F022);
    let mut inputs = 0;
    for seed in seeds(target) {
        for end in 0..=seed.len() {
            check(&seed[..end]);
            inputs += 1;
        }
        for _ in 0..mutants {
            let mut input = seed.clone();
            for _ in 0..=rng.next_u32() % 3 {
                let at = rng.next_u32() as usize % (input.len() + 1);
                let byte = rng.next_u32() as u8;
                match rng.next_u32() % 3 {
                    0 if at < input.len() => input[at] = byte,
                    1 if at < input.len() => {
                        input.remove(at);
                    }
                    _ => input.insert(at, byte),
                }
            }
            check(&input);
            inputs += 1;
        }
    }
    inputs
}

#[test]
fn tokens_invariants_on_seeds() {
    assert!(run("tokens", 200, tokens::check) > 1_000);
}

#[test]
fn bets_invariants_on_seeds() {
    assert!(run("bets", 2_000, bets::check) > 10_000);
    // The oracle itself on what the notation allows and refuses.
    assert_eq!(bets::amount_oracle("2.5"), Some(250));
    assert_eq!(bets::amount_oracle("92233720368547758.07"), Some(i64::MAX));
    assert_eq!(bets::amount_oracle("92233720368547758.08"), None);
    assert_eq!(bets::amount_oracle("5."), None);
    assert_eq!(bets::amount_oracle(".5"), None);
}

#[test]
fn scanner_invariants_on_seeds() {
    assert!(run("scanner", 2_000, scanner::check) > 10_000);
}

#[test]
fn config_invariants_on_seeds() {
    assert!(run("config", 2_000, config::check) > 10_000);
}

#[test]
fn service_config_invariants_on_seeds() {
    // Each seed is a real config file of some service, so the round trip is exercised,
    // not only refusals.
    for seed in seeds("service_config") {
        assert!(
            !service_config::accepted_by(&seed).is_empty(),
            "{}",
            String::from_utf8_lossy(&seed)
        );
    }
    assert!(run("service_config", 2_000, service_config::check) > 10_000);
}
