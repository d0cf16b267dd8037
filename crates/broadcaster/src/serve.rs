//! Serving TableService, PlayerService and VideoIngest, each behind its role, with gRPC
//! health and reflection.

use std::future::Future;
use std::sync::Arc;

use banco_auth::{
    AuthInterceptor, Role, ServerTls, TransportPolicyError, Verifier, require_tls_unless_loopback,
};
use banco_wire::FILE_DESCRIPTOR_SET;
use banco_wire::pb::player_service_server::PlayerServiceServer;
use banco_wire::pb::table_service_server::TableServiceServer;
use banco_wire::pb::video_ingest_server::VideoIngestServer as VideoIngestService;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use crate::hosted::{HostedTable, Tables};
use crate::hub::FanoutLimits;
use crate::limits::{PlayerGuard, RequestLimits};
use crate::player_service::PlayerServer;
use crate::subscribe::PlayerRoutes;
use crate::table_routes::TableRoutes;
use crate::table_service::TableServer;
use crate::video::VideoIngestServer;
use crate::video::clips::ClipStore;

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
    /// Threads that serve connections, each with its own single-threaded runtime (default:
    /// one per core). See `serve`.
    pub io_threads: usize,
    /// Where a clip of every round is recorded (`None`: no clips).
    pub clips: Option<Arc<ClipStore>>,
    /// Where the fan-out hubs count subscribers, lag and cut-offs.
    pub metrics: crate::metrics::HubMetricFamilies,
    /// Largest requests, and each player's rate.
    pub limits: RequestLimits,
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
            io_threads: std::thread::available_parallelism().map_or(2, usize::from),
            clips: None,
            metrics: crate::metrics::HubMetricFamilies::default(),
            limits: RequestLimits::default(),
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
    #[error("could not start a connection thread: {0}")]
    Runtime(#[source] std::io::Error),
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
    health
        .set_serving::<VideoIngestService<VideoIngestServer>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    for table in tables.all() {
        table
            .start_hub(&options.currency, options.fanout, &options.metrics)
            .await?;
        if let Some(clips) = &options.clips {
            table.start_clips(clips);
        }
    }
    let croupiers = AuthInterceptor::new(Arc::clone(&options.verifier), &[Role::Croupier]);
    // The camera's publisher watches the table for its overlay, and may do nothing else.
    let watchers = AuthInterceptor::new(
        Arc::clone(&options.verifier),
        &[Role::Croupier, Role::Service],
    );
    let services = AuthInterceptor::new(Arc::clone(&options.verifier), &[Role::Service]);
    let players = AuthInterceptor::new(options.verifier, &[Role::Player]);
    let limits = options.limits;
    let table_service = Arc::new(TableServer::new(Arc::clone(&tables)));
    let video_ingest = VideoIngestServer::new(Arc::clone(&tables));
    let player_service = Arc::new(PlayerServer::new(
        Arc::clone(&tables),
        options.welcome_credit,
        options.currency,
    ));
    tracing::info!(
        %addr,
        tables = count,
        tls = options.tls.is_some(),
        "broadcaster serving TableService, PlayerService and VideoIngest"
    );
    let router = builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(TableRoutes::new(
            table_service,
            croupiers,
            watchers,
            limits.max_request_bytes,
        ))
        .add_service(PlayerRoutes::new(
            player_service,
            PlayerGuard::new(players, &limits),
            &limits,
        ))
        .add_service(InterceptedService::new(
            VideoIngestService::new(video_ingest)
                .max_decoding_message_size(limits.max_video_unit_bytes),
            services,
        ));
    // Video and WatchTable streams never end by themselves: end them first, so that
    // connections drain.
    let closing = Arc::clone(&tables);
    let shutdown = async move {
        shutdown.await;
        for table in closing.all() {
            table.shut_down();
        }
    };
    let threads = options.io_threads.max(1);
    if threads == 1
        && tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::CurrentThread
    {
        router
            .serve_with_incoming_shutdown(incoming(listener), shutdown)
            .await?;
        return Ok(());
    }
    io::serve_on_threads(listener, router, threads, shutdown).await
}

/// Connections served on threads of their own, one single-threaded runtime each.
///
/// Why: on tokio's multi-threaded runtime, a subscriber's HTTP/2 stream that sends an
/// event wakes its connection's task, which the scheduler runs at once (its "LIFO slot"),
/// so the connection writes after every stream instead of once for all of them. Measured
/// with 10,000 subscribers on 100 connections: 442,000 `writev` calls for 80 events, and
/// most of the broadcaster's time in the kernel. On a single-threaded runtime the woken
/// streams all run before their connections do, which then write once each (26,500
/// calls). One such runtime per core keeps both cores at work; each connection stays on
/// the thread it was given.
mod io {
    use std::future::Future;
    use std::net::TcpStream as StdStream;

    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::{mpsc, watch};
    use tokio_stream::StreamExt as _;
    use tokio_stream::wrappers::ReceiverStream;
    use tonic::transport::server::Router;

    use super::ServeError;

    /// Connections waiting for their thread.
    const HANDOFF: usize = 1024;

    pub(super) async fn serve_on_threads(
        listener: TcpListener,
        router: Router,
        threads: usize,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        let (stop, stopped) = watch::channel(false);
        let mut queues = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let (queue, connections) = mpsc::channel::<StdStream>(HANDOFF);
            queues.push(queue);
            let router = router.clone();
            let mut stopped = stopped.clone();
            let worker = std::thread::Builder::new()
                .name(format!("grpc-io-{i}"))
                .spawn(move || -> Result<(), ServeError> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(ServeError::Runtime)?;
                    runtime.block_on(async move {
                        crate::hub::install_relay();
                        // Registered with this thread's reactor, in this thread.
                        let incoming = ReceiverStream::new(connections).map(|std| {
                            let stream = TcpStream::from_std(std)?;
                            stream.set_nodelay(true)?;
                            Ok::<_, std::io::Error>(stream)
                        });
                        router
                            .serve_with_incoming_shutdown(incoming, async move {
                                let _ = stopped.wait_for(|stop| *stop).await;
                            })
                            .await
                            .map_err(ServeError::from)
                    })
                })
                .map_err(ServeError::Runtime)?;
            workers.push(worker);
        }
        tokio::pin!(shutdown);
        let mut next = 0;
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let std = match stream.into_std() {
                            Ok(std) => std,
                            Err(e) => {
                                tracing::warn!(error = %e, "could not hand a connection over");
                                continue;
                            }
                        };
                        // A worker that stopped has failed: its error is returned below.
                        if queues[next % threads].send(std).await.is_err() {
                            break;
                        }
                        next += 1;
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: keep serving the others.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                },
            }
        }
        let _ = stop.send(true);
        drop(queues);
        let mut result = Ok(());
        for worker in workers {
            let joined = tokio::task::spawn_blocking(move || worker.join())
                .await
                .map_err(|e| ServeError::Runtime(std::io::Error::other(e.to_string())))?;
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
                Err(_) => {
                    if result.is_ok() {
                        result = Err(ServeError::Runtime(std::io::Error::other(
                            "a connection thread panicked",
                        )));
                    }
                }
            }
        }
        result
    }
}

/// Small replies must leave at once: with Nagle on, each answer waits for the client's
/// delayed ACK (measured: about 44 ms per card check and per confirm).
fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}
