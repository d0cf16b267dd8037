//! PlayerService as served: the generated service for every call but Subscribe and
//! WatchVideo, which go through a pre-encoded codec so that the bytes encoded once for
//! every subscriber (the hub's events, the relay's video units) are sent as they are.

use std::sync::Arc;

use banco_wire::pb;
use banco_wire::pb::player_service_server::PlayerServiceServer;
use bytes::Bytes;
use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::server::ServerStreamingService;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use super::EventBytes;
use super::codec::{events_codec, video_codec};
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
        if request.uri().path() == SUBSCRIBE {
            let call = SubscribeCall {
                server: Arc::clone(&self.server),
                guard: self.guard.clone(),
            };
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(events_codec())
                    .apply_max_message_size_config(max, None);
                Ok(grpc.server_streaming(call, request).await)
            })
        } else if request.uri().path() == WATCH_VIDEO {
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

struct SubscribeCall {
    server: Arc<PlayerServer>,
    guard: PlayerGuard,
}

impl ServerStreamingService<pb::SubscribeRequest> for SubscribeCall {
    type Response = Bytes;
    type ResponseStream = EventBytes;
    type Future = BoxFuture<'static, Result<Response<EventBytes>, Status>>;

    fn call(&mut self, request: Request<pb::SubscribeRequest>) -> Self::Future {
        let server = Arc::clone(&self.server);
        let caller = self.guard.admit(&request, CallClass::Other);
        Box::pin(async move {
            let player = caller?.sub;
            let stream = super::open(&server, &player, request.into_inner()).await?;
            Ok(Response::new(stream))
        })
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
