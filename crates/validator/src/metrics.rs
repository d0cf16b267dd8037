//! What the validator counts for Prometheus: every RPC by its result, and how long each
//! took. Registered once into the service's registry; the handlers only add to atomics
//! (and the histogram's short lock), the `/metrics` endpoint only reads.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type RpcResult = [(&'static str, &'static str); 2];
type Rpc = [(&'static str, &'static str); 1];

/// The validator's metrics.
#[derive(Debug, Clone)]
pub struct ValidatorMetrics {
    checks: Family<RpcResult, Counter>,
    latency: Family<Rpc, Histogram, fn() -> Histogram>,
}

fn latency_histogram() -> Histogram {
    // 10 µs to about 0.3 s: a check is pure arithmetic, so anything slow is queueing.
    Histogram::new(exponential_buckets(0.000_01, 2.0, 16))
}

impl ValidatorMetrics {
    /// New metrics, registered into `registry` under `banco_validator_*`.
    pub fn register(registry: &mut Registry) -> ValidatorMetrics {
        let metrics = ValidatorMetrics {
            checks: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "banco_validator_requests",
            "RulesService requests answered, by rpc and result (ok, refused: a card check that refused the card, or the gRPC code of an error)",
            metrics.checks.clone(),
        );
        registry.register(
            "banco_validator_request_duration_seconds",
            "Time to answer a RulesService request, by rpc",
            metrics.latency.clone(),
        );
        metrics
    }

    /// One answered request.
    pub(crate) fn observe(&self, rpc: &'static str, result: &'static str, took: Duration) {
        self.checks
            .get_or_create(&[("rpc", rpc), ("result", result)])
            .inc();
        self.latency
            .get_or_create(&[("rpc", rpc)])
            .observe(took.as_secs_f64());
    }
}

/// The metric label of a gRPC error code.
pub(crate) fn code_label(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "ok",
        tonic::Code::InvalidArgument => "invalid_argument",
        tonic::Code::FailedPrecondition => "failed_precondition",
        tonic::Code::OutOfRange => "out_of_range",
        tonic::Code::Unauthenticated => "unauthenticated",
        tonic::Code::PermissionDenied => "permission_denied",
        tonic::Code::Internal => "internal",
        _ => "other_error",
    }
}
