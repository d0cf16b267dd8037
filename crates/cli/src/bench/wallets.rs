//! The wallet a bench's table spends through (`--wallet`), each as `banco broadcaster`
//! would reach it: banco's store in the process (`embedded`, the default), the same store
//! served as `banco wallet` over gRPC on loopback (`grpc`), or over the seamless protocol
//! (`seamless`: banco's own seamless server, standing in for a casino's). `memory` is a
//! wallet with no disk, to see what the table costs alone. Every store is an SQLite file
//! with `synchronous=FULL` in the bench's temporary folder: each answer durable first.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use banco_auth::{Issuer, Role};
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions};
use banco_wallet::seamless::{Endpoint, SeamlessConfig, SeamlessSecret, SeamlessWallet};
use banco_wallet::store::{CommitStats, SystemClock};
use banco_wallet::{Cashier, MemoryWallet, Store, StoreOptions, Wallet};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::common::token;

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

    /// Opens the wallet in `dir` and starts its server, if it has one.
    pub(crate) async fn start(self, issuer: &Issuer, dir: &Path) -> anyhow::Result<Running> {
        let (stop, stopping) = watch::channel(false);
        let store = match self {
            BenchWallet::Memory => {
                let memory = Arc::new(MemoryWallet::new());
                return Ok(Running {
                    wallet: memory.clone(),
                    cashier: memory,
                    store: None,
                    servers: Vec::new(),
                    stop,
                });
            }
            _ => open(&dir.join("wallet.db")).await?,
        };
        let stopped = move || {
            let mut stopping = stopping.clone();
            async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            }
        };
        let mut servers = Vec::new();
        let wallet: Arc<dyn Wallet> = match self {
            BenchWallet::Memory | BenchWallet::Embedded => Arc::new(store.clone()),
            BenchWallet::Grpc => {
                let listener = TcpListener::bind("127.0.0.1:0").await?;
                let url = format!("grpc://{}", listener.local_addr()?);
                let options = banco_wallet::grpc::ServeOptions {
                    verifier: Arc::new(issuer.verifier()),
                    store: store.clone(),
                    clock: Arc::new(SystemClock),
                    tls: None,
                    metrics: None,
                };
                servers.push(tokio::spawn(async move {
                    if let Err(e) = banco_wallet::grpc::serve(listener, options, stopped()).await {
                        tracing::error!(error = %e, "bench: the wallet's server stopped");
                    }
                }));
                let service = token(issuer, Role::Service, "bench-broadcaster")?;
                let wallet = GrpcWallet::connect(&url, None, service, GrpcWalletOptions::default())
                    .with_context(|| format!("could not reach the bench's wallet at {url}"))?;
                Arc::new(wallet)
            }
            BenchWallet::Seamless => {
                let listener = TcpListener::bind("127.0.0.1:0").await?;
                let url = format!("seamless+http://{}/", listener.local_addr()?);
                let mut bytes = [0u8; 32];
                getrandom::fill(&mut bytes)
                    .map_err(|e| anyhow::anyhow!("cannot draw a secret: {e}"))?;
                let secret = SeamlessSecret::new(&bytes)?;
                let served: Arc<dyn Wallet> = Arc::new(store.clone());
                let server_secret = secret.clone();
                servers.push(tokio::spawn(async move {
                    let served =
                        banco_wallet::seamless::serve(listener, served, server_secret, stopped());
                    if let Err(e) = served.await {
                        tracing::error!(error = %e, "bench: the seamless server stopped");
                    }
                }));
                // Self-limits are banco's own, in a store of its own beside the casino's.
                let local: Arc<dyn Wallet> = Arc::new(open(&dir.join("local.db")).await?);
                let endpoint = Endpoint::parse(&url, None)?;
                Arc::new(SeamlessWallet::new(
                    endpoint,
                    secret,
                    local,
                    SeamlessConfig::default(),
                ))
            }
        };
        Ok(Running {
            wallet,
            // The welcome credits are paid in at the store itself, as a cashier would.
            cashier: Arc::new(store.clone()),
            store: Some(store),
            servers,
            stop,
        })
    }
}

async fn open(path: &Path) -> anyhow::Result<Store> {
    let url = format!("sqlite://{}", path.display());
    Store::open(&url, StoreOptions::default())
        .await
        .with_context(|| format!("could not open the bench's wallet {url}"))
}

/// A started wallet: what the table spends through, who pays the welcome credits in, and
/// the store behind them (none in memory).
pub(crate) struct Running {
    pub(crate) wallet: Arc<dyn Wallet>,
    pub(crate) cashier: Arc<dyn Cashier>,
    store: Option<Store>,
    servers: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
}

impl Running {
    /// The store's commits so far (none in memory).
    pub(crate) fn commit_stats(&self) -> Option<CommitStats> {
        self.store.as_ref().map(Store::commit_stats)
    }

    /// Stops its servers.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for server in self.servers {
            let _ = server.await;
        }
    }
}
