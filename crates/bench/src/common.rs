//! What every `banco-bench` shares: keys and tokens, the in-process validator and
//! broadcaster, percentiles, a temporary folder.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use banco_auth::keys::generate_signing_key;
use banco_auth::{BearerToken, Issuer, Role};
use banco_broadcaster::{
    EventLog, EventOptions, FanoutLimits, HostedTable, OutboxFile, ServeError,
};
use banco_rules::shoe::ShoeConfig;
use banco_table::actor::{ActorConfig, ActorTask, Clock, RemoteRules, TableHandle, spawn};
use banco_table::{Pacing, TableConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};

use super::wallets::BenchWallet;
pub(crate) use banco::bench_support::quantile;

/// A fresh signing key: its issuer, and a verifier for the services.
pub(super) fn keys() -> anyhow::Result<Issuer> {
    let key = generate_signing_key().context("signing key")?;
    Issuer::new(key, "banco").context("issuer")
}

/// The signed text of a one-hour token.
pub(super) fn token_text(issuer: &Issuer, role: Role, sub: &str) -> anyhow::Result<String> {
    issuer
        .issue(sub, role, Duration::from_secs(3600), SystemTime::now())
        .with_context(|| format!("token for {sub}"))
}

pub(super) fn token(issuer: &Issuer, role: Role, sub: &str) -> anyhow::Result<BearerToken> {
    let text = token_text(issuer, role, sub)?;
    BearerToken::new(&text).with_context(|| format!("token for {sub}"))
}

pub(super) async fn connect(addr: SocketAddr) -> anyhow::Result<Channel> {
    Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await
        .with_context(|| format!("could not connect to {addr}"))
}

/// Starts the validator in this process; the sender stops it.
pub(super) async fn start_validator(
    issuer: &Issuer,
) -> anyhow::Result<(SocketAddr, oneshot::Sender<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let options = banco_validator::ServeOptions {
        verifier: Arc::new(issuer.verifier()),
        metrics: None,
    };
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        if let Err(e) = banco_validator::serve(listener, options, async {
            let _ = stopped.await;
        })
        .await
        {
            eprintln!("banco-bench: validator stopped: {e}");
        }
    });
    Ok((addr, stop))
}

/// p50, p90, p99 and max of some latencies, in microseconds.
pub(super) fn percentiles(latencies: &mut [Duration]) -> String {
    latencies.sort_unstable();
    let at = |q: f64| quantile(latencies, q).map_or(0.0, |d| d.as_secs_f64() * 1e6);
    format!(
        "p50 {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    )
}

/// Removes the bench's temporary folder, pass or fail.
#[derive(Debug)]
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    /// A new folder under the system's temporary folder, named after this process.
    pub(super) fn new() -> anyhow::Result<TempDir> {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = TempDir(
            std::env::temp_dir().join(format!("banco-bench-{}-{nanos}", std::process::id())),
        );
        std::fs::create_dir_all(&dir.0)
            .with_context(|| format!("could not create {}", dir.0.display()))?;
        Ok(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The database a bench works in, and how to clean it up.
pub(super) enum BenchDb {
    /// `_dir`: the temporary folder made for it, removed at the end; `None` for a file
    /// the user named, which is kept.
    Sqlite {
        _dir: Option<TempDir>,
        path: PathBuf,
    },
    Postgres {
        base: String,
        schema: String,
    },
}

impl BenchDb {
    /// `db`: nothing (a temporary SQLite file `NAME.db`), `sqlite://PATH`, or
    /// `postgres://…`, in which the bench works in a fresh schema `bench_NAME_PID` that
    /// [`BenchDb::drop_schema`] drops. The database, and the URL to open it with.
    pub(super) async fn create(db: Option<&str>, name: &str) -> anyhow::Result<(BenchDb, String)> {
        match db {
            None => {
                let dir = TempDir::new()?;
                let path = dir.0.join(format!("{name}.db"));
                let url = format!("sqlite://{}", path.display());
                Ok((
                    BenchDb::Sqlite {
                        _dir: Some(dir),
                        path,
                    },
                    url,
                ))
            }
            Some(url) if url.starts_with("sqlite:") => {
                let path = url.trim_start_matches("sqlite:").trim_start_matches("//");
                let path = PathBuf::from(path.split('?').next().unwrap_or(path));
                Ok((BenchDb::Sqlite { _dir: None, path }, url.to_owned()))
            }
            Some(base) => {
                let schema = format!("bench_{name}_{}", std::process::id());
                let pool = sqlx::PgPool::connect(base)
                    .await
                    .with_context(|| format!("could not connect to --db {base}"))?;
                sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .execute(&pool)
                    .await?;
                sqlx::query(&format!("CREATE SCHEMA {schema}"))
                    .execute(&pool)
                    .await
                    .with_context(|| format!("could not create schema {schema}"))?;
                pool.close().await;
                let sep = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
                Ok((
                    BenchDb::Postgres {
                        base: base.to_owned(),
                        schema,
                    },
                    url,
                ))
            }
        }
    }

    /// Where the bench's data is, in words.
    pub(super) fn describe(&self) -> String {
        match self {
            BenchDb::Sqlite { path, .. } => path.display().to_string(),
            BenchDb::Postgres { schema, .. } => format!("schema {schema}"),
        }
    }

    pub(super) async fn drop_schema(&self) -> anyhow::Result<()> {
        if let BenchDb::Postgres { base, schema } = self {
            let pool = sqlx::PgPool::connect(base).await?;
            sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .execute(&pool)
                .await?;
            pool.close().await;
        }
        Ok(())
    }
}

/// A validator and a broadcaster hosting one live table (its journal in a temporary
/// folder), in this process, as `banco broadcaster` builds them.
pub(super) struct InProcess {
    pub(super) addr: SocketAddr,
    pub(super) handle: TableHandle,
    pub(super) dir: TempDir,
    pub(super) wallet: super::wallets::Running,
    task: ActorTask,
    stop: oneshot::Sender<()>,
    server: JoinHandle<Result<(), ServeError>>,
    stop_validator: oneshot::Sender<()>,
}

impl InProcess {
    /// Spending through a wallet in memory: for the benches that place no bets.
    pub(super) async fn start(
        issuer: &Issuer,
        table: &str,
        welcome_credit: i64,
        fanout: FanoutLimits,
    ) -> anyhow::Result<InProcess> {
        InProcess::start_with(issuer, table, welcome_credit, fanout, BenchWallet::Memory).await
    }

    /// Spending through `wallet`, which pays each player's welcome credit in.
    pub(super) async fn start_with(
        issuer: &Issuer,
        table: &str,
        welcome_credit: i64,
        fanout: FanoutLimits,
        wallet: BenchWallet,
    ) -> anyhow::Result<InProcess> {
        InProcess::launch(issuer, table, welcome_credit, fanout, wallet, None).await
    }

    /// [`InProcess::start`], publishing the table's events to the NATS server at `events`
    /// (`banco broadcaster --events`), for edges to serve.
    pub(super) async fn start_publishing(
        issuer: &Issuer,
        table: &str,
        fanout: FanoutLimits,
        events: &str,
    ) -> anyhow::Result<InProcess> {
        InProcess::launch(issuer, table, 0, fanout, BenchWallet::Memory, Some(events)).await
    }

    async fn launch(
        issuer: &Issuer,
        table: &str,
        welcome_credit: i64,
        fanout: FanoutLimits,
        wallet: BenchWallet,
        events: Option<&str>,
    ) -> anyhow::Result<InProcess> {
        let (validator, stop_validator) = start_validator(issuer).await?;
        let dir = TempDir::new()?;
        let service = token_text(issuer, Role::Service, "broadcaster")?;
        let rules = RemoteRules::connect(
            &format!("http://{validator}"),
            &service,
            Duration::from_secs(2),
        )?;
        let config = TableConfig::new(table, Pacing::Live);
        let outbox = OutboxFile::open(&dir.0.join("outbox.jsonl"))?;
        let wallet = wallet.start(issuer, &dir.0).await?;
        let mut actor = ActorConfig::in_dir(config.clone(), &dir.0);
        actor.wallet = wallet.wallet.clone();
        let events = match events {
            Some(url) => {
                let log =
                    EventLog::connect(url, EventOptions::default(), Default::default()).await?;
                log.add_table(actor.clone());
                Some(Arc::new(log))
            }
            None => None,
        };
        let (handle, task) = spawn(actor, Arc::new(rules), Arc::new(outbox), Clock::system())
            .await
            .context("could not start the table actor")?;
        let mut options = banco_broadcaster::ServeOptions::new(
            Arc::new(issuer.verifier()),
            vec![HostedTable::new(
                handle.clone(),
                config,
                ShoeConfig::default(),
            )],
        );
        options.welcome = (welcome_credit > 0).then(|| banco_broadcaster::WelcomeCredit {
            amount: welcome_credit,
            cashier: Arc::clone(&wallet.cashier),
        });
        options.fanout = fanout;
        options.events = events;
        // A benchmark's players bet as fast as the table takes it.
        options.limits = banco_broadcaster::RequestLimits::without_rates();
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(banco_broadcaster::serve(listener, options, async {
            let _ = stopped.await;
        }));
        Ok(InProcess {
            addr,
            handle,
            dir,
            wallet,
            task,
            stop,
            server,
            stop_validator,
        })
    }

    /// Stops the broadcaster, the table actor and the validator.
    pub(super) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
        self.task.shutdown().await;
        self.wallet.stop().await;
        let _ = self.stop_validator.send(());
    }
}

/// This process's resident memory, in bytes.
pub(super) fn own_rss() -> anyhow::Result<u64> {
    rss("/proc/self/status")
}

/// The resident memory of process `pid`, in bytes.
pub(super) fn rss_of(pid: u32) -> anyhow::Result<u64> {
    rss(&format!("/proc/{pid}/status"))
}

/// CPU time (user and system, every thread) of this process (`None`) or of `pid`.
pub(super) fn cpu_of(pid: Option<u32>) -> anyhow::Result<Duration> {
    let path = pid.map_or_else(
        || "/proc/self/stat".to_owned(),
        |p| format!("/proc/{p}/stat"),
    );
    let stat = std::fs::read_to_string(&path).with_context(|| format!("could not read {path}"))?;
    parse_cpu(&stat).with_context(|| format!("{path}: no readable utime and stime"))
}

/// CPU time each kind of thread of this process has had so far, by thread name with a
/// trailing number dropped (`grpc-io-0` and `grpc-io-1` are `grpc-io`), from
/// `/proc/self/task/*/schedstat` (nanoseconds, where `/proc/*/stat` counts 10 ms ticks).
/// A thread that has ended is not counted: take the difference of two readings over a
/// span in which the threads that matter live throughout.
pub(super) fn thread_cpu() -> anyhow::Result<BTreeMap<String, Duration>> {
    let mut by_kind = BTreeMap::new();
    let tasks = std::fs::read_dir("/proc/self/task").context("could not list /proc/self/task")?;
    for task in tasks {
        let dir = task.context("could not list /proc/self/task")?.path();
        // A thread that ended between the listing and the reading is skipped.
        let (Ok(comm), Ok(schedstat)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("schedstat")),
        ) else {
            continue;
        };
        let Some(ns) = schedstat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        *by_kind
            .entry(thread_kind(comm.trim()).to_owned())
            .or_insert(Duration::ZERO) += Duration::from_nanos(ns);
    }
    Ok(by_kind)
}

/// A thread's name without its number: `grpc-io-1` → `grpc-io`.
fn thread_kind(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit())
        .trim_end_matches(['-', '_'])
}

/// The CPU time each kind of thread spent between two [`thread_cpu`] readings (a kind
/// that started in between, from nothing).
pub(super) fn cpu_spent<'a>(
    before: &'a BTreeMap<String, Duration>,
    after: &'a BTreeMap<String, Duration>,
) -> impl Iterator<Item = (&'a str, Duration)> {
    after.iter().map(|(kind, t)| {
        let was = before.get(kind).copied().unwrap_or_default();
        (kind.as_str(), t.saturating_sub(was))
    })
}

/// The CPU time spent between two [`thread_cpu`] readings, per unit of work (`per`
/// units), in words: the total, then each kind of thread, the busiest first.
pub(super) fn cpu_per(
    before: &BTreeMap<String, Duration>,
    after: &BTreeMap<String, Duration>,
    per: usize,
    unit: &str,
) -> String {
    let mut spent: Vec<(&str, Duration)> = cpu_spent(before, after)
        .filter(|(_, t)| !t.is_zero())
        .collect();
    spent.sort_by_key(|s| std::cmp::Reverse(s.1));
    let per = per.max(1) as f64;
    let micros = |t: Duration| t.as_secs_f64() * 1e6 / per;
    let total: Duration = spent.iter().map(|(_, t)| *t).sum();
    let parts: Vec<String> = spent
        .iter()
        .map(|(kind, t)| format!("{kind} {:.1}", micros(*t)))
        .collect();
    format!(
        "CPU {:.1} µs per {unit} ({})",
        micros(total),
        parts.join(", ")
    )
}

/// utime + stime of a `/proc/*/stat` line: fields 14 and 15, counted after the command
/// name (which may hold spaces), in USER_HZ ticks (100 a second on Linux).
pub(super) fn parse_cpu(stat: &str) -> Option<Duration> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

fn rss(path: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(path).with_context(|| format!("could not read {path}"))?;
    parse_vm_rss(&status).with_context(|| format!("{path}: no readable VmRSS line"))
}

/// The `VmRSS:  1234 kB` line of a `/proc/*/status`, in bytes.
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_of_a_stat_line() {
        let stat = "1234 (tokio rt) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 130 0 0 20 0 4 0";
        assert_eq!(parse_cpu(stat), Some(Duration::from_millis(3_800)));
        assert_eq!(parse_cpu("garbage"), None);
        assert!(cpu_of(None).is_ok());
    }

    #[test]
    fn threads_by_kind() {
        assert_eq!(thread_kind("grpc-io-1"), "grpc-io");
        assert_eq!(thread_kind("tokio-rt-worker"), "tokio-rt-worker");
        assert_eq!(thread_kind("worker_12"), "worker");
        let before = BTreeMap::from([("a".to_owned(), Duration::from_millis(10))]);
        let after = BTreeMap::from([
            ("a".to_owned(), Duration::from_millis(30)),
            ("b".to_owned(), Duration::from_millis(40)),
        ]);
        assert_eq!(
            cpu_per(&before, &after, 1000, "bet"),
            "CPU 60.0 µs per bet (b 40.0, a 20.0)"
        );
        assert!(!thread_cpu().expect("this process's threads").is_empty());
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.50), Some(50));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&v, 1.0), Some(100));
        assert_eq!(quantile(&[7u32], 0.5), Some(7));
        assert_eq!(quantile::<u32>(&[], 0.5), None);
        assert_eq!(quantile(&[1u32, 2, 3], 0.0001), Some(1));
    }

    #[test]
    fn reads_vm_rss() {
        let status = "Name:\tbanco\nVmPeak:\t  9000 kB\nVmRSS:\t   1234 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss(status), Some(1234 * 1024));
        assert_eq!(parse_vm_rss("Name:\tbanco\n"), None);
    }
}
