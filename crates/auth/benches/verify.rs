//! Throughput of token verification (what every authenticated RPC pays) and of issuing.
//! Prints figures; asserts nothing about time.

use std::hint::black_box;
use std::time::{Duration, UNIX_EPOCH};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{Issuer, Role};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let issuer =
        Issuer::new(signing_key_from_seed(&[1; 32]), "banco").unwrap_or_else(|e| panic!("{e}"));
    let verifier = issuer.verifier();
    let token = issuer
        .issue(
            "alice@casino.example",
            Role::Player,
            Duration::from_secs(3600),
            now,
        )
        .unwrap_or_else(|e| panic!("{e}"));

    let mut group = c.benchmark_group("token");
    group.throughput(Throughput::Elements(1));
    group.bench_function("verify", |b| {
        b.iter(|| verifier.verify(black_box(&token), now).is_ok())
    });
    group.bench_function("issue", |b| {
        b.iter(|| {
            issuer.issue(
                black_box("alice"),
                Role::Player,
                Duration::from_secs(60),
                now,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
