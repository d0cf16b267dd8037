//! The tonic service: each handler converts, calls [`crate::rules`], converts back. There is
//! no state to share, so there is no actor here; the table actor is the stateful side.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use banco_auth::{Role, ServerTls, Verifier};
use banco_serving::{GrpcServer, ServeError, code_label};
use banco_wire::pb;
use banco_wire::pb::rules_service_server::{RulesService, RulesServiceServer};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

use crate::metrics::ValidatorMetrics;
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
    // The largest request is a Settle of every bet of a round: tens of bytes per bet, so
    // 4 MiB is some 100,000 bets.
    let rules = RulesServiceServer::new(RulesServer {
        metrics: options.metrics,
    })
    .max_decoding_message_size(MAX_REQUEST_BYTES);
    GrpcServer::new("validator", options.verifier, tls)
        .add_service(rules, &ALLOWED_ROLES)
        .serve(listener, shutdown)
        .await
}
