//! What the validator counts for Prometheus: every RPC by its result, and how long each
//! took ([`banco_serving::RequestMetrics`] under `banco_validator_*`).

use std::time::Duration;

use banco_serving::RequestMetrics;
use prometheus_client::registry::Registry;

/// The validator's metrics.
#[derive(Debug, Clone)]
pub struct ValidatorMetrics {
    requests: RequestMetrics,
}

impl ValidatorMetrics {
    /// New metrics, registered into `registry` under `banco_validator_*`.
    pub fn register(registry: &mut Registry) -> ValidatorMetrics {
        ValidatorMetrics {
            requests: RequestMetrics::register(
                registry,
                "banco_validator",
                "RulesService requests answered, by rpc and result (ok, refused: a card check that refused the card, or the gRPC code of an error)",
                "Time to answer a RulesService request, by rpc",
                // From 10 µs: a check is pure arithmetic, so anything slow is queueing.
                Duration::from_micros(10),
            ),
        }
    }

    /// One answered request.
    pub(crate) fn observe(&self, rpc: &'static str, result: &'static str, took: Duration) {
        self.requests.observe(rpc, result, took);
    }
}
