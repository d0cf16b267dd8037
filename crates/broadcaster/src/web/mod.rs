//! Players in a browser: the player page and PlayerService over gRPC-Web, on the same
//! listener as every gRPC call.
//!
//! A browser cannot speak gRPC (it has no HTTP trailers and, without TLS, no HTTP/2), so
//! beside gRPC the broadcaster serves:
//!
//! - the page's files, built into the binary ([`assets`]), at `/`, with their content
//!   types, caching and a content security policy;
//! - PlayerService over gRPC-Web ([`grpc_web`]: tonic-web's translation around the same
//!   routes, and Subscribe as its own stream), over HTTP/1.1 ([`http1`]) and HTTP/2;
//! - the launch codes an operator's lobby hands a player over with ([`launch`]);
//! - the origin rules: the page's own origin, and only the origins the operator allows
//!   ([`cors`]).
//!
//! The hooks in `serve`: a plaintext connection that does not open with HTTP/2's preface
//! (or a TLS one that chose `http/1.1`) is served by [`http1`]; on HTTP/2, a request that
//! is not gRPC goes to [`WebService`] instead of tonic's routes.

mod assets;
mod cors;
mod grpc_web;
mod http1;
mod launch;
mod response;

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{Method, header};
use tokio::sync::watch;
use tonic::body::Body;
use tonic::service::Routes;

pub use cors::{Origin, OriginError};
pub(crate) use http1::{serve as serve_http1, starts_http2};

use crate::subscribe::SubscribeRoute;

/// How the page and gRPC-Web are served.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// Origins besides the page's own whose pages may call PlayerService over gRPC-Web
    /// and frame the page (an operator's lobby); none by default.
    pub allowed_origins: Vec<Origin>,
    /// How long a launch code may wait to be exchanged for its token.
    pub launch_ttl: Duration,
}

impl Default for WebOptions {
    fn default() -> WebOptions {
        WebOptions {
            allowed_origins: Vec::new(),
            launch_ttl: launch::DEFAULT_TTL,
        }
    }
}

/// What every connection's [`WebService`] shares.
#[derive(Clone)]
pub(crate) struct Web {
    origins: Arc<cors::Origins>,
    launch: Arc<launch::Launch>,
    grpc: grpc_web::Calls,
}

impl Web {
    pub(crate) fn new(
        options: WebOptions,
        routes: Routes,
        subscribe: SubscribeRoute,
        verifier: &Arc<banco_auth::Verifier>,
    ) -> Web {
        Web {
            origins: Arc::new(cors::Origins::new(options.allowed_origins)),
            launch: Arc::new(launch::Launch::new(verifier, options.launch_ttl)),
            grpc: grpc_web::Calls::new(routes, subscribe),
        }
    }

    /// The service of one connection: `secure` over TLS; its streams end once `stopping`
    /// turns true.
    pub(crate) fn service(&self, secure: bool, stopping: watch::Receiver<bool>) -> WebService {
        WebService {
            web: self.clone(),
            secure,
            stopping,
        }
    }
}

/// `config` also offering HTTP/1.1 by ALPN, for browsers that choose it over TLS.
pub(crate) fn with_http1(
    config: &tokio_rustls::rustls::ServerConfig,
) -> Arc<tokio_rustls::rustls::ServerConfig> {
    let mut config = config.clone();
    if !config.alpn_protocols.iter().any(|p| p == b"http/1.1") {
        config.alpn_protocols.push(b"http/1.1".to_vec());
    }
    Arc::new(config)
}

/// Whether an HTTP/2 request is for the web side: anything but a gRPC call.
pub(crate) fn takes<B>(request: &http::Request<B>) -> bool {
    match request.headers().get(header::CONTENT_TYPE) {
        Some(kind) if kind.as_bytes().starts_with(b"application/grpc") => {
            grpc_web::is_grpc_web(request.headers())
        }
        _ => true,
    }
}

/// The page, the launch codes and gRPC-Web, for one connection.
#[derive(Clone)]
pub(crate) struct WebService {
    web: Web,
    secure: bool,
    stopping: watch::Receiver<bool>,
}

impl tower_service::Service<http::Request<Body>> for WebService {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.answer(request).await) })
    }
}

impl WebService {
    async fn answer(self, request: http::Request<Body>) -> http::Response<Body> {
        let own = cors::own_origin(&request, self.secure);
        let origin = match self.web.origins.check(&request, own.as_deref()) {
            Ok(origin) => origin,
            Err(refused) => {
                let mut refused = response::text(http::StatusCode::FORBIDDEN, &refused);
                cors::From::Unstated.allow(refused.headers_mut());
                return refused;
            }
        };
        let path = request.uri().path().to_owned();
        let mut response = if request.method() == Method::OPTIONS {
            return self.web.origins.preflight(&request, &origin);
        } else if grpc_web::is_grpc_web(request.headers()) {
            self.web.grpc.call(request, self.stopping.clone()).await
        } else if path == launch::CREATE || path == launch::EXCHANGE {
            if request.method() != Method::POST {
                response::text(
                    http::StatusCode::METHOD_NOT_ALLOWED,
                    &format!("{path} takes POST"),
                )
            } else if path == launch::CREATE {
                self.web.launch.create(request).await
            } else if origin.is_cross_site() {
                // The token is for the page alone: no other site may take it.
                response::json_error(
                    http::StatusCode::FORBIDDEN,
                    &format!("{path} answers only the player page's own origin"),
                )
            } else {
                self.web.launch.exchange(request).await
            }
        } else if request.method() == Method::GET || request.method() == Method::HEAD {
            assets::serve(&request, &self.web.origins)
        } else {
            response::text(
                http::StatusCode::METHOD_NOT_ALLOWED,
                &format!("{} {path}: the page is read with GET", request.method()),
            )
        };
        origin.allow(response.headers_mut());
        response
    }
}
