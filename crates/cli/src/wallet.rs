//! `banco wallet`: WalletService over banco's own store (an SQLite file or PostgreSQL),
//! and the same wallet over the seamless protocol with `--seamless-listen`; `banco wallet
//! conformance URL` checks an operator's seamless wallet.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use banco_wallet::Wallet;
use banco_wallet::seamless::SeamlessSecret;
use banco_wallet::store::{Clock, LimitPolicy, StoreMetrics, SystemClock};
use banco_wallet::{Store, StoreOptions};
use prometheus_client::registry::Registry;

use crate::folder_lock::{FolderLock, lock_sqlite};
use crate::service_life::{ServiceLife, TlsArgs};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct WalletArgs {
    #[command(subcommand)]
    command: Option<WalletCommand>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, clap::Subcommand)]
enum WalletCommand {
    /// Check an operator's implementation of the seamless wallet protocol
    /// (`proto/seamless-wallet.openapi.yaml`): one line per check, exit status 1 on any
    /// failure.
    Conformance(crate::wallet_conformance::ConformanceArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// `sqlite://PATH` (created if missing) or `postgres://…`.
    #[arg(long, default_value = "sqlite://wallet.db")]
    db: String,
    /// Address to serve WalletService on; beyond loopback, `--tls-cert` and `--tls-key`
    /// are required.
    #[arg(long, default_value = "127.0.0.1:7104")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    tokens: crate::service_life::TokenArgs,
    /// Also serve this wallet over the seamless protocol (HTTP/JSON, as an operator's
    /// wallet would), on this address: over TLS with `--tls-cert` (required beyond
    /// loopback).
    #[arg(long, value_name = "ADDR", requires = "seamless_secret_file")]
    seamless_listen: Option<SocketAddr>,
    /// The secret the seamless protocol's messages are signed with (at least 32 bytes,
    /// mode 0600).
    #[arg(long, value_name = "FILE", requires = "seamless_listen")]
    seamless_secret_file: Option<PathBuf>,
    /// How long a raise or removal of a player's own limit waits before it takes effect
    /// (a number with s, m, h or d).
    #[arg(long, default_value = "24h", value_name = "DURATION")]
    limit_cooling_off: String,
    /// At most one raise or removal of a player's own limit is asked in this long.
    #[arg(long, default_value = "7d", value_name = "DURATION")]
    limit_period: String,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
}

impl ServeArgs {
    /// Holds the SQLite file for this process: two wallets on one file would each decide
    /// against balances the other moves.
    fn lock(&self) -> anyhow::Result<Option<FolderLock>> {
        lock_sqlite(&self.db, "banco wallet")
    }

    fn limits(&self) -> anyhow::Result<LimitPolicy> {
        let ms = |flag: &str, text: &str| -> anyhow::Result<u64> {
            let d = crate::token::parse_duration(flag, text)?;
            u64::try_from(d.as_millis()).with_context(|| format!("{flag} {text}: too long"))
        };
        Ok(LimitPolicy {
            cooling_off_ms: ms("--limit-cooling-off", &self.limit_cooling_off)?,
            period_ms: ms("--limit-period", &self.limit_period)?,
        })
    }
}

pub(crate) fn run(args: &WalletArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(WalletCommand::Conformance(conformance)) => {
            crate::wallet_conformance::run(conformance)
        }
        None => serve(&args.serve),
    }
}

fn serve(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let verifier = args.tokens.verifier()?;
    let tls = args.tls.load()?;
    let limits = args.limits()?;
    let secret = args
        .seamless_secret_file
        .as_deref()
        .map(SeamlessSecret::from_file)
        .transpose()?;
    if let Some(addr) = args.seamless_listen {
        banco_auth::require_tls_unless_loopback(addr, tls.is_some())
            .context("--seamless-listen")?;
    }
    if !args.db.starts_with("sqlite:")
        && !args.db.starts_with("postgres:")
        && !args.db.starts_with("postgresql:")
    {
        bail!("--db {}: expected sqlite://PATH or postgres://…", args.db);
    }
    let life = ServiceLife::new("wallet", args.listen, tls.as_ref(), &args.ops)?;
    let _lock = args.lock()?;
    life.run(|life, stop| async move {
        // Both listeners stop at the one signal.
        let (stop_all, stopping) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stop.requested().await;
            let _ = stop_all.send(true);
        });
        let stopped = move || {
            let mut stopping = stopping.clone();
            async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            }
        };
        let mut registry = Registry::default();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let options = StoreOptions {
            limits,
            clock: Arc::clone(&clock),
            metrics: Some(StoreMetrics::register(&mut registry)),
        };
        let store = Store::open(&args.db, options)
            .await
            .with_context(|| format!("--db {}", args.db))?;
        let listener = life.bind().await?;
        let seamless = match args.seamless_listen {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("--seamless-listen {addr}: could not listen"))?;
                println!("seamless listening on {}", listener.local_addr()?);
                Some(listener)
            }
            None => None,
        };
        let requests = banco_wallet::grpc::register_metrics(&mut registry);
        life.serve_metrics(registry).await?;
        let seamless = match (seamless, secret) {
            (Some(listener), Some(secret)) => {
                let wallet: Arc<dyn Wallet> = Arc::new(store.clone());
                let stopped = stopped();
                let tls = tls.as_ref().map(banco_auth::ServerTls::rustls_config);
                Some(tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            banco_wallet::seamless::serve_tls(
                                listener, tls, wallet, secret, stopped,
                            )
                            .await
                        }
                        None => {
                            banco_wallet::seamless::serve(listener, wallet, secret, stopped).await
                        }
                    }
                }))
            }
            _ => None,
        };
        let options = banco_wallet::grpc::ServeOptions {
            verifier: Arc::new(verifier),
            store: store.clone(),
            clock,
            tls,
            metrics: Some(requests),
        };
        let served = banco_wallet::grpc::serve(listener, options, stopped()).await;
        if let Some(seamless) = seamless {
            seamless
                .await
                .context("the seamless server panicked")?
                .context("seamless server")?;
        }
        served?;
        store.close().await;
        Ok(())
    })
}
