//! Serving ArchiveService with gRPC health and reflection, behind the token interceptor,
//! over TLS beyond loopback (as every banco service: [`banco_serving::GrpcServer`]).

use std::future::Future;
use std::sync::Arc;

use banco_auth::{ServerTls, Verifier};
use banco_serving::GrpcServer;
pub use banco_serving::ServeError;
use banco_wire::pb::archive_service_server::ArchiveServiceServer;
use tokio::net::TcpListener;

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

/// The largest request taken (an AppendBatch at most).
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

/// Serves ArchiveService with health and reflection on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    banco_serving::listening_address(&listener, options.tls.is_some())?;
    tracing::info!(backend = options.store.backend(), "archive store open");
    let mut server = ArchiveServer::new(options.store, options.table_keys);
    if let Some(metrics) = options.metrics {
        server = server.with_metrics(metrics);
    }
    if let Some(dir) = &options.clips {
        server =
            server.with_clips(crate::clips::ClipFolder::open(dir).map_err(ServeError::service)?);
    }
    // An AppendBatch of 1,000 rounds of a busy table is larger than tonic's 4 MiB default.
    let archive = ArchiveServiceServer::new(server).max_decoding_message_size(MAX_REQUEST_BYTES);
    GrpcServer::new("archive", options.verifier, options.tls)
        .add_service(archive, &ALLOWED_ROLES)
        .serve(listener, shutdown)
        .await
}
