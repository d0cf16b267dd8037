//! PlayerService over gRPC-Web. tonic-web translates each call (the request's framing,
//! the response's trailers written into its body, the base64 `-text` variant) around the
//! same routes gRPC calls take, so every call has the same authentication, limits and
//! answers. Subscribe, which the HTTP/2 connections write themselves, is a stream of its
//! own here: the hub's framed events, then the status the stream ends with, which is
//! UNAVAILABLE (resume from your last seq) when the broadcaster stops.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use http::{HeaderMap, HeaderValue, header};
use http_body::Frame;
use tokio::sync::watch;
use tonic::Status;
use tonic::body::Body;
use tonic::service::Routes;
use tower_layer::Layer as _;
use tower_service::Service;

use crate::subscribe::{SubscribeRoute, Subscription, trailers};

const PLAYER_SERVICE: &str = "/banco.v1.PlayerService/";

/// Whether `headers` say gRPC-Web (`application/grpc-web`, `+proto`, `-text`).
pub(super) fn is_grpc_web(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/grpc-web"))
}

/// The calls gRPC-Web reaches.
#[derive(Clone)]
pub(super) struct Calls {
    routes: Routes,
    subscribe: SubscribeRoute,
}

impl Calls {
    pub(super) fn new(routes: Routes, subscribe: SubscribeRoute) -> Calls {
        Calls { routes, subscribe }
    }

    /// Serves one gRPC-Web call; a Subscribe stream ends once `stopping` turns true.
    pub(super) async fn call(
        &self,
        request: http::Request<Body>,
        stopping: watch::Receiver<bool>,
    ) -> http::Response<Body> {
        let inner = Grpc {
            routes: self.routes.clone(),
            subscribe: self.subscribe.clone(),
            stopping,
        };
        let mut web = tonic_web::GrpcWebLayer::new().layer(inner);
        match web.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// The gRPC side of one call, after tonic-web's translation.
#[derive(Clone)]
struct Grpc {
    routes: Routes,
    subscribe: SubscribeRoute,
    stopping: watch::Receiver<bool>,
}

impl Service<http::Request<Body>> for Grpc {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // As on gRPC: a call not answered within the caller's `grpc-timeout` is answered
        // DEADLINE_EXCEEDED (here, after tonic-web's translation, so in gRPC-Web).
        let timeout = match crate::serve::deadline::of(request.headers()) {
            Ok(timeout) => timeout,
            Err(refused) => return Box::pin(async move { Ok(refused.into_http()) }),
        };
        let answer = self.answer(request);
        Box::pin(async move {
            match timeout {
                None => answer.await,
                Some(timeout) => match tokio::time::timeout(timeout, answer).await {
                    Ok(answered) => answered,
                    Err(_) => Ok(crate::serve::deadline::exceeded(timeout).into_http()),
                },
            }
        })
    }
}

impl Grpc {
    fn answer(
        &mut self,
        request: http::Request<Body>,
    ) -> BoxFuture<'static, Result<http::Response<Body>, Infallible>> {
        let path = request.uri().path();
        if !path.starts_with(PLAYER_SERVICE) {
            let refused = Status::unimplemented(format!(
                "only PlayerService is served over gRPC-Web, not `{}`: other services take gRPC",
                path.chars().take(100).collect::<String>()
            ));
            return Box::pin(async move { Ok(refused.into_http()) });
        }
        if SubscribeRoute::takes(&request) {
            let route = self.subscribe.clone();
            let stopping = self.stopping.clone();
            return Box::pin(async move {
                Ok(match route.open(request).await {
                    Ok(events) => {
                        let mut response =
                            http::Response::new(Body::new(Events::new(events, stopping)));
                        response.headers_mut().insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/grpc"),
                        );
                        response
                    }
                    Err(status) => status.into_http(),
                })
            });
        }
        let mut routes = self.routes.clone();
        Box::pin(async move { routes.call(request).await })
    }
}

/// A Subscribe stream as an HTTP body: each framed event as it comes, then the status as
/// trailers (which tonic-web writes into the body).
struct Events {
    events: Subscription,
    stopped: BoxFuture<'static, ()>,
    ended: bool,
}

impl Events {
    fn new(events: Subscription, mut stopping: watch::Receiver<bool>) -> Events {
        Events {
            events,
            stopped: async move {
                // A dropped sender means the server is gone: stop as well.
                let _ = stopping.wait_for(|stop| *stop).await;
            }
            .boxed(),
            ended: false,
        }
    }

    fn end(&mut self, status: &Status) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.ended = true;
        Poll::Ready(Some(Ok(Frame::trailers(trailers(status)))))
    }
}

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if self.stopped.poll_unpin(cx).is_ready() {
            return self.end(&Status::unavailable(
                "this server is shutting down: subscribe again with the last seq you saw \
                 as resume_from_seq",
            ));
        }
        match self.events.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(bytes))) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
            Poll::Ready(Some(Err(status))) => self.end(&status),
            Poll::Ready(None) => self.end(&Status::ok("")),
            Poll::Pending => Poll::Pending,
        }
    }
}
