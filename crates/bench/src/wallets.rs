//! The wallet a bench's table spends through (`--wallet`), each as `banco broadcaster`
//! would reach it: banco's store in the process (`embedded`, the default), the same store
//! served as `banco wallet` over gRPC on loopback (`grpc`), or over the seamless protocol
//! (`seamless`: banco's own seamless server, standing in for a casino's). `memory` is a
//! wallet with no disk, to see what the table costs alone. Every store is an SQLite file
//! with `synchronous=FULL` in the bench's temporary folder: each answer durable first.
//!
//! A wallet's server (`banco wallet`, or the casino's seamless wallet it stands in for)
//! would run on another machine. Here it shares the two cores, but runs on threads of its
//! own ([`SERVER_THREAD`]), so the CPU figures tell the table's side of the exchange from
//! the server's.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use banco_auth::{Issuer, Role};
use banco_wallet::seamless::SeamlessSecret;
use banco_wallet::store::{CheckpointStats, CommitStats, SystemClock};
use banco_wallet::{Cashier, MemoryWallet, Store, Wallet};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::common::token_text;
use super::wallet_waits::TimedWallet;
use banco::bench_support::{WalletArgs, embedded_url, open_store};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BenchWallet {
    /// In memory, nothing durable: the table alone.
    Memory,
    /// banco's store in the broadcaster's process (the default of `banco broadcaster`).
    #[default]
    Embedded,
    /// The store behind `banco wallet`'s gRPC service, on loopback.
    Grpc,
    /// The store behind banco's seamless server, reached by the seamless adapter.
    Seamless,
}

impl BenchWallet {
    /// In words, for the bench's line.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            BenchWallet::Memory => "memory wallet (not durable)",
            BenchWallet::Embedded => "embedded wallet (SQLite, synchronous=FULL)",
            BenchWallet::Grpc => "banco wallet over gRPC (SQLite, synchronous=FULL)",
            BenchWallet::Seamless => {
                "seamless protocol to banco's server (SQLite, synchronous=FULL)"
            }
        }
    }

    /// Whether a kind of thread (as the CPU figures name them) is the wallet server's:
    /// its runtime, and its store's writers when the store is behind a server. (SQLite's
    /// readers are the table's side: the seamless adapter reads self-limits from banco's
    /// store in the broadcaster; the servers answer debits through the writer.)
    pub(crate) fn serves(self, thread: &str) -> bool {
        thread == SERVER_THREAD || self.has_server() && thread.starts_with("wallet-")
    }

    /// Whether the table reaches this wallet through a server of its own.
    pub(crate) fn has_server(self) -> bool {
        matches!(self, BenchWallet::Grpc | BenchWallet::Seamless)
    }

    /// Opens the wallet in `dir` and starts its server, if it has one.
    pub(crate) async fn start(self, issuer: &Issuer, dir: &Path) -> anyhow::Result<Running> {
        let (stop, stopping) = watch::channel(false);
        if self == BenchWallet::Memory {
            let memory = Arc::new(MemoryWallet::new());
            return Ok(Running {
                wallet: Arc::new(TimedWallet::new(memory.clone())),
                cashier: memory,
                store: None,
                servers: Vec::new(),
                runtime: None,
                stop,
            });
        }
        // Embedded: the broadcaster's own store in its data folder (`dir`). Behind a server:
        // the wallet's store in a folder of its own, and the table reaching it by the URL
        // `banco broadcaster --wallet` takes.
        let store = if self == BenchWallet::Embedded {
            open_store(&embedded_url(dir)).await?
        } else {
            let served = dir.join("wallet-service");
            std::fs::create_dir_all(&served)
                .with_context(|| format!("could not create {}", served.display()))?;
            open_store(&embedded_url(&served)).await?
        };
        let stopped = move || {
            let mut stopping = stopping.clone();
            async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            }
        };
        let mut reached = WalletArgs {
            wallet: String::new(),
            wallet_secret_file: None,
            wallet_ca: None,
            wallet_limits: "embedded".to_owned(),
            wallet_limits_ca: None,
        };
        let mut servers = Vec::new();
        let mut runtime = None;
        match self {
            BenchWallet::Memory | BenchWallet::Embedded => {}
            BenchWallet::Grpc => {
                let serving = runtime.insert(server_runtime()?);
                let listener = loopback_listener()?;
                reached.wallet = format!("grpc://{}", listener.local_addr()?);
                let options = banco_wallet::grpc::ServeOptions {
                    verifier: Arc::new(issuer.verifier()),
                    store: (*store).clone(),
                    clock: Arc::new(SystemClock),
                    tls: None,
                    metrics: None,
                };
                servers.push(serving.serve(listener, move |listener| async move {
                    if let Err(e) = banco_wallet::grpc::serve(listener, options, stopped()).await {
                        tracing::error!(error = %e, "bench: the wallet's server stopped");
                    }
                }));
            }
            BenchWallet::Seamless => {
                let serving = runtime.insert(server_runtime()?);
                let listener = loopback_listener()?;
                reached.wallet = format!("seamless+http://{}/", listener.local_addr()?);
                let secret_file = dir.join("seamless.secret");
                write_secret(&secret_file)?;
                let secret = SeamlessSecret::from_file(&secret_file)?;
                reached.wallet_secret_file = Some(secret_file);
                // One broadcaster: its own store is every table's (named, as `embedded`
                // would have it warn that no other broadcaster shares it).
                reached.wallet_limits = embedded_url(dir);
                let served: Arc<dyn Wallet> = store.clone();
                servers.push(serving.serve(listener, move |listener| async move {
                    let served = banco_wallet::seamless::serve(listener, served, secret, stopped());
                    if let Err(e) = served.await {
                        tracing::error!(error = %e, "bench: the seamless server stopped");
                    }
                }));
            }
        }
        let wallet: Arc<dyn Wallet> = if reached.wallet.is_empty() {
            store.clone()
        } else {
            let service = token_text(issuer, Role::Service, "bench-broadcaster")?;
            reached.open(dir, &service).await?.wallet
        };
        Ok(Running {
            wallet: Arc::new(TimedWallet::new(wallet)),
            // The welcome credits are paid in at the store itself, as a cashier would.
            cashier: store.clone(),
            store: Some(store),
            servers,
            runtime,
            stop,
        })
    }
}

/// A fresh 32-byte secret, hex, in `path` (mode 0600, as the seamless protocol asks).
fn write_secret(path: &Path) -> anyhow::Result<()> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("cannot draw a secret: {e}"))?;
    let hex = banco_records::hex::to_hex(&bytes);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    std::io::Write::write_all(&mut file, hex.as_bytes())
        .with_context(|| format!("could not write {}", path.display()))
}

/// A started wallet: what the table spends through, who pays the welcome credits in, and
/// the store behind them (none in memory).
pub(crate) struct Running {
    /// What the table spends through, timed.
    pub(crate) wallet: Arc<TimedWallet>,
    pub(crate) cashier: Arc<dyn Cashier>,
    store: Option<Arc<Store>>,
    servers: Vec<JoinHandle<()>>,
    /// Where the wallet's server runs, if it has one.
    runtime: Option<ServerRuntime>,
    stop: watch::Sender<bool>,
}

/// The threads a wallet's server runs on: what `banco wallet` or a casino's wallet would
/// spend, apart from the table's.
const SERVER_THREAD: &str = "wallet-server";

/// A runtime of its own for the wallet's server: one worker, as the other side of a network
/// would add at most one core's worth of waiting here.
fn server_runtime() -> anyhow::Result<ServerRuntime> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(SERVER_THREAD)
        .enable_all()
        .build()
        .context("could not start the wallet server's runtime")?;
    Ok(ServerRuntime(Some(runtime)))
}

/// The wallet server's runtime, dropped without blocking: it is dropped where the bench's
/// other runtime runs, which must not block.
struct ServerRuntime(Option<tokio::runtime::Runtime>);

impl ServerRuntime {
    /// Runs `server` on this runtime, listening on `listener` (made with
    /// [`loopback_listener`]).
    fn serve<F, Served>(&self, listener: std::net::TcpListener, server: F) -> JoinHandle<()>
    where
        F: FnOnce(TcpListener) -> Served + Send + 'static,
        Served: Future<Output = ()> + Send + 'static,
    {
        let runtime = self
            .0
            .as_ref()
            .expect("the runtime is only taken when dropped");
        runtime.spawn(async move {
            // Registered with this runtime's reactor, where it is served.
            let listener = TcpListener::from_std(listener)
                .expect("a listener made non-blocking, in the runtime that serves it");
            server(listener).await;
        })
    }
}

impl Drop for ServerRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A listener on a free loopback port, to be served by another runtime than this one.
fn loopback_listener() -> anyhow::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("could not listen on a loopback port")?;
    listener
        .set_nonblocking(true)
        .context("could not make the wallet server's listener non-blocking")?;
    Ok(listener)
}

impl Running {
    /// The store's commits so far (none in memory).
    pub(crate) fn commit_stats(&self) -> Option<CommitStats> {
        self.store.as_deref().map(Store::commit_stats)
    }

    /// What the copier of the store's WAL has done so far (none in memory or on
    /// PostgreSQL).
    pub(crate) fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.store.as_deref().and_then(Store::checkpoint_stats)
    }

    /// The store's largest and longest commit count from now on.
    pub(crate) fn restart_commit_maxima(&self) {
        if let Some(store) = &self.store {
            store.restart_commit_maxima();
        }
    }

    /// Stops its servers.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for server in self.servers {
            let _ = server.await;
        }
        drop(self.runtime);
    }
}
