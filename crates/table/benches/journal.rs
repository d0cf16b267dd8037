//! Journal throughput: records per second for append + fsync, for `append_batch` (one
//! fsync per batch) and for the group committer with 1, 16 or 256 appends in flight.
//! The files live under the target directory, on the machine's real disk (not tmpfs).
//! Figures are printed by criterion; nothing is asserted.

use std::hint::black_box;
use std::time::Duration;

use banco_table::journal::{GroupCommitConfig, GroupCommitter, Journal};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// About the size of a serialized bet command.
const PAYLOAD_LEN: usize = 200;

fn temp_journal() -> (tempfile::TempDir, Journal) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let (journal, _) = Journal::open(dir.path().join("bench.journal")).expect("open journal");
    (dir, journal)
}

fn appends(c: &mut Criterion) {
    let payload = vec![0x42u8; PAYLOAD_LEN];
    let mut group = c.benchmark_group("journal");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    let (_dir, mut journal) = temp_journal();
    group.throughput(Throughput::Elements(1));
    group.bench_function("append_fsync", |b| {
        b.iter(|| journal.append(black_box(&payload)).expect("append"));
    });

    for batch in [1usize, 16, 256] {
        let (_dir, mut journal) = temp_journal();
        let payloads: Vec<&[u8]> = vec![payload.as_slice(); batch];
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("append_batch", batch), &batch, |b, _| {
            b.iter(|| journal.append_batch(black_box(&payloads)).expect("batch"));
        });
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    for in_flight in [1usize, 16, 256] {
        let (_dir, journal) = temp_journal();
        let committer =
            GroupCommitter::spawn(journal, GroupCommitConfig::default()).expect("committer");
        let handle = committer.handle();
        group.throughput(Throughput::Elements(in_flight as u64));
        group.bench_with_input(
            BenchmarkId::new("group_commit", in_flight),
            &in_flight,
            |b, &n| {
                b.iter(|| {
                    runtime.block_on(futures::future::join_all(
                        (0..n).map(|_| handle.append(payload.clone())),
                    ))
                });
            },
        );
        let stats = committer.stats();
        println!(
            "group_commit/{in_flight}: {} records in {} fsyncs ({:.1} records per fsync)",
            stats.records,
            stats.commits,
            stats.records as f64 / stats.commits.max(1) as f64
        );
        drop(handle);
        committer.shutdown().expect("shutdown");
    }
    group.finish();
}

criterion_group!(benches, appends);
criterion_main!(benches);
