//! `banco-bench archive`: the archive's ingest, Stats, export and Verify over many rounds.
//!
//! The rounds are real: each of several tables is driven through `banco_table::Table`
//! (seeded 8-deck shoes, several players betting on several positions, settled by the
//! table), sealed by its own `Chain` and signed with a `TableSigner`, and turned into the
//! wire record the broadcaster's outbox sends (`banco_broadcaster::round_record`). They are
//! generated before anything is timed. Then every table appends its rounds in order, one
//! at a time, all tables at once, through `banco_archive::ingest::append`: the code the
//! ArchiveService's Append runs, with all its checks (no gRPC in between). The figures are
//! printed, never judged; the results are checked (every append stored, the counts of
//! rounds and bets, Stats' counts, the records exported, and a Verify that passes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use banco_archive::export::{self, Format};
use banco_archive::store::{Db, RoundFilterSql};
use banco_archive::{Appended, Store, TrustedKeys};
use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig};
use banco_rules::{BetKind, Card, Shoe};
use banco_table::actor::{Chain, TableSigner};
use banco_table::{
    CardSource, Command, DebitOutcome, Event, Pacing, Table, TableConfig, WalletAck,
};
use banco_wire::pb;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng as _, SeedableRng as _};
use tokio::sync::mpsc;

use super::common::{BenchDb, cpu_of, percentiles};

#[derive(Debug, clap::Args)]
pub(crate) struct ArchiveArgs {
    /// Rounds in all (split evenly over the tables).
    #[arg(long, default_value_t = 100_000)]
    rounds: usize,
    /// Database: a temporary SQLite file by default, or `postgres://…` (the bench works
    /// in a fresh schema it creates and drops).
    #[arg(long)]
    db: Option<String>,
    /// Tables, each appending its own chain in order, all at once.
    #[arg(long, default_value_t = 64)]
    tables: usize,
    /// Players betting at each table each round.
    #[arg(long, default_value_t = 7)]
    players: usize,
    /// Rounds each table sends per call: 1 is a table keeping up (Append, one round at a
    /// time); more is an outbox catching up (AppendBatch), as after an archive outage.
    #[arg(long, default_value_t = 200)]
    batch: usize,
}

const CROUPIER: &str = "croupier-1";
/// 2024-03-01T00:00:00Z: every round finishes within the day (when they fit), so the
/// day scope of Stats covers them all.
const DAY_START_MS: u64 = 1_709_251_200_000;
const DAY: &str = "2024-03-01";
const DAY_MS: u64 = 86_400_000;

/// One table's rounds, as its outbox would send them.
struct TableRounds {
    records: Vec<pb::RoundRecord>,
    bets: u64,
    on_day: u64,
}

fn apply(
    t: &mut Table,
    cmd: &Command,
    out: &mut Vec<banco_table::FinishedRound>,
) -> anyhow::Result<()> {
    let events = t
        .apply(cmd)
        .map_err(|r| anyhow::anyhow!("the table refused {cmd:?}: {r}"))?;
    for e in events {
        match e {
            Event::RoundFinished(round) => out.push(*round),
            // The wallet of these tables takes every stake and acknowledges every credit
            // at once: what is measured is the archive.
            Event::BetsPending { request } => apply(
                t,
                &Command::WalletDebited {
                    player: request.player,
                    key: request.key,
                    outcome: DebitOutcome::Taken {
                        balance: 1_000_000_000_000,
                        version: None,
                    },
                    now_ms: cmd.now_ms(),
                },
                out,
            )?,
            Event::WalletOwed { owed } => apply(
                t,
                &Command::WalletAcked {
                    acks: owed
                        .iter()
                        .map(|o| WalletAck {
                            number: o.number,
                            balance: None,
                            version: None,
                        })
                        .collect(),
                    now_ms: cmd.now_ms(),
                },
                out,
            )?,
            _ => {}
        }
    }
    Ok(())
}

/// Plays `hands` rounds at table `table_id` and seals them.
fn play_table(
    table_id: &str,
    hands: usize,
    players: usize,
    signer: &Arc<TableSigner>,
    seed: u64,
    step_ms: u64,
) -> anyhow::Result<TableRounds> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut t = Table::new(TableConfig::new(table_id, Pacing::Live))
        .with_context(|| format!("table {table_id}"))?;
    let mut finished = Vec::with_capacity(hands);
    let mut now = DAY_START_MS;
    let mut tick = || {
        now += step_ms;
        now
    };
    let names: Vec<String> = (0..players).map(|p| format!("{table_id}-p{p}")).collect();
    let config = ShoeConfig {
        decks: 8,
        cut_card_from_end: 16,
        burn: BurnRule::None,
        procedure: Procedure::CutCard,
    };
    let mut cards: Vec<Card> = Vec::new();
    let mut next = 0usize;
    let mut shoes = 0u32;
    let stakes = [100i64, 200, 500, 1000, 2500];
    while finished.len() < hands {
        if cards.len().saturating_sub(next) < 24 {
            if shoes > 0 {
                apply(
                    &mut t,
                    &Command::EndShoe {
                        reason: "cut card".into(),
                        by: CROUPIER.into(),
                        now_ms: tick(),
                    },
                    &mut finished,
                )?;
            }
            let shoe = Shoe::shuffled(config, &mut rng).context("shuffle")?;
            cards = shoe.order().to_vec();
            next = 0;
            shoes += 1;
            apply(
                &mut t,
                &Command::OpenShoe {
                    config,
                    by: CROUPIER.into(),
                    now_ms: tick(),
                    commitment: None,
                },
                &mut finished,
            )?;
        }
        apply(
            &mut t,
            &Command::OpenBetting {
                by: CROUPIER.into(),
                now_ms: tick(),
            },
            &mut finished,
        )?;
        let round = t
            .round_id()
            .cloned()
            .context("no round after OpenBetting")?;
        for p in &names {
            // Most players back Banker or Player; some add a Tie or a pair.
            let r = rng.next_u32();
            let stake = stakes[(r % 5) as usize];
            let mut bets = vec![(
                if r & 8 == 0 {
                    BetKind::Banker
                } else {
                    BetKind::Player
                },
                stake,
            )];
            if r & 0x30 == 0 {
                bets.push((BetKind::Tie, 100));
            }
            if r & 0xc0 == 0 {
                bets.push((BetKind::PlayerPair, 100));
            }
            apply(
                &mut t,
                &Command::PlaceBets {
                    player: p.clone(),
                    round_id: round.clone(),
                    bets,
                    key: format!("{p}-{round}"),
                    now_ms: tick(),
                },
                &mut finished,
            )?;
        }
        apply(
            &mut t,
            &Command::CloseBetting {
                by: CROUPIER.into(),
                now_ms: tick(),
            },
            &mut finished,
        )?;
        while t.due().is_some_and(|d| d.side().is_some()) {
            let card = *cards.get(next).context("the shoe ran out")?;
            next += 1;
            apply(
                &mut t,
                &Command::DealCard {
                    card,
                    source: CardSource::Scanner,
                    now_ms: tick(),
                },
                &mut finished,
            )?;
        }
        apply(
            &mut t,
            &Command::ConfirmResult {
                round_id: round.clone(),
                by: CROUPIER.into(),
                now_ms: tick(),
            },
            &mut finished,
        )?;
    }
    let mut chain = Chain::new(Some(Arc::clone(signer)));
    let mut out = TableRounds {
        records: Vec::with_capacity(hands),
        bets: 0,
        on_day: 0,
    };
    for round in finished {
        out.bets += round.bets.values().map(|s| s.len() as u64).sum::<u64>();
        out.on_day += u64::from(round.finished_at < DAY_START_MS + DAY_MS);
        let sealed = chain
            .seal(round)
            .map_err(|e| anyhow::anyhow!("sealing at {table_id}: {e}"))?;
        out.records.push(
            banco_broadcaster::round_record(&sealed)
                .map_err(|e| anyhow::anyhow!("record at {table_id}: {e}"))?,
        );
    }
    Ok(out)
}

/// Generates every table's rounds on all cores.
fn generate(args: &ArchiveArgs, signer: &Arc<TableSigner>) -> anyhow::Result<Vec<TableRounds>> {
    let per_table = args.rounds.div_ceil(args.tables);
    // About 5 + players + cards commands a round: spread a table's rounds over the day.
    let commands = (per_table * (8 + args.players)) as u64;
    let step_ms = (DAY_MS / commands.max(1)).clamp(1, 1000);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ids: Vec<(usize, String, usize)> = (0..args.tables)
        .map(|i| {
            let hands = per_table.min(args.rounds - (per_table * i).min(args.rounds));
            (i, format!("T{i:03}"), hands)
        })
        .filter(|(_, _, hands)| *hands > 0)
        .collect();
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let ids = &ids;
                scope.spawn(move || {
                    ids.iter()
                        .skip(w)
                        .step_by(threads)
                        .map(|(i, id, hands)| {
                            play_table(id, *hands, args.players, signer, *i as u64, step_ms)
                                .map(|t| (*i, t))
                        })
                        .collect::<anyhow::Result<Vec<_>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a generator thread panicked"))?
            })
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let mut all: Vec<(usize, TableRounds)> = results.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// Bytes the archive takes on disk.
async fn disk_bytes(store: &Store, db: &BenchDb) -> anyhow::Result<(u64, String)> {
    match (store.db(), db) {
        (Db::Sqlite(pool), BenchDb::Sqlite { path, .. }) => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await?;
            let mut total = 0;
            for suffix in ["", "-wal", "-shm"] {
                let file = format!("{}{suffix}", path.display());
                total += std::fs::metadata(&file).map_or(0, |m| m.len());
            }
            Ok((total, "file + WAL + SHM after a checkpoint".to_owned()))
        }
        (Db::Postgres(pool), BenchDb::Postgres { .. }) => {
            let total: i64 = sqlx::query_scalar(
                "SELECT CAST(SUM(pg_total_relation_size(c.oid)) AS BIGINT) FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = current_schema() AND c.relkind = 'r'",
            )
            .fetch_one(pool)
            .await?;
            Ok((
                u64::try_from(total).unwrap_or(0),
                "pg_total_relation_size of the schema's tables (with indexes, TOAST)".to_owned(),
            ))
        }
        _ => bail!("the store is not the bench's database"),
    }
}

async fn count(store: &Store, sql: &str) -> anyhow::Result<u64> {
    let n: i64 = match store.db() {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
        Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await?,
    };
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Times Stats of one scope: the first call and the median of 5 more.
async fn time_stats(
    store: &Store,
    scope: pb::StatsScope,
    key: &str,
    expect_rounds: u64,
) -> anyhow::Result<()> {
    let request = pb::StatsRequest {
        scope: scope.into(),
        key: key.to_owned(),
    };
    let mut times = Vec::new();
    let mut rounds = 0;
    for _ in 0..6 {
        let start = Instant::now();
        let response = banco_archive::stats::stats(store, &request)
            .await
            .with_context(|| format!("Stats {scope:?} {key}"))?;
        times.push(start.elapsed());
        rounds = response.rounds;
        ensure!(
            response.banker_wins + response.player_wins + response.ties == response.rounds,
            "Stats {scope:?} {key}: wins do not add up to the rounds"
        );
    }
    ensure!(
        rounds == expect_rounds,
        "Stats {scope:?} {key}: {rounds} rounds, expected {expect_rounds}"
    );
    let first = times[0];
    let mut rest = times[1..].to_vec();
    rest.sort();
    println!(
        "stats {:<6} {key:<12} {rounds:>9} rounds  first {:>8.2} ms  median of 5 {:>8.2} ms",
        format!("{scope:?}").to_lowercase(),
        ms(first),
        ms(rest[rest.len() / 2]),
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Exports everything; returns (records, bytes, time).
async fn time_export(store: &Store, format: Format) -> anyhow::Result<(u64, u64, Duration)> {
    let (tx, mut rx) = mpsc::channel(4);
    let start = Instant::now();
    let producer = tokio::spawn(export::run(
        store.clone(),
        RoundFilterSql::default(),
        format,
        tx,
    ));
    let (mut records, mut bytes) = (0u64, 0u64);
    let mut last = false;
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.context("export")?;
        records += chunk.records;
        bytes += chunk.data.len() as u64;
        last = chunk.last;
    }
    let elapsed = start.elapsed();
    producer.await.context("export task")?;
    ensure!(last, "the export ended without its last chunk");
    Ok((records, bytes, elapsed))
}

pub(crate) async fn run(args: &ArchiveArgs) -> anyhow::Result<()> {
    ensure!(args.rounds > 0, "--rounds must be at least 1");
    ensure!(
        (1..=999).contains(&args.tables),
        "--tables must be 1 to 999, not {}",
        args.tables
    );
    ensure!(args.players >= 1, "--players must be at least 1");
    ensure!(
        (1..=banco_archive::ingest::MAX_BATCH_RECORDS).contains(&args.batch),
        "--batch must be 1 to {}, not {}",
        banco_archive::ingest::MAX_BATCH_RECORDS,
        args.batch
    );
    let key = banco_auth::keys::generate_signing_key().context("table signing key")?;
    let keys = TrustedKeys::new([key.verifying_key()]);
    let signer = Arc::new(TableSigner::new(key));

    let start = Instant::now();
    let tables = generate(args, &signer)?;
    let n: u64 = tables.iter().map(|t| t.records.len() as u64).sum();
    let bets: u64 = tables.iter().map(|t| t.bets).sum();
    let on_day: u64 = tables.iter().map(|t| t.on_day).sum();
    let record_bytes: u64 = tables
        .iter()
        .flat_map(|t| &t.records)
        .map(|r| r.table_record.len() as u64)
        .sum();
    println!(
        "generated {n} rounds ({bets} bets, {:.1} per round; table record {:.0} bytes on average) at {} tables in {:.1} s (not timed below)",
        bets as f64 / n as f64,
        record_bytes as f64 / n as f64,
        tables.len(),
        start.elapsed().as_secs_f64()
    );

    if let Some(url) = args.db.as_deref().filter(|url| url.starts_with("sqlite:")) {
        // The counts checked below are of this run's rounds alone.
        bail!("--db {url}: give postgres://… or nothing (a temporary SQLite file)");
    }
    let (db, url) = BenchDb::create(args.db.as_deref(), "archive").await?;
    let result = measure(args, &db, &url, &keys, tables, n, bets, on_day).await;
    db.drop_schema().await?;
    result
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    args: &ArchiveArgs,
    db: &BenchDb,
    url: &str,
    keys: &TrustedKeys,
    tables: Vec<TableRounds>,
    n: u64,
    bets: u64,
    on_day: u64,
) -> anyhow::Result<()> {
    let store = Store::open(url)
        .await
        .with_context(|| format!("could not open the archive at {url}"))?;
    println!(
        "backend {} ({}), {} tables appending at once, each its rounds in order",
        store.backend(),
        db.describe(),
        tables.len()
    );
    let table_ids: Vec<(String, u64)> = tables
        .iter()
        .filter_map(|t| {
            t.records
                .first()
                .map(|r| (r.table_id.clone(), t.records.len() as u64))
        })
        .collect();

    // The checks alone, on one core: of signed records (parse, hash, ed25519), as this
    // archive trusts their table's key, and of the same records to an archive with no
    // key (parse, hash, canonical re-encoding instead of the signature).
    let sample: Vec<&pb::RoundRecord> = tables.iter().flat_map(|t| &t.records).take(5000).collect();
    let start = Instant::now();
    for record in &sample {
        banco_archive::ingest::checked(keys, record)
            .with_context(|| format!("check {}", record.round_id))?;
    }
    let took = start.elapsed();
    let unsigned = TrustedKeys::default();
    let start = Instant::now();
    for record in &sample {
        banco_archive::ingest::checked(&unsigned, record)
            .with_context(|| format!("check {}", record.round_id))?;
    }
    let without_signatures = start.elapsed();
    let each = |d: Duration| d.as_secs_f64() * 1e6 / sample.len() as f64;
    println!(
        "checks  {} records on one core in {:.0} ms: {:.0} µs each, {:.0} rounds/s (parse, SHA-256, ed25519 one by one, rows, export lines, LZ4); unsigned, with the canonical re-encoding instead: {:.0} µs each",
        sample.len(),
        ms(took),
        each(took),
        sample.len() as f64 / took.as_secs_f64(),
        each(without_signatures),
    );

    // Ingest: every table's outbox at once, each `--batch` rounds per call.
    let keys = Arc::new(keys.clone());
    let batch = args.batch;
    let cpu_before = cpu_of(None)?;
    let start = Instant::now();
    let mut senders = Vec::new();
    for t in tables {
        let store = store.clone();
        let keys = Arc::clone(&keys);
        senders.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(t.records.len());
            let mut records = t.records.into_iter().peekable();
            while records.peek().is_some() {
                let call: Vec<pb::RoundRecord> = records.by_ref().take(batch).collect();
                let first = call[0].round_id.clone();
                let sent = Instant::now();
                let appended = if batch == 1 {
                    vec![
                        banco_archive::ingest::append(&store, &keys, &call[0])
                            .await
                            .with_context(|| format!("append {first}"))?,
                    ]
                } else {
                    banco_archive::ingest::append_batch(&store, &keys, call)
                        .await
                        .with_context(|| format!("append the batch from {first}"))?
                };
                latencies.push(sent.elapsed());
                if let Some(wrong) = appended
                    .iter()
                    .find(|a| !matches!(a, Appended::Stored { .. }))
                {
                    bail!("append from {first}: {wrong:?}, expected stored");
                }
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies = Vec::with_capacity(n as usize);
    for s in senders {
        latencies.extend(s.await.context("a sender task failed")??);
    }
    let ingest = start.elapsed();
    let cpu = cpu_of(None)?.saturating_sub(cpu_before);
    println!(
        "ingest  {n} rounds in {:.2} s: {:.0} rounds/s ({}; the service's code path and checks, no gRPC; group commit, one fsync per transaction)",
        ingest.as_secs_f64(),
        n as f64 / ingest.as_secs_f64(),
        if batch == 1 {
            "each table one round per call: ingest::append, as Append".to_owned()
        } else {
            format!("each table {batch} rounds per call: ingest::append_batch, as AppendBatch")
        }
    );
    println!(
        "ingest  latency of one call (us) {}",
        percentiles(&mut latencies)
    );
    println!(
        "ingest  CPU {:.1} s in all: {:.0} µs per round ({} cores here: {:.0} rounds/s if nothing else ran and the work spread over them)",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n as f64,
        std::thread::available_parallelism().map_or(1, usize::from),
        std::thread::available_parallelism().map_or(1, usize::from) as f64 * n as f64
            / cpu.as_secs_f64()
    );
    let stored = count(&store, "SELECT CAST(COUNT(*) AS BIGINT) FROM rounds").await?;
    let stored_bets = count(&store, "SELECT CAST(COUNT(*) AS BIGINT) FROM bets").await?;
    ensure!(stored == n, "{stored} rounds stored, expected {n}");
    ensure!(
        stored_bets == bets,
        "{stored_bets} bets stored, expected {bets}"
    );

    // Stats.
    if let Some((table, rounds)) = table_ids.first() {
        time_stats(&store, pb::StatsScope::Table, table, *rounds).await?;
    }
    time_stats(&store, pb::StatsScope::Day, DAY, on_day).await?;

    // Export.
    for (format, name) in [(Format::Jsonl, "jsonl"), (Format::Csv, "csv")] {
        let (records, bytes, took) = time_export(&store, format).await?;
        let expect = if format == Format::Jsonl { n } else { bets };
        ensure!(
            records == expect,
            "export {name}: {records} records, expected {expect}"
        );
        println!(
            "export  {name:<5} {n} rounds ({records} records, {:.1} MB) in {:.2} s: {:.0} rounds/s, {:.1} MB/s",
            bytes as f64 / 1e6,
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64(),
            bytes as f64 / 1e6 / took.as_secs_f64()
        );
    }

    // Disk.
    let (disk, what) = disk_bytes(&store, db).await?;
    println!(
        "disk    {:.1} MB: {:.0} bytes per round ({what})",
        disk as f64 / 1e6,
        disk as f64 / n as f64
    );

    // Verify.
    let start = Instant::now();
    let verified = banco_archive::verify::verify(&store, &keys, "")
        .await
        .context("verify")?;
    let took = start.elapsed();
    ensure!(
        verified.ok && verified.records_checked == n,
        "verify: ok {} after {} records (expected {n}): {:?}",
        verified.ok,
        verified.records_checked,
        verified.first_bad
    );
    println!(
        "verify  {} records (chain and signatures) in {:.2} s: {:.0} rounds/s: passed",
        verified.records_checked,
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
    let _ = args;
    store.close().await;
    Ok(())
}
