//! What the hand-written routers share ([`crate::subscribe::PlayerRoutes`],
//! [`crate::table_routes::TableRoutes`]): the tower `Service` around an inherent
//! `route` method, and forwarding to a generated (intercepted) service.

use std::convert::Infallible;

use futures::future::BoxFuture;
use tonic::body::Body;
use tower_service::Service;

/// What a router's `route` returns.
pub(crate) type RouteFuture = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

/// Hands `request` to a generated service, as it is.
pub(crate) fn forward<S, B>(mut service: S, request: http::Request<Body>) -> RouteFuture
where
    S: Service<http::Request<Body>, Response = http::Response<B>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: tonic::codegen::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError>,
{
    Box::pin(async move {
        let response = service.call(request).await?;
        Ok(response.map(Body::new))
    })
}

/// Implements `NamedService` (as `$generated`) and the tower `Service` for `$router`,
/// whose inherent `fn route(&mut self, http::Request<Body>) -> RouteFuture` decides.
macro_rules! routed_service {
    ($router:ty, $generated:ty) => {
        impl tonic::server::NamedService for $router {
            const NAME: &'static str = <$generated as tonic::server::NamedService>::NAME;
        }

        impl tower_service::Service<http::Request<tonic::body::Body>> for $router {
            type Response = http::Response<tonic::body::Body>;
            type Error = std::convert::Infallible;
            type Future = $crate::routing::RouteFuture;

            fn poll_ready(
                &mut self,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), std::convert::Infallible>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
                self.route(request)
            }
        }
    };
}
pub(crate) use routed_service;
