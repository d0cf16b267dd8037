//! Serving gRPC services as every banco service does: TLS beyond loopback, health,
//! reflection, each service behind its role guard.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use banco_auth::{AuthInterceptor, Role, ServerTls, Verifier, require_tls_unless_loopback};
use banco_wire::FILE_DESCRIPTOR_SET;
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::RoutesBuilder;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;

use crate::error::ServeError;

/// The address `listener` is bound to, refused when it reaches beyond loopback and `tls`
/// is false (bearer tokens would cross the network in clear).
pub fn listening_address(listener: &TcpListener, tls: bool) -> Result<SocketAddr, ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Address)?;
    require_tls_unless_loopback(addr, tls)?;
    Ok(addr)
}

/// Adds gRPC health (each of `serving`, by its full name, and the server as a whole
/// `SERVING`) and reflection over every banco service's descriptors to `routes`.
pub async fn add_health_and_reflection(
    routes: &mut RoutesBuilder,
    serving: &[&str],
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    for name in serving {
        health
            .set_service_status(*name, ServingStatus::Serving)
            .await;
    }
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    routes.add_service(health_service).add_service(reflection);
    Ok(())
}

/// A tonic server of one or more banco services, each behind the token interceptor with
/// the roles it admits, with health and reflection, over TLS when given one (plaintext is
/// refused beyond loopback).
///
/// The largest request a service takes is its generated server's
/// `max_decoding_message_size`, set before it is added: a larger one is refused with
/// OUT_OF_RANGE naming the limit, before it is decoded.
#[derive(Debug)]
pub struct GrpcServer {
    /// Who serves, for the log: `validator`, `archive`.
    name: &'static str,
    verifier: Arc<Verifier>,
    tls: Option<ServerTls>,
    routes: RoutesBuilder,
    /// Full names of the services added, for health and the log.
    services: Vec<&'static str>,
}

impl GrpcServer {
    /// A server named `name` in its log, checking tokens with `verifier`, over TLS with
    /// `tls` (`None`: plaintext, on loopback only).
    pub fn new(name: &'static str, verifier: Arc<Verifier>, tls: Option<ServerTls>) -> Self {
        GrpcServer {
            name,
            verifier,
            tls,
            routes: RoutesBuilder::default(),
            services: Vec::new(),
        }
    }

    /// Serves `service` to callers whose token has one of `roles` (others are refused
    /// before it is called: UNAUTHENTICATED without a valid token, PERMISSION_DENIED naming
    /// the role).
    #[must_use]
    pub fn add_service<S>(mut self, service: S, roles: &[Role]) -> Self
    where
        S: tower_service::Service<
                http::Request<Body>,
                Response = http::Response<Body>,
                Error = Infallible,
            > + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let guard = AuthInterceptor::new(Arc::clone(&self.verifier), roles);
        self.routes
            .add_service(InterceptedService::new(service, guard));
        self.services.push(S::NAME);
        self
    }

    /// Serves on `listener` until `shutdown` completes, then lets the calls in progress
    /// finish.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        let addr = listening_address(&listener, self.tls.is_some())?;
        let mut builder = Server::builder();
        if let Some(tls) = &self.tls {
            builder = builder.tls_config(tls.config())?;
        }
        let mut routes = self.routes;
        add_health_and_reflection(&mut routes, &self.services).await?;
        let short: Vec<&str> = self
            .services
            .iter()
            .map(|name| name.rsplit('.').next().unwrap_or(name))
            .collect();
        tracing::info!(
            %addr,
            tls = self.tls.is_some(),
            "{} serving {}",
            self.name,
            short.join(", ")
        );
        builder
            .add_routes(routes.routes())
            // Small replies must leave at once: with Nagle on, each answer waits for the
            // client's delayed ACK (measured: about 44 ms per card check).
            .serve_with_incoming_shutdown(
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                shutdown,
            )
            .await?;
        Ok(())
    }
}
