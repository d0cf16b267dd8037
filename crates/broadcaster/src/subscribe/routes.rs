//! PlayerService as served: the generated service for every call but Subscribe and
//! WatchVideo, whose bytes encoded once for every subscriber (the hub's framed events,
//! the relay's video units) are sent as they are. Subscribe is taken by the connection
//! before the routes see it ([`SubscribeRoute`]): its streams are written by the
//! connection's own task.

use std::sync::Arc;

use banco_wire::pb;
use banco_wire::pb::player_service_server::PlayerServiceServer;
use bytes::Bytes;
use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::server::ServerStreamingService;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::codec::video_codec;
use super::{Subscription, grpc};
use crate::limits::{CallClass, PlayerGuard, RequestLimits};
use crate::player_service::PlayerServer;
use crate::routing::{RouteFuture, forward};

const SUBSCRIBE: &str = "/banco.v1.PlayerService/Subscribe";
const WATCH_VIDEO: &str = "/banco.v1.PlayerService/WatchVideo";

/// The PlayerService router: authentication for every call, Subscribe and WatchVideo
/// pre-encoded.
#[derive(Clone)]
pub(crate) struct PlayerRoutes {
    server: Arc<PlayerServer>,
    guard: PlayerGuard,
    /// Largest request decoded.
    max_request_bytes: usize,
    generated: InterceptedService<PlayerServiceServer<PlayerServer>, PlayerGuard>,
}

impl PlayerRoutes {
    pub(crate) fn new(
        server: Arc<PlayerServer>,
        guard: PlayerGuard,
        limits: &RequestLimits,
    ) -> PlayerRoutes {
        PlayerRoutes {
            generated: InterceptedService::new(
                PlayerServiceServer::from_arc(Arc::clone(&server))
                    .max_decoding_message_size(limits.max_request_bytes),
                guard.clone(),
            ),
            server,
            guard,
            max_request_bytes: limits.max_request_bytes,
        }
    }
}

crate::routing::routed_service!(PlayerRoutes, PlayerServiceServer<PlayerServer>);

impl PlayerRoutes {
    fn route(&mut self, mut request: http::Request<Body>) -> RouteFuture {
        let max = Some(self.max_request_bytes);
        if request.uri().path() == WATCH_VIDEO {
            let call = WatchVideoCall {
                server: Arc::clone(&self.server),
                guard: self.guard.clone(),
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
    server: Arc<PlayerServer>,
    guard: PlayerGuard,
    /// Largest request decoded.
    max_request_bytes: usize,
}

impl SubscribeRoute {
    pub(crate) fn new(
        server: Arc<PlayerServer>,
        guard: PlayerGuard,
        limits: &RequestLimits,
    ) -> SubscribeRoute {
        SubscribeRoute {
            server,
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
        super::open(&self.server, &player, request.into_inner()).await
    }
}

struct WatchVideoCall {
    server: Arc<PlayerServer>,
    guard: PlayerGuard,
}

impl ServerStreamingService<pb::WatchVideoRequest> for WatchVideoCall {
    type Response = Bytes;
    type ResponseStream = crate::video::VideoBytes;
    type Future = BoxFuture<'static, Result<Response<crate::video::VideoBytes>, Status>>;

    fn call(&mut self, request: Request<pb::WatchVideoRequest>) -> Self::Future {
        let server = Arc::clone(&self.server);
        let caller = self.guard.admit(&request, CallClass::Other);
        Box::pin(async move {
            caller?;
            let table = server.table(&request.get_ref().table_id)?;
            Ok(Response::new(table.video().watch()))
        })
    }
}
