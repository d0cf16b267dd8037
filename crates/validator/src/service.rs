//! The tonic service: each handler converts, calls [`crate::rules`], converts back. There is
//! no state to share, so there is no actor here; the table actor is the stateful side.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use banco_auth::{
    AuthInterceptor, Role, ServerTls, TransportPolicyError, Verifier, require_tls_unless_loopback,
};
use banco_wire::pb::rules_service_server::{RulesService, RulesServiceServer};
use banco_wire::{FILE_DESCRIPTOR_SET, pb};
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

use crate::metrics::{ValidatorMetrics, code_label};
use crate::rules;

/// The largest request taken, encoded.
pub(crate) const MAX_REQUEST_BYTES: usize = 4 << 20;

/// Who may ask: the table actor (service) and auditors replaying the archive.
pub const ALLOWED_ROLES: [Role; 2] = [Role::Service, Role::Auditor];

/// The RulesService implementation; stateless but for its counters.
#[derive(Clone, Debug, Default)]
pub struct RulesServer {
    metrics: Option<ValidatorMetrics>,
}

impl RulesServer {
    /// A server that counts its requests into `metrics`.
    pub fn with_metrics(metrics: ValidatorMetrics) -> RulesServer {
        RulesServer {
            metrics: Some(metrics),
        }
    }

    /// Answers with `answer`, counted by `rpc` and its result.
    fn counted<T>(
        &self,
        rpc: &'static str,
        answer: impl FnOnce() -> Result<T, Status>,
        refused: impl FnOnce(&T) -> bool,
    ) -> Result<Response<T>, Status> {
        let started = Instant::now();
        let result = answer();
        if let Some(metrics) = &self.metrics {
            let label = match &result {
                Ok(reply) if refused(reply) => "refused",
                Ok(_) => "ok",
                Err(status) => code_label(status.code()),
            };
            metrics.observe(rpc, label, started.elapsed());
        }
        result.map(Response::new)
    }
}

#[tonic::async_trait]
impl RulesService for RulesServer {
    async fn check_card(
        &self,
        request: Request<pb::CheckCardRequest>,
    ) -> Result<Response<pb::CheckCardResponse>, Status> {
        self.counted(
            "check_card",
            || Ok(rules::check_card(request.into_inner())?),
            |reply| !reply.accepted,
        )
    }

    async fn next_due(
        &self,
        request: Request<pb::NextDueRequest>,
    ) -> Result<Response<pb::NextDueResponse>, Status> {
        self.counted(
            "next_due",
            || Ok(rules::next_due(request.into_inner())?),
            |_| false,
        )
    }

    async fn judge_hand(
        &self,
        request: Request<pb::JudgeHandRequest>,
    ) -> Result<Response<pb::JudgeHandResponse>, Status> {
        self.counted(
            "judge_hand",
            || Ok(rules::judge_hand(request.into_inner())?),
            |_| false,
        )
    }

    async fn settle(
        &self,
        request: Request<pb::SettleRequest>,
    ) -> Result<Response<pb::SettleResponse>, Status> {
        self.counted(
            "settle",
            || Ok(rules::settle_bets(request.into_inner())?),
            |_| false,
        )
    }

    async fn odds(
        &self,
        request: Request<pb::OddsRequest>,
    ) -> Result<Response<pb::OddsResponse>, Status> {
        self.counted("odds", || Ok(rules::odds(request.into_inner())?), |_| false)
    }
}

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Checks every caller's bearer token; RulesService admits [`ALLOWED_ROLES`].
    pub verifier: Arc<Verifier>,
    /// Where requests are counted (`None`: nowhere).
    pub metrics: Option<ValidatorMetrics>,
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Policy(#[from] TransportPolicyError),
    #[error("could not read the listening address: {0}")]
    Address(#[source] std::io::Error),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves RulesService with gRPC health and reflection on `listener` until `shutdown`
/// completes. Plaintext only: a listener beyond loopback is refused; see
/// [`serve_with_tls`].
pub async fn serve(
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve_with_tls(listener, options, None, shutdown).await
}

/// As [`serve`], over TLS when `tls` is given (clients then connect with `https://`);
/// without it, plaintext, which is refused beyond loopback.
///
/// TLS is an argument rather than a field of [`ServeOptions`] so that code building
/// `ServeOptions { verifier, metrics }` literally keeps compiling.
pub async fn serve_with_tls(
    listener: TcpListener,
    options: ServeOptions,
    tls: Option<ServerTls>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Address)?;
    require_tls_unless_loopback(addr, tls.is_some())?;
    let mut builder = Server::builder();
    if let Some(tls) = &tls {
        builder = builder.tls_config(tls.config())?;
    }

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<RulesServiceServer<RulesServer>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let guard = AuthInterceptor::new(options.verifier, &ALLOWED_ROLES);
    tracing::info!(%addr, tls = tls.is_some(), "validator serving RulesService");
    builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(
            // The largest request is a Settle of every bet of a round: tens of bytes per
            // bet, so 4 MiB is some 100,000 bets.
            RulesServiceServer::new(RulesServer {
                metrics: options.metrics,
            })
            .max_decoding_message_size(MAX_REQUEST_BYTES),
            guard,
        ))
        .serve_with_incoming_shutdown(incoming(listener), shutdown)
        .await?;
    Ok(())
}

/// Small replies must leave at once: with Nagle on, each answer waits for the client's
/// delayed ACK (measured: about 44 ms per card check and per confirm).
fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}
