//! WalletService over gRPC (`proto/banco/v1/wallet.proto`): the server of banco's own
//! store ([`serve`], [`WalletServer`]) that `banco wallet` runs, and the client
//! ([`GrpcWallet`]) a broadcaster and `banco cashier` reach it with.

mod client;
mod convert;
mod service;

use std::future::Future;
use std::sync::Arc;

use banco_auth::{ServerTls, Verifier};
use banco_serving::{GrpcServer, RequestMetrics, ServeError};
use banco_wire::pb::wallet_service_server::WalletServiceServer;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use client::{GrpcWallet, GrpcWalletError, GrpcWalletOptions, Statement};
pub use service::{ALLOWED_ROLES, WalletServer};

use crate::store::{Clock, Store};

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Checks every caller's bearer token.
    pub verifier: Arc<Verifier>,
    pub store: Store,
    /// The wallet's time for self-limits: the clock the store was opened with.
    pub clock: Arc<dyn Clock>,
    /// TLS identity; required beyond loopback.
    pub tls: Option<ServerTls>,
    /// Where requests are counted (`None`: nowhere).
    pub metrics: Option<RequestMetrics>,
}

/// Registers WalletService's request metrics, `banco_wallet_requests_total{rpc,result}`
/// and `banco_wallet_request_duration_seconds{rpc}`, beside the store's own families.
pub fn register_metrics(registry: &mut Registry) -> RequestMetrics {
    RequestMetrics::register(
        registry,
        "banco_wallet",
        "WalletService requests answered, by rpc and result (ok, replayed, the refusal, or the gRPC code)",
        "How long WalletService took to answer, by rpc",
        std::time::Duration::from_micros(100),
    )
}

/// Serves WalletService with health and reflection on `listener` until `shutdown`; every
/// WatchBalances stream then ends with UNAVAILABLE, and the calls in progress finish.
pub async fn serve(
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    banco_serving::listening_address(&listener, options.tls.is_some())?;
    tracing::info!(backend = options.store.backend(), "wallet store open");
    let (stop, stopping) = watch::channel(false);
    let mut server = WalletServer::new(options.store, options.clock, stopping);
    if let Some(metrics) = options.metrics {
        server = server.with_metrics(metrics);
    }
    GrpcServer::new("wallet", options.verifier, options.tls)
        .add_service(WalletServiceServer::new(server), &ALLOWED_ROLES)
        .serve(listener, async move {
            shutdown.await;
            let _ = stop.send(true);
        })
        .await
}
