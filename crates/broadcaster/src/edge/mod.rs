//! `banco edge`: PlayerService for players, served from each table's event stream on NATS
//! JetStream, by a process that holds no table state (`docs/src/decisions/0005-jetstream-edges.md`,
//! and `docs/src/operations/studio.md` for a deployment).
//!
//! - Subscribe: each table an edge's players follow has a hub here fed by the table's
//!   stream ([`reader`], `hub::StreamHub`): the broadcaster's own fan-out (ring, feeds,
//!   queues, cut-offs, the connection threads), so a resume point is valid on any edge and
//!   a player moved from one edge to another, or across a broadcaster's restart, gets
//!   exactly what it missed. A new subscriber's snapshot (the table, and their own bets and
//!   balance) comes from the table's broadcaster, which alone knows the player's money: it
//!   is the first event of a Subscribe made there in the player's name, with the seq the
//!   stream is numbered by.
//! - The lobby is every table's record in the bucket of table records ([`directory`]).
//! - Bets, seats, chat and the rest are forwarded to the table's broadcaster with the
//!   caller's own bearer token ([`upstream`], [`player`]): the broadcaster checks it and
//!   applies its own rate limits and idempotency keys as if the player had called it, and
//!   an edge can never act as a player who did not call it (it holds no token that could).
//! - WatchVideo: one upstream per table per edge, relayed with the same GOP cache and
//!   keyframe-skip rules ([`video`]); the upstream uses the edge's `service` token, which
//!   a broadcaster admits to WatchVideo.
//!
//! Served on the broadcaster's own connection threads, Subscribe pumps and web side
//! (gRPC-Web and the player page), with health and reflection.

mod directory;
mod error;
mod player;
mod reader;
mod upstream;
mod video;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use banco_auth::{AuthInterceptor, ClientTls, Role, ServerTls, Verifier};
use banco_serving::{ServeError, listening_address};
use banco_wire::pb;
use banco_wire::pb::player_service_server::PlayerServiceServer;
use futures::future::BoxFuture;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};
use tonic::Status;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::server::NamedService as _;

use crate::events::{self, tail};
use crate::hub::{FanoutLimits, From, Hub, StreamHub};
use crate::limits::{PlayerGuard, RequestLimits};
use crate::metrics::EdgeMetricFamilies;
use crate::serve::{PlayerGuards, player_routes};
use crate::subscribe::{Fresh, Subscription, Subscriptions, VideoSource, open_on};

use directory::Directory;
pub(crate) use error::EdgeError;
use upstream::{Upstreams, as_caller};
use video::EdgeVideo;

/// How long an edge waits at start for the lobby's first read before serving (a player
/// who comes sooner is told the table is not known yet, and retries).
const LOBBY_WAIT: Duration = Duration::from_secs(3);

/// How to serve as an edge.
#[derive(Debug)]
pub struct EdgeOptions {
    /// The NATS server (or cluster) the broadcasters publish to: `nats://host:4222`.
    pub events: String,
    /// Checks every player's token (the same key the broadcasters check with).
    pub verifier: Arc<Verifier>,
    /// The edge's own token (role `service`), for the tables' video.
    pub service_token: String,
    /// The CA the broadcasters' TLS certificates are signed by (`https://` owners).
    pub upstream_tls: Option<ClientTls>,
    /// Serve over TLS; `None`: plaintext, which is refused beyond loopback.
    pub tls: Option<ServerTls>,
    /// What each table's hub here keeps (its ring is what a resume can come back to).
    pub fanout: FanoutLimits,
    pub io_threads: usize,
    pub limits: RequestLimits,
    pub web: crate::web::WebOptions,
    pub metrics: EdgeMetricFamilies,
}

impl EdgeOptions {
    /// The defaults, with a ring of 65,536 events per table: an edge's players resume
    /// from it, across a broadcaster's restart too.
    pub fn new(events: String, verifier: Arc<Verifier>, service_token: String) -> EdgeOptions {
        EdgeOptions {
            events,
            verifier,
            service_token,
            upstream_tls: None,
            tls: None,
            fanout: FanoutLimits {
                ring_events: 65_536,
                ..FanoutLimits::default()
            },
            io_threads: std::thread::available_parallelism().map_or(2, usize::from),
            limits: RequestLimits::default(),
            web: crate::web::WebOptions::default(),
            metrics: EdgeMetricFamilies::default(),
        }
    }
}

/// What an edge serves from.
#[derive(Debug)]
pub(crate) struct Edge {
    js: jetstream::Context,
    directory: Arc<Directory>,
    upstreams: Arc<Upstreams>,
    /// The hub of each table a player follows here, started with the first.
    hubs: Mutex<HashMap<String, Hub>>,
    video: EdgeVideo,
    fanout: FanoutLimits,
    metrics: EdgeMetricFamilies,
}

impl Edge {
    /// The record of `table_id`, or why there is none.
    fn record(&self, table_id: &str) -> Result<pb::TableRecord, EdgeError> {
        if table_id.is_empty() {
            return Err(banco_wire::ConversionError::missing("table_id").into());
        }
        self.directory
            .get(table_id)
            .ok_or_else(|| EdgeError::UnknownTable(table_id.chars().take(64).collect()))
    }

    /// The hub of `table_id` here, started (its stream opened) if it was not.
    async fn hub(&self, table_id: &str) -> Result<Hub, EdgeError> {
        let mut hubs = self.hubs.lock().await;
        if let Some(hub) = hubs.get(table_id) {
            return Ok(hub.clone());
        }
        let keep = self.fanout.ring_events;
        let opened = tail::open(&self.js, table_id, keep, None, None)
            .await
            .map_err(|e| EdgeError::Stream {
                table: table_id.to_owned(),
                why: e.to_string(),
            })?;
        let (items, read) = mpsc::channel(reader::AHEAD);
        let hub = StreamHub::start(
            table_id,
            self.fanout,
            self.metrics.hub.for_table(table_id),
            self.metrics.stream_lag(table_id),
            read,
            opened.whole,
        );
        tokio::spawn(reader::read(
            self.js.clone(),
            table_id.to_owned(),
            keep,
            opened,
            items,
        ));
        hubs.insert(table_id.to_owned(), hub.clone());
        Ok(hub)
    }

    /// The seq of the last event in `table_id`'s stream (0: none).
    async fn stream_last(&self, table_id: &str) -> Result<u64, EdgeError> {
        let failed = |why: String| EdgeError::Stream {
            table: table_id.to_owned(),
            why,
        };
        let stream = self
            .js
            .get_stream(events::layout::stream_name(table_id))
            .await
            .map_err(|e| failed(e.to_string()))?;
        match stream
            .get_last_raw_message_by_subject(&events::layout::subject(table_id))
            .await
        {
            Ok(message) => events::layout::event(Some(&message.headers), &message.payload)
                .map(|e| e.seq)
                .map_err(|e| failed(e.to_string())),
            Err(e)
                if matches!(
                    e.kind(),
                    async_nats::jetstream::stream::LastRawMessageErrorKind::NoMessageFound
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// A new subscriber's snapshot from the table's broadcaster, in the player's name.
    async fn snapshot(
        &self,
        owner: &str,
        token: &MetadataValue<Ascii>,
        table_id: &str,
    ) -> Result<Fresh, Status> {
        let mut client = self.upstreams.client(owner)?;
        let mut events = client
            .subscribe(as_caller(
                pb::SubscribeRequest {
                    table_id: table_id.to_owned(),
                    resume_from_seq: 0,
                },
                token,
            ))
            .await?
            .into_inner();
        // Only the first event is needed: the stream is dropped (and the broadcaster lets
        // go of it) once it is read.
        let first = events
            .message()
            .await?
            .ok_or_else(|| EdgeError::NoSnapshot(table_id.to_owned()))?;
        if !matches!(first.event, Some(pb::table_event::Event::Snapshot(_))) {
            return Err(EdgeError::NoSnapshot(table_id.to_owned()).into());
        }
        Ok(Fresh {
            bytes: banco_wire::framing::frame(&first),
            seq: first.seq,
        })
    }

    /// `player`'s stream of the table `request` names; `token` is their `authorization`.
    async fn subscribe(
        &self,
        player: String,
        token: MetadataValue<Ascii>,
        request: pb::SubscribeRequest,
    ) -> Result<Subscription, Status> {
        let table_id = request.table_id.as_str();
        let record = self.record(table_id)?;
        let hub = self.hub(table_id).await?;
        let resume = request.resume_from_seq;
        let from = if resume == 0 {
            None
        } else if resume <= hub.last_seq() {
            Some(From::Resume(resume))
        } else if resume <= self.stream_last(table_id).await? {
            // Seen on another edge that reads the stream ahead of this one: the events
            // after it are on their way here.
            Some(From::InStream(resume))
        } else {
            // Beyond the stream: a number no broadcaster sent (a snapshot puts it right).
            Some(From::Resume(resume))
        };
        open_on(&hub, &player, from, || {
            self.snapshot(&record.owner, &token, table_id)
        })
        .await
    }
}

impl Subscriptions for Edge {
    fn open(
        self: Arc<Self>,
        player: String,
        request: tonic::Request<pb::SubscribeRequest>,
    ) -> BoxFuture<'static, Result<Subscription, Status>> {
        Box::pin(async move {
            let token = request
                .metadata()
                .get("authorization")
                .cloned()
                .ok_or(EdgeError::NoToken)?;
            self.subscribe(player, token, request.into_inner()).await
        })
    }
}

impl VideoSource for Edge {
    fn watch(&self, table_id: &str) -> Result<crate::video::VideoBytes, Status> {
        self.video.watch(table_id)
    }
}

/// Serves PlayerService as an edge on `listener` until `shutdown` completes. Over TLS when
/// [`EdgeOptions::tls`] is set; plaintext otherwise, refused beyond loopback.
pub async fn serve_edge(
    listener: TcpListener,
    options: EdgeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listening_address(&listener, options.tls.is_some())?;
    let token = MetadataValue::try_from(format!("Bearer {}", options.service_token.trim()))
        .map_err(|_| {
            ServeError::service(EdgeStartError::Token(
                "it holds characters a header cannot carry".to_owned(),
            ))
        })?;
    let client = events::connect(&options.events, "banco edge")
        .await
        .map_err(ServeError::service)?;
    let js = jetstream::new(client);
    let directory = Directory::watch(js.clone());
    directory.loaded(LOBBY_WAIT).await;
    let upstreams = Arc::new(Upstreams::new(options.upstream_tls));
    let edge = Arc::new(Edge {
        video: EdgeVideo::new(
            Arc::clone(&directory),
            Arc::clone(&upstreams),
            token,
            options.metrics.video.clone(),
        ),
        js,
        directory,
        upstreams,
        hubs: Mutex::new(HashMap::new()),
        fanout: options.fanout,
        metrics: options.metrics,
    });
    let limits = options.limits;
    let players = AuthInterceptor::new(Arc::clone(&options.verifier), &[Role::Player]);
    let guard = PlayerGuard::new(players, &limits);
    let (subscribe, routes) = player_routes(
        &[PlayerServiceServer::<player::EdgePlayer>::NAME],
        Arc::new(player::EdgePlayer::new(Arc::clone(&edge))),
        Arc::clone(&edge) as Arc<dyn Subscriptions>,
        Arc::clone(&edge) as Arc<dyn VideoSource>,
        PlayerGuards {
            subscribe: guard.clone(),
            calls: guard.clone().keeping_token(),
            video: guard,
        },
        &limits,
    )
    .await?;
    tracing::info!(%addr, tls = options.tls.is_some(), nats = %options.events, "edge serving PlayerService from the tables' streams");
    let closing = Arc::clone(&edge);
    let shutdown = async move {
        shutdown.await;
        // Video streams never end by themselves: end them, so that connections drain.
        closing.video.close();
    };
    let player_side = crate::serve::PlayerSide {
        routes: routes.routes(),
        subscribe,
        tls: options.tls.as_ref(),
        web: options.web,
        verifier: &options.verifier,
        io_threads: options.io_threads,
    };
    player_side.serve(listener, shutdown).await
}

/// What an edge could not start with; carried as [`ServeError::Service`].
#[derive(Debug, thiserror::Error)]
pub enum EdgeStartError {
    #[error("the service token: {0}")]
    Token(String),
}
