//! Every RPC a service answers, counted by its result, and how long each took: the
//! `banco_<service>_requests_total` and `banco_<service>_request_duration_seconds` of every
//! gRPC service. Handlers add to atomics (and the histogram's short lock); the `/metrics`
//! endpoint only reads.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tonic::Status;

type RpcResult = [(&'static str, &'static str); 2];
type Rpc = [(&'static str, &'static str); 1];

/// The buckets of the duration histogram: 16 doublings from `first` seconds.
#[derive(Clone, Copy, Debug)]
struct Buckets {
    first: f64,
}

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(self.first, 2.0, 16))
    }
}

/// A service's requests by rpc and result, and their durations by rpc; cheap to clone.
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    requests: Family<RpcResult, Counter>,
    duration: Family<Rpc, Histogram, Buckets>,
}

impl RequestMetrics {
    /// Registers `<prefix>_requests` (help `requests_help`) and
    /// `<prefix>_request_duration_seconds` (help `duration_help`) into `registry`, the
    /// durations in 16 doubling buckets from `first_bucket` seconds (10 µs for pure
    /// arithmetic, 100 µs for a database).
    pub fn register(
        registry: &mut Registry,
        prefix: &str,
        requests_help: &str,
        duration_help: &str,
        first_bucket: Duration,
    ) -> RequestMetrics {
        let metrics = RequestMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(Buckets {
                first: first_bucket.as_secs_f64(),
            }),
        };
        registry.register(
            format!("{prefix}_requests"),
            requests_help,
            metrics.requests.clone(),
        );
        registry.register(
            format!("{prefix}_request_duration_seconds"),
            duration_help,
            metrics.duration.clone(),
        );
        metrics
    }

    /// One answered request of `rpc`, its result labelled `result`.
    pub fn observe(&self, rpc: &'static str, result: &'static str, took: Duration) {
        self.requests
            .get_or_create(&[("rpc", rpc), ("result", result)])
            .inc();
        self.duration
            .get_or_create(&[("rpc", rpc)])
            .observe(took.as_secs_f64());
    }

    /// One answered request of `rpc`: `ok`, or the code of its error.
    pub fn observe_status<T>(&self, rpc: &'static str, result: &Result<T, Status>, took: Duration) {
        let code = result
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.observe(rpc, code_label(code), took);
    }
}

/// The metric label of a gRPC code: its name in snake case.
pub fn code_label(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "cancelled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn requests_are_counted_by_rpc_and_result_with_their_durations() {
        let mut registry = Registry::default();
        let metrics = RequestMetrics::register(
            &mut registry,
            "banco_test",
            "requests",
            "durations",
            Duration::from_micros(10),
        );
        metrics.observe("check", "refused", Duration::from_micros(15));
        metrics.observe_status::<()>("check", &Ok(()), Duration::from_micros(15));
        metrics.observe_status::<()>(
            "check",
            &Err(Status::not_found("no such round")),
            Duration::from_millis(1),
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "banco_test_requests_total{rpc=\"check\",result=\"refused\"} 1",
            "banco_test_requests_total{rpc=\"check\",result=\"ok\"} 1",
            "banco_test_requests_total{rpc=\"check\",result=\"not_found\"} 1",
            "banco_test_request_duration_seconds_count{rpc=\"check\"} 3",
            // The first bucket is 10 µs: none of the three fit in it, two fit in 20 µs.
            "banco_test_request_duration_seconds_bucket{le=\"0.00001\",rpc=\"check\"} 0",
            "banco_test_request_duration_seconds_bucket{le=\"0.00002\",rpc=\"check\"} 2",
        ] {
            assert!(text.contains(line), "no `{line}` in\n{text}");
        }
    }

    #[test]
    fn every_code_has_a_label_of_its_own() {
        let labels: std::collections::BTreeSet<&str> =
            (0..=16).map(|n| code_label(tonic::Code::from(n))).collect();
        assert_eq!(labels.len(), 17);
    }
}
