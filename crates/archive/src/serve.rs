//! Serving ArchiveService with gRPC health and reflection, behind the token interceptor,
//! over TLS beyond loopback (as every banco service).

use std::future::Future;
use std::sync::Arc;

use banco_auth::{
    AuthInterceptor, ServerTls, TransportPolicyError, Verifier, require_tls_unless_loopback,
};
use banco_wire::FILE_DESCRIPTOR_SET;
use banco_wire::pb::archive_service_server::ArchiveServiceServer;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use crate::ingest::TrustedKeys;
use crate::service::{ALLOWED_ROLES, ArchiveServer};
use crate::store::Store;

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Checks every caller's bearer token.
    pub verifier: Arc<Verifier>,
    pub store: Store,
    /// The table keys whose signatures Append and Verify accept.
    pub table_keys: TrustedKeys,
    /// TLS identity; required beyond loopback.
    pub tls: Option<ServerTls>,
    /// The folder round clips are kept in; `None`: this archive takes no clips.
    pub clips: Option<std::path::PathBuf>,
    /// Where requests are counted (`None`: nowhere).
    pub metrics: Option<crate::metrics::ArchiveMetrics>,
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Policy(#[from] TransportPolicyError),
    #[error("could not read the listening address: {0}")]
    Address(#[source] std::io::Error),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    Clips(#[from] crate::error::ArchiveError),
}

/// Serves ArchiveService with health and reflection on `listener` until `shutdown`.
/// The largest request taken (an AppendBatch at most).
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

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
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ArchiveServiceServer<ArchiveServer>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let guard = AuthInterceptor::new(options.verifier, &ALLOWED_ROLES);
    if options.table_keys.is_empty() {
        tracing::warn!(
            "no table key configured: unsigned rounds are accepted and signatures are not checked"
        );
    }
    tracing::info!(%addr, tls = options.tls.is_some(), backend = options.store.backend(), "archive serving ArchiveService");
    let mut server = ArchiveServer::new(options.store, options.table_keys);
    if let Some(metrics) = options.metrics {
        server = server.with_metrics(metrics);
    }
    if let Some(dir) = &options.clips {
        server = server.with_clips(crate::clips::ClipFolder::open(dir)?);
    }
    builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(
            // An AppendBatch of 1,000 rounds of a busy table is larger than tonic's 4 MiB
            // default.
            ArchiveServiceServer::new(server).max_decoding_message_size(MAX_REQUEST_BYTES),
            guard,
        ))
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await?;
    Ok(())
}
