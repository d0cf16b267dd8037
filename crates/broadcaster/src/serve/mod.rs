//! Serving TableService, PlayerService and VideoIngest, each behind its role, with gRPC
//! health and reflection.
//!
//! The broadcaster speaks HTTP/2 itself (the `h2` crate, as hyper does underneath tonic)
//! instead of through tonic's server: a connection's Subscribe streams are then written
//! by the connection's own task ([`pumps`]), not each by a task, an HTTP body and an
//! encoder of its own. Every other call goes to tonic's routes as before ([`request`]).
//! Connections are served on threads of their own ([`threads`]).

mod connection;
pub(crate) mod deadline;
mod pumps;
mod request;
mod threads;
mod woken;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use banco_auth::{AuthInterceptor, Role, ServerTls, Verifier};
pub use banco_serving::ServeError;
use banco_serving::{add_health_and_reflection, listening_address};
use banco_wire::pb::player_service_server::{PlayerService, PlayerServiceServer};
use banco_wire::pb::table_service_server::TableServiceServer;
use banco_wire::pb::video_ingest_server::VideoIngestServer as VideoIngestService;
use tokio::net::TcpListener;
use tonic::server::NamedService as _;
use tonic::service::interceptor::InterceptedService;
use tonic::service::{Routes, RoutesBuilder};

use crate::hosted::{HostedTable, Tables};
use crate::hub::FanoutLimits;
use crate::limits::{PlayerGuard, RequestLimits};
use crate::player_service::{PlayerServer, WelcomeCredit};
use crate::subscribe::{PlayerRoutes, SubscribeRoute, Subscriptions, VideoSource};
use crate::table_routes::TableRoutes;
use crate::table_service::TableServer;
use crate::video::VideoIngestServer;
#[cfg(feature = "clips")]
use crate::video::clip_store::ClipStore;

/// How to serve.
#[derive(Debug)]
pub struct ServeOptions {
    /// Checks every caller's bearer token: TableService admits croupiers, PlayerService
    /// players.
    pub verifier: Arc<Verifier>,
    /// The tables served; their ids must differ.
    pub tables: Vec<HostedTable>,
    /// A deposit into the wallet for each player seen for the first time (demos, tests);
    /// `None`: players are funded by the casino's cashier.
    pub welcome: Option<WelcomeCredit>,
    /// ISO 4217 code of the tables' minor units.
    pub currency: String,
    /// Serve over TLS (clients connect with `https://`); `None`: plaintext, which is
    /// refused beyond loopback.
    pub tls: Option<ServerTls>,
    /// What each table's fan-out hub keeps (ring of recent events, how far behind a
    /// subscriber may fall).
    pub fanout: FanoutLimits,
    /// Threads that serve connections, each with its own single-threaded runtime (default:
    /// one per core). See `serve`.
    pub io_threads: usize,
    /// Where a clip of every round is recorded (`None`: no clips).
    #[cfg(feature = "clips")]
    pub clips: Option<Arc<ClipStore>>,
    /// Where the fan-out hubs count subscribers, lag and cut-offs.
    pub metrics: crate::metrics::HubMetricFamilies,
    /// Largest requests, and each player's rate.
    pub limits: RequestLimits,
    /// The player page and gRPC-Web: allowed origins, launch codes.
    pub web: crate::web::WebOptions,
    /// Each table's events also to its stream on NATS JetStream (`--events`), for the
    /// edges; `None`: this process alone serves the players.
    #[cfg(feature = "jetstream")]
    pub events: Option<Arc<crate::events::EventLog>>,
    /// Where the edges reach this broadcaster's PlayerService, written in each table's
    /// record (default: `http://` or `https://` and the address listened on).
    pub advertise: Option<String>,
}

/// Worker threads of the runtime the broadcaster's tables run on (their actors, the
/// release of their records, their wallet and archive deliveries, their fan-out hubs):
/// one for up to four cores, a quarter of the cores (rounded up) above.
///
/// Connections have threads of their own, one a core ([`ServeOptions::io_threads`]). A bet
/// passes from task to task of its table several times, and on a runtime of several
/// workers a hand-off wakes another core's worker, which looks for work to steal first:
/// on 2 cores the server's threads took 71.3 and 73.2 µs a bet on two workers, 68.2 and
/// 68.3 on one (`banco-bench bets`, 20,000 bets a second through the embedded wallet).
/// Machines of more cores were not measured.
pub fn table_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .div_ceil(4)
}

impl ServeOptions {
    /// No welcome credit; EUR; plaintext.
    pub fn new(verifier: Arc<Verifier>, tables: Vec<HostedTable>) -> ServeOptions {
        ServeOptions {
            verifier,
            tables,
            welcome: None,
            currency: "EUR".to_owned(),
            tls: None,
            fanout: FanoutLimits::default(),
            io_threads: std::thread::available_parallelism().map_or(2, usize::from),
            #[cfg(feature = "clips")]
            clips: None,
            metrics: crate::metrics::HubMetricFamilies::default(),
            limits: RequestLimits::default(),
            web: crate::web::WebOptions::default(),
            #[cfg(feature = "jetstream")]
            events: None,
            advertise: None,
        }
    }
}

/// What the broadcaster's own part could not start with; carried as
/// [`ServeError::Service`].
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("table `{0}` is given twice")]
    DuplicateTable(String),
    #[error("welcome credit {0}: must be a positive number of minor units")]
    WelcomeCredit(i64),
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    #[error("could not start a connection thread: {0}")]
    Runtime(#[source] std::io::Error),
}

impl From<StartError> for ServeError {
    fn from(error: StartError) -> ServeError {
        ServeError::service(error)
    }
}

/// How long connections may take to finish their calls once the server stops, before
/// they are closed.
pub const CONNECTION_DRAIN: Duration = Duration::from_secs(10);

/// What every connection is served with.
#[derive(Clone)]
struct Shared {
    /// Every call but Subscribe.
    routes: Routes,
    /// Subscribe, whose streams the connection writes itself.
    subscribe: SubscribeRoute,
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// The player page and gRPC-Web (see `crate::web`).
    web: crate::web::Web,
}

/// Serves TableService (role croupier) and PlayerService (role player) with gRPC health
/// and reflection on `listener` until `shutdown` completes. Over TLS when
/// [`ServeOptions::tls`] is set; plaintext otherwise, refused beyond loopback.
pub async fn serve(
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listening_address(&listener, options.tls.is_some())?;
    if let Some(welcome) = options.welcome.as_ref().filter(|w| w.amount <= 0) {
        return Err(StartError::WelcomeCredit(welcome.amount).into());
    }
    let count = options.tables.len();
    let tables = Arc::new(Tables::new(options.tables));
    if tables.all().count() != count {
        let mut ids: Vec<&str> = Vec::new();
        for t in tables.all() {
            ids.push(t.id());
        }
        return Err(StartError::DuplicateTable(ids.join(", ")).into());
    }

    for table in tables.all() {
        #[cfg(feature = "jetstream")]
        let streamed = options.events.as_ref().and_then(|events| {
            events.start(table.id(), &options.currency, options.fanout.ring_events)
        });
        #[cfg(not(feature = "jetstream"))]
        let streamed = None;
        table
            .start_hub(
                &options.currency,
                options.fanout,
                &options.metrics,
                streamed,
            )
            .await
            .map_err(StartError::from)?;
        #[cfg(feature = "clips")]
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
    let players = AuthInterceptor::new(Arc::clone(&options.verifier), &[Role::Player]);
    let limits = options.limits;
    let table_service = Arc::new(TableServer::new(Arc::clone(&tables)));
    let video_ingest = VideoIngestServer::new(Arc::clone(&tables));
    let player_service = Arc::new(PlayerServer::new(
        Arc::clone(&tables),
        options.welcome,
        options.currency,
    ));
    tracing::info!(
        %addr,
        tables = count,
        tls = options.tls.is_some(),
        "broadcaster serving TableService, PlayerService and VideoIngest"
    );
    let player_guard = PlayerGuard::new(players, &limits);
    // Edges relay a table's video to their viewers with their own (service) token.
    let viewers = player_guard.with_auth(AuthInterceptor::new(
        Arc::clone(&options.verifier),
        &[Role::Player, Role::Service],
    ));
    #[cfg(feature = "jetstream")]
    if let Some(events) = &options.events {
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let owner = options
            .advertise
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{addr}"));
        tokio::spawn(crate::events::write_records(
            events.context().clone(),
            Arc::clone(&tables),
            Arc::clone(&player_service),
            owner,
            events.options().record_every,
        ));
    }
    let (subscribe, mut routes) = player_routes(
        &[
            TableServiceServer::<TableServer>::NAME,
            PlayerServiceServer::<PlayerServer>::NAME,
            VideoIngestService::<VideoIngestServer>::NAME,
        ],
        Arc::clone(&player_service),
        Arc::clone(&player_service) as Arc<dyn Subscriptions>,
        player_service as Arc<dyn VideoSource>,
        PlayerGuards {
            subscribe: player_guard.clone(),
            calls: player_guard,
            video: viewers,
        },
        &limits,
    )
    .await?;
    routes
        .add_service(TableRoutes::new(
            table_service,
            croupiers,
            watchers,
            limits.max_request_bytes,
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
    let player_side = PlayerSide {
        routes: routes.routes(),
        subscribe,
        tls: options.tls.as_ref(),
        web: options.web,
        verifier: &options.verifier,
        io_threads: options.io_threads,
    };
    player_side.serve(listener, shutdown).await
}

/// Who may make a player side's calls: Subscribe, the other PlayerService calls, and
/// WatchVideo.
pub(crate) struct PlayerGuards {
    pub(crate) subscribe: PlayerGuard,
    pub(crate) calls: PlayerGuard,
    pub(crate) video: PlayerGuard,
}

/// The routes of a player side, a broadcaster's or an edge's: health and reflection
/// naming `services`, and PlayerService, whose calls `player` answers and whose WatchVideo
/// `video` does. Subscribe, which the connection threads serve, opens on `subscriptions`:
/// its route comes back beside the builder, to which a broadcaster adds its own services.
pub(crate) async fn player_routes<S: PlayerService>(
    services: &[&str],
    player: Arc<S>,
    subscriptions: Arc<dyn Subscriptions>,
    video: Arc<dyn VideoSource>,
    guards: PlayerGuards,
    limits: &RequestLimits,
) -> Result<(SubscribeRoute, RoutesBuilder), ServeError> {
    let subscribe = SubscribeRoute::new(subscriptions, guards.subscribe, limits);
    let mut routes = Routes::builder();
    add_health_and_reflection(&mut routes, services).await?;
    routes.add_service(PlayerRoutes::new(
        player,
        video,
        guards.calls,
        guards.video,
        limits,
    ));
    Ok((subscribe, routes))
}

/// What the connection threads serve: a broadcaster's, or an edge's, services over the
/// same connections, Subscribe pumps and web side.
pub(crate) struct PlayerSide<'a> {
    /// Every gRPC call but Subscribe.
    pub(crate) routes: Routes,
    pub(crate) subscribe: SubscribeRoute,
    pub(crate) tls: Option<&'a ServerTls>,
    pub(crate) web: crate::web::WebOptions,
    pub(crate) verifier: &'a Arc<Verifier>,
    pub(crate) io_threads: usize,
}

impl PlayerSide<'_> {
    /// Serves on `listener` until `shutdown` completes and connections have drained.
    pub(crate) async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        let tls = self
            .tls
            // web: browsers may choose HTTP/1.1 over TLS.
            .map(|tls| {
                tokio_rustls::TlsAcceptor::from(crate::web::with_http1(&tls.rustls_config()))
            });
        let routes = self.routes.prepare();
        // web: the page, launch codes and gRPC-Web, over the same routes.
        let web = crate::web::Web::new(
            self.web,
            routes.clone(),
            self.subscribe.clone(),
            self.verifier,
        );
        let shared = Shared {
            routes,
            subscribe: self.subscribe,
            tls,
            web,
        };
        threads::serve_on_threads(listener, shared, self.io_threads.max(1), shutdown).await
    }
}
