//! PlayerService as served: the generated service for every call but Subscribe and
//! WatchVideo, whose bytes encoded once for every subscriber (the hub's framed events,
//! the relay's video units) are sent as they are. Subscribe is taken by the connection
//! before the routes see it ([`SubscribeRoute`]): its streams are written by the
//! connection's own task.

use std::sync::Arc;

use banco_wire::pb;
use banco_wire::pb::player_service_server::{PlayerService, PlayerServiceServer};
use bytes::Bytes;
use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::server::ServerStreamingService;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::codec::video_codec;
use super::{Subscription, Subscriptions, grpc};
use crate::limits::{CallClass, PlayerGuard, RequestLimits};
use crate::player_service::PlayerServer;
use crate::routing::{RouteFuture, forward};
use crate::video::VideoBytes;

/// Where WatchVideo's streams come from: a table's own relay, or (on an edge) the relay
/// of the table's upstream.
pub(crate) trait VideoSource: Send + Sync + 'static {
    fn watch(&self, table_id: &str) -> Result<VideoBytes, Status>;
}

impl VideoSource for PlayerServer {
    fn watch(&self, table_id: &str) -> Result<VideoBytes, Status> {
        Ok(self.table(table_id)?.video().watch())
    }
}

const SUBSCRIBE: &str = "/banco.v1.PlayerService/Subscribe";
const WATCH_VIDEO: &str = "/banco.v1.PlayerService/WatchVideo";

/// The PlayerService router: authentication for every call, Subscribe and WatchVideo
/// pre-encoded; `S` answers the other calls (the tables hosted here, or an edge's
/// forwarding).
pub(crate) struct PlayerRoutes<S: PlayerService> {
    video: Arc<dyn VideoSource>,
    /// Players, and (on a broadcaster) the edges relaying a table's video to theirs.
    video_guard: PlayerGuard,
    /// Largest request decoded.
    max_request_bytes: usize,
    generated: InterceptedService<PlayerServiceServer<S>, PlayerGuard>,
}

impl<S: PlayerService> Clone for PlayerRoutes<S> {
    fn clone(&self) -> Self {
        PlayerRoutes {
            video: Arc::clone(&self.video),
            video_guard: self.video_guard.clone(),
            max_request_bytes: self.max_request_bytes,
            generated: self.generated.clone(),
        }
    }
}

impl<S: PlayerService> PlayerRoutes<S> {
    pub(crate) fn new(
        server: Arc<S>,
        video: Arc<dyn VideoSource>,
        guard: PlayerGuard,
        video_guard: PlayerGuard,
        limits: &RequestLimits,
    ) -> PlayerRoutes<S> {
        PlayerRoutes {
            generated: InterceptedService::new(
                PlayerServiceServer::from_arc(server)
                    .max_decoding_message_size(limits.max_request_bytes),
                guard,
            ),
            video,
            video_guard,
            max_request_bytes: limits.max_request_bytes,
        }
    }
}

impl<S: PlayerService> tonic::server::NamedService for PlayerRoutes<S> {
    const NAME: &'static str = <PlayerServiceServer<S> as tonic::server::NamedService>::NAME;
}

impl<S: PlayerService> tower_service::Service<http::Request<Body>> for PlayerRoutes<S> {
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = RouteFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::convert::Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        self.route(request)
    }
}

impl<S: PlayerService> PlayerRoutes<S> {
    fn route(&mut self, mut request: http::Request<Body>) -> RouteFuture {
        let max = Some(self.max_request_bytes);
        if request.uri().path() == WATCH_VIDEO {
            let call = WatchVideoCall {
                video: Arc::clone(&self.video),
                guard: self.video_guard.clone(),
            };
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(video_codec())
                    .apply_max_message_size_config(max, None);
                Ok(grpc.server_streaming(call, request).await)
            })
        } else {
            // The guard draws on the caller's bet or call budget by this.
            let class = CallClass::of_path(request.uri().path());
            request.extensions_mut().insert(class);
            forward(self.generated.clone(), request)
        }
    }
}

/// Subscribe, which the connection serves itself (see `serve`): the caller admitted,
/// then its stream of already framed events.
#[derive(Clone)]
pub(crate) struct SubscribeRoute {
    source: Arc<dyn Subscriptions>,
    guard: PlayerGuard,
    /// Largest request decoded.
    max_request_bytes: usize,
}

impl SubscribeRoute {
    pub(crate) fn new(
        source: Arc<dyn Subscriptions>,
        guard: PlayerGuard,
        limits: &RequestLimits,
    ) -> SubscribeRoute {
        SubscribeRoute {
            source,
            guard,
            max_request_bytes: limits.max_request_bytes,
        }
    }

    /// Whether `request` is a Subscribe call.
    pub(crate) fn takes<B>(request: &http::Request<B>) -> bool {
        request.uri().path() == SUBSCRIBE
    }

    /// The caller's stream of events, or why not.
    pub(crate) async fn open(&self, request: http::Request<Body>) -> Result<Subscription, Status> {
        let request =
            grpc::unary_request::<pb::SubscribeRequest>(request, self.max_request_bytes).await?;
        let player = self.guard.admit(&request, CallClass::Other)?.sub;
        Arc::clone(&self.source).open(player, request).await
    }
}

struct WatchVideoCall {
    video: Arc<dyn VideoSource>,
    guard: PlayerGuard,
}

impl ServerStreamingService<pb::WatchVideoRequest> for WatchVideoCall {
    type Response = Bytes;
    type ResponseStream = VideoBytes;
    type Future = BoxFuture<'static, Result<Response<VideoBytes>, Status>>;

    fn call(&mut self, request: Request<pb::WatchVideoRequest>) -> Self::Future {
        let video = Arc::clone(&self.video);
        let caller = self.guard.admit(&request, CallClass::Other);
        Box::pin(async move {
            caller?;
            Ok(Response::new(video.watch(&request.get_ref().table_id)?))
        })
    }
}
