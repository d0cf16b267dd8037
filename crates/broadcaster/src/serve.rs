//! Serving TableService and PlayerService, each behind its role, with gRPC health and
//! reflection.

use std::future::Future;
use std::sync::Arc;

use banco_auth::{
    AuthInterceptor, Role, ServerTls, TransportPolicyError, Verifier, require_tls_unless_loopback,
};
use banco_wire::FILE_DESCRIPTOR_SET;
use banco_wire::pb::player_service_server::PlayerServiceServer;
use banco_wire::pb::table_service_server::TableServiceServer;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use crate::hosted::{HostedTable, Tables};
use crate::hub::FanoutLimits;
use crate::player_service::PlayerServer;
use crate::subscribe::PlayerRoutes;
use crate::table_service::TableServer;

/// How to serve.
#[derive(Debug)]
pub struct ServeOptions {
    /// Checks every caller's bearer token: TableService admits croupiers, PlayerService
    /// players.
    pub verifier: Arc<Verifier>,
    /// The tables served; their ids must differ.
    pub tables: Vec<HostedTable>,
    /// Minor units deposited (once, journaled) for a player who bets at a table with no
    /// money there; 0: none (real deployments credit players through a cashier).
    pub welcome_credit: i64,
    /// ISO 4217 code of the tables' minor units.
    pub currency: String,
    /// Serve over TLS (clients connect with `https://`); `None`: plaintext, which is
    /// refused beyond loopback.
    pub tls: Option<ServerTls>,
    /// What each table's fan-out hub keeps (ring of recent events, queue per subscriber).
    pub fanout: FanoutLimits,
}

impl ServeOptions {
    /// No welcome credit; EUR; plaintext.
    pub fn new(verifier: Arc<Verifier>, tables: Vec<HostedTable>) -> ServeOptions {
        ServeOptions {
            verifier,
            tables,
            welcome_credit: 0,
            currency: "EUR".to_owned(),
            tls: None,
            fanout: FanoutLimits::default(),
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Policy(#[from] TransportPolicyError),
    #[error("could not read the listening address: {0}")]
    Address(#[source] std::io::Error),
    #[error("table `{0}` is given twice")]
    DuplicateTable(String),
    #[error("welcome credit {0}: must be 0 or a positive number of minor units")]
    WelcomeCredit(i64),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves TableService (role croupier) and PlayerService (role player) with gRPC health
/// and reflection on `listener` until `shutdown` completes. Over TLS when
/// [`ServeOptions::tls`] is set; plaintext otherwise, refused beyond loopback.
pub async fn serve(
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Address)?;
    require_tls_unless_loopback(addr, options.tls.is_some())?;
    let mut builder = Server::builder();
    if let Some(tls) = &options.tls {
        builder = builder.tls_config(tls.config())?;
    }
    if options.welcome_credit < 0 {
        return Err(ServeError::WelcomeCredit(options.welcome_credit));
    }
    let count = options.tables.len();
    let tables = Arc::new(Tables::new(options.tables));
    if tables.all().count() != count {
        let mut ids: Vec<&str> = Vec::new();
        for t in tables.all() {
            ids.push(t.id());
        }
        return Err(ServeError::DuplicateTable(ids.join(", ")));
    }

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<TableServiceServer<TableServer>>()
        .await;
    health
        .set_serving::<PlayerServiceServer<PlayerServer>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    for table in tables.all() {
        table.start_hub(&options.currency, options.fanout).await?;
    }
    let croupiers = AuthInterceptor::new(Arc::clone(&options.verifier), &[Role::Croupier]);
    let players = AuthInterceptor::new(options.verifier, &[Role::Player]);
    let table_service = TableServer::new(Arc::clone(&tables));
    let player_service = Arc::new(PlayerServer::new(
        tables,
        options.welcome_credit,
        options.currency,
    ));
    tracing::info!(
        %addr,
        tables = count,
        tls = options.tls.is_some(),
        "broadcaster serving TableService and PlayerService"
    );
    builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(
            TableServiceServer::new(table_service),
            croupiers,
        ))
        .add_service(PlayerRoutes::new(player_service, players))
        .serve_with_incoming_shutdown(incoming(listener), shutdown)
        .await?;
    Ok(())
}

/// Small replies must leave at once: with Nagle on, each answer waits for the client's
/// delayed ACK (measured: about 44 ms per card check and per confirm).
fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}
