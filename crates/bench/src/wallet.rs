//! `banco-bench wallet`: banco's wallet store (`banco_wallet::Store`, in this process, on
//! an SQLite file with `synchronous=FULL` or on PostgreSQL, each answer durable before it
//! is given) under many tables at once.
//!
//! Every player is given a deposit (untimed), then each of `--tables` tables plays rounds
//! for `--seconds`: all its seated players' debits at once, then a credit settling each
//! (twice the stake or nothing), then the next round. Every player sits at two tables, so
//! one account is debited from two tables at the same instant, as a player's one wallet
//! is. `--concurrency` caps the requests in flight over all tables. The figures are
//! printed, never judged; the money is checked: every debit taken, every balance equal to
//! its deposit − debits + credits, and the store's books balanced (exit status 1 if not).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail, ensure};
use banco_rules::Money;
use banco_wallet::store::CommitStats;
use banco_wallet::{
    Cash, Cashier as _, Credit, CreditKind, Debit, Store, StoreOptions, TxId, Wallet as _,
};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::common::{BenchDb, cpu_of, percentiles};

#[derive(Debug, clap::Args)]
pub(crate) struct WalletArgs {
    /// Database: a temporary SQLite file by default, `sqlite://PATH` (kept; the bench's
    /// players and ids are this run's own), or `postgres://…` (the bench works in a fresh
    /// schema it creates and drops).
    #[arg(long)]
    pub(crate) db: Option<String>,
    /// Tables playing at once, each round its players' debits then their credits.
    #[arg(long, default_value_t = 100)]
    pub(crate) tables: usize,
    /// Players in all (at least `--tables`); each sits at two tables.
    #[arg(long, default_value_t = 2_000)]
    pub(crate) players: usize,
    /// How long the tables play; the rounds under way then are settled.
    #[arg(long, default_value_t = 10)]
    pub(crate) seconds: u64,
    /// Requests (debits and credits) in flight at once, over all tables.
    #[arg(long, default_value_t = 256)]
    pub(crate) concurrency: usize,
}

const CURRENCY: &str = "EUR";
/// Each player's deposit, €1,000,000.00: more than any run stakes.
const DEPOSIT: i64 = 100_000_000;
const STAKES: [i64; 5] = [100, 200, 500, 1_000, 2_500];
const POSITIONS: [&str; 3] = ["player", "banker", "tie"];

/// What the bench measured and found.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Every fault of the money, in words: none when every balance and the books check.
    pub(crate) faults: Vec<String>,
}

pub(crate) async fn run(args: &WalletArgs) -> anyhow::Result<ExitCode> {
    let outcome = bench(args).await?;
    if outcome.faults.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for fault in &outcome.faults {
        println!("check   FAILED: {fault}");
    }
    Ok(ExitCode::from(1))
}

pub(crate) async fn bench(args: &WalletArgs) -> anyhow::Result<Outcome> {
    ensure!(
        (1..=999).contains(&args.tables),
        "--tables must be 1 to 999, not {}",
        args.tables
    );
    ensure!(
        args.players >= args.tables,
        "--players {} must be at least --tables {} (every table seats a player)",
        args.players,
        args.tables
    );
    ensure!(args.seconds >= 1, "--seconds must be at least 1");
    ensure!(args.concurrency >= 1, "--concurrency must be at least 1");
    let (db, url) = BenchDb::create(args.db.as_deref(), "wallet").await?;
    let result = measure(args, &db, &url).await;
    db.drop_schema().await?;
    result
}

/// The players each table seats: `p` sits at tables `p mod T` and `p + 1 mod T`.
fn seating(tables: usize, players: usize) -> Vec<Vec<usize>> {
    let mut seats = vec![Vec::new(); tables];
    for p in 0..players {
        seats[p % tables].push(p);
        if tables > 1 {
            seats[(p + 1) % tables].push(p);
        }
    }
    seats
}

/// An id for this run's movements and players, so a kept SQLite file can run it again.
fn run_id() -> String {
    let ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{}x{}", std::process::id(), ms % 1_000_000_000)
}

fn tx(text: String) -> anyhow::Result<TxId> {
    TxId::new(text).context("transaction id")
}

async fn measure(args: &WalletArgs, db: &BenchDb, url: &str) -> anyhow::Result<Outcome> {
    let store = Store::open(url, StoreOptions::default())
        .await
        .with_context(|| format!("could not open the wallet at {url}"))?;
    let run = run_id();
    let names: Arc<Vec<String>> =
        Arc::new((0..args.players).map(|p| format!("w{run}-p{p}")).collect());
    let gate = Arc::new(Semaphore::new(args.concurrency));
    println!(
        "banco-bench wallet: {} ({}; {}), {} tables, {} players at two tables each, {} requests in flight at most, {} s",
        store.backend(),
        db.describe(),
        match store.backend() {
            "sqlite" => "WAL, synchronous=FULL",
            _ => "synchronous_commit as the server has it",
        },
        args.tables,
        args.players,
        args.concurrency,
        args.seconds,
    );

    // Untimed: every player's deposit, which also creates the account.
    let mut deposits = JoinSet::new();
    for (p, name) in names.iter().enumerate() {
        let (store, gate, name) = (store.clone(), Arc::clone(&gate), name.clone());
        let key = tx(format!("{run}:deposit:{p}"))?;
        deposits.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            store
                .deposit(&Cash::new(&key, &name, CURRENCY, DEPOSIT))
                .await
                .with_context(|| format!("deposit for {name}"))
        });
    }
    while let Some(done) = deposits.join_next().await {
        done.context("a deposit task failed")??;
    }

    // The largest and longest commits printed are the tables', not the deposits'.
    store.restart_commit_maxima();
    let before = store.commit_stats();
    let cpu_before = cpu_of(None)?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let mut tables = JoinSet::new();
    for (t, seats) in seating(args.tables, args.players).into_iter().enumerate() {
        let table = Table {
            store: store.clone(),
            gate: Arc::clone(&gate),
            names: Arc::clone(&names),
            run: run.clone(),
            id: format!("T{t:03}"),
            seats,
        };
        tables.spawn(table.play(deadline));
    }
    let mut played = Played::default();
    while let Some(done) = tables.join_next().await {
        played.add(done.context("a table task failed")??);
    }
    let elapsed = started.elapsed();
    let cpu = cpu_of(None)?.saturating_sub(cpu_before);
    let after = store.commit_stats();

    let seconds = elapsed.as_secs_f64();
    let (debits, credits) = (played.debits.len(), played.credits.len());
    println!(
        "debits  {debits} in {seconds:.2} s: {:.0} debits/s; latency {}",
        debits as f64 / seconds,
        percentiles(&mut played.debits),
    );
    println!(
        "credits {credits}: {:.0} credits/s; latency {}",
        credits as f64 / seconds,
        percentiles(&mut played.credits),
    );
    print_commits(before, after, debits + credits);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "cpu     {:.1} s in all (store, database and the tables' tasks): {:.0} µs per debit and its credit ({cores} cores here: {:.0} debits/s if nothing else ran and the work spread over them)",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / debits.max(1) as f64,
        cores as f64 * debits as f64 / cpu.as_secs_f64().max(1e-9),
    );

    let mut faults = check(&store, &names, &played.net).await?;
    if credits != debits {
        faults.push(format!(
            "{debits} debits taken, {credits} credits settled them"
        ));
    }
    if faults.is_empty() {
        println!(
            "check   all {} balances are deposit − debits + credits ({} staked, {} returned); every movement's postings sum to zero and every balance to its postings",
            names.len(),
            Money::new(played.staked, CURRENCY),
            Money::new(played.returned, CURRENCY),
        );
    }
    store.close().await;
    Ok(Outcome { faults })
}

fn print_commits(before: CommitStats, after: CommitStats, movements: usize) {
    let commits = after.commits.saturating_sub(before.commits);
    let requests = after.requests.saturating_sub(before.requests);
    println!(
        "commits {commits} transactions for {requests} requests: {:.1} a commit on average, at most {}; {:.4} commits per movement; the longest {:.1} ms",
        requests as f64 / commits.max(1) as f64,
        after.largest,
        commits as f64 / movements.max(1) as f64,
        after.longest.as_secs_f64() * 1e3,
    );
}

/// Every player's balance against what the bench moved (`net`: debits taken as negative,
/// credits positive, by player), and the store's own check of its books.
async fn check(store: &Store, names: &[String], net: &[i64]) -> anyhow::Result<Vec<String>> {
    let mut faults = Vec::new();
    for (name, moved) in names.iter().zip(net) {
        let balance = store
            .account(name, CURRENCY)
            .await
            .with_context(|| format!("the account of {name}"))?
            .balance;
        let expected = DEPOSIT + moved;
        if balance != expected {
            faults.push(format!(
                "{name}'s balance is {}, deposit − debits + credits is {}",
                Money::new(balance, CURRENCY),
                Money::new(expected, CURRENCY)
            ));
        }
    }
    faults.extend(store.check_books().await.context("checking the books")?);
    Ok(faults)
}

/// One table's part.
struct Table {
    store: Store,
    gate: Arc<Semaphore>,
    names: Arc<Vec<String>>,
    run: String,
    id: String,
    seats: Vec<usize>,
}

/// What the tables did: latencies, and the money moved by player.
#[derive(Default)]
struct Played {
    debits: Vec<Duration>,
    credits: Vec<Duration>,
    net: Vec<i64>,
    staked: i64,
    returned: i64,
}

impl Played {
    fn add(&mut self, other: Played) {
        self.debits.extend(other.debits);
        self.credits.extend(other.credits);
        if self.net.len() < other.net.len() {
            self.net.resize(other.net.len(), 0);
        }
        for (total, moved) in self.net.iter_mut().zip(other.net) {
            *total += moved;
        }
        self.staked += other.staked;
        self.returned += other.returned;
    }
}

impl Table {
    /// Plays rounds until `deadline`, each settled before the next.
    async fn play(self, deadline: Instant) -> anyhow::Result<Played> {
        let mut played = Played {
            net: vec![0; self.names.len()],
            ..Played::default()
        };
        let mut round = 0usize;
        while Instant::now() < deadline {
            round += 1;
            let round_id = format!("{}-R{round:06}", self.id);
            let mut debits = JoinSet::new();
            for (seat, &p) in self.seats.iter().enumerate() {
                let stake = STAKES[(round + seat) % STAKES.len()];
                // Numbered in the order they are sent, as a table numbers a round's debits.
                let debit = Debit {
                    tx: tx(format!("{}:d:{round_id}:{:06}:{p}", self.run, seat + 1))?,
                    player: self.names[p].clone(),
                    currency: CURRENCY.to_owned(),
                    amount: stake,
                    table: self.id.clone(),
                    round: round_id.clone(),
                    bet: POSITIONS[(round + p) % POSITIONS.len()].to_owned(),
                    position_total: stake,
                };
                let (store, gate) = (self.store.clone(), Arc::clone(&self.gate));
                debits.spawn(async move {
                    let _permit = gate.acquire_owned().await?;
                    let sent = Instant::now();
                    match store.debit(&debit).await {
                        Ok(receipt) if !receipt.replayed => Ok((p, debit, sent.elapsed())),
                        Ok(_) => bail!("debit {} was answered as a replay", debit.tx),
                        Err(e) => bail!("debit {} refused: {e}", debit.tx),
                    }
                });
            }
            let mut credits = JoinSet::new();
            while let Some(done) = debits.join_next().await {
                let (p, debit, took) = done.context("a debit task failed")??;
                played.debits.push(took);
                played.net[p] -= debit.amount;
                played.staked += debit.amount;
                // Wins twice the stake or loses it, by turns.
                let amount = if (round + p).is_multiple_of(2) {
                    2 * debit.amount
                } else {
                    0
                };
                let credit = Credit {
                    tx: tx(format!("{}:c:{round_id}:{p}", self.run))?,
                    player: debit.player.clone(),
                    currency: CURRENCY.to_owned(),
                    amount,
                    kind: CreditKind::Settlement,
                    table: self.id.clone(),
                    round: round_id.clone(),
                    bet: debit.bet.clone(),
                    debits: vec![debit.tx],
                };
                let (store, gate) = (self.store.clone(), Arc::clone(&self.gate));
                credits.spawn(async move {
                    let _permit = gate.acquire_owned().await?;
                    let sent = Instant::now();
                    match store.credit(&credit).await {
                        Ok(receipt) if !receipt.replayed => Ok((p, credit.amount, sent.elapsed())),
                        Ok(_) => bail!("credit {} was answered as a replay", credit.tx),
                        Err(e) => bail!("credit {} refused: {e}", credit.tx),
                    }
                });
            }
            while let Some(done) = credits.join_next().await {
                let (p, amount, took) = done.context("a credit task failed")??;
                played.credits.push(took);
                played.net[p] += amount;
                played.returned += amount;
            }
        }
        Ok(played)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_player_sits_at_two_tables() {
        let seats = seating(3, 4);
        assert_eq!(seats, vec![vec![0, 2, 3], vec![0, 1, 3], vec![1, 2]]);
        assert_eq!(seating(1, 2), vec![vec![0, 1]]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_second_on_a_temp_sqlite_file_checks_out() {
        let dir = tempfile::tempdir().unwrap();
        let args = WalletArgs {
            db: Some(format!("sqlite://{}", dir.path().join("w.db").display())),
            tables: 4,
            players: 20,
            seconds: 1,
            concurrency: 16,
        };
        let outcome = bench(&args).await.unwrap();
        assert_eq!(outcome.faults, Vec::<String>::new());
        // The kept file runs again, its second run's players its own.
        let again = bench(&args).await.unwrap();
        assert_eq!(again.faults, Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_balance_off_by_a_cent_is_a_fault() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("w.db").display());
        let store = Store::open(&url, StoreOptions::default()).await.unwrap();
        let names = vec!["alice".to_owned(), "bob".to_owned()];
        for name in &names {
            let key = tx(format!("dep-{name}")).unwrap();
            store
                .deposit(&Cash::new(&key, name, CURRENCY, DEPOSIT))
                .await
                .unwrap();
        }
        assert_eq!(
            check(&store, &names, &[0, 0]).await.unwrap(),
            Vec::<String>::new()
        );
        let faults = check(&store, &names, &[0, -1]).await.unwrap();
        assert_eq!(
            faults,
            vec!["bob's balance is €1,000,000.00, deposit − debits + credits is €999,999.99"]
        );
    }
}
