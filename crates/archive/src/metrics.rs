//! What the archive counts for Prometheus: rounds appended and refused (by reason), the
//! size of each append, the rounds stored, and every query by rpc and result with its
//! latency. The handlers add to atomics; the `/metrics` endpoint only reads.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use banco_serving::RequestMetrics;

use crate::error::ArchiveError;
use crate::store::Appended;

type Label = [(&'static str, &'static str); 1];

fn batch_sizes() -> Histogram {
    // 1, 2, 4, … 1,024 (AppendBatch takes at most 1,000 records).
    Histogram::new(exponential_buckets(1.0, 2.0, 11))
}

/// The archive's metrics; cheap to clone.
#[derive(Debug, Clone)]
pub struct ArchiveMetrics {
    appended: Counter,
    refused: Family<Label, Counter>,
    batch: Histogram,
    stored: Gauge,
    requests: RequestMetrics,
}

impl ArchiveMetrics {
    /// New metrics registered into `registry`; `stored` is the rounds already stored.
    pub fn register(registry: &mut Registry, stored: i64) -> ArchiveMetrics {
        let metrics = ArchiveMetrics {
            appended: Counter::default(),
            refused: Family::default(),
            batch: batch_sizes(),
            stored: Gauge::default(),
            requests: RequestMetrics::register(
                registry,
                "banco_archive",
                "ArchiveService requests, by rpc and result (ok, or the gRPC code of the error)",
                "Time to answer an ArchiveService request (for streams: to start answering), by rpc",
                // From 100 µs to about 3 s: each is a query of the database.
                Duration::from_micros(100),
            ),
        };
        metrics.stored.set(stored);
        registry.register(
            "banco_archive_rounds_appended",
            "Rounds newly stored by Append and AppendBatch",
            metrics.appended.clone(),
        );
        registry.register(
            "banco_archive_rounds_refused",
            "Rounds not stored, by reason (gap, duplicate, conflict, bad_signature, unknown_key, hash_mismatch, bad_record, ...)",
            metrics.refused.clone(),
        );
        registry.register(
            "banco_archive_append_batch_records",
            "Records in one Append (1) or AppendBatch request",
            metrics.batch.clone(),
        );
        registry.register(
            "banco_archive_stored_rounds",
            "Rounds in the archive",
            metrics.stored.clone(),
        );
        metrics
    }

    /// One Append or AppendBatch request of `records` records.
    pub(crate) fn batch(&self, records: usize) {
        self.batch.observe(records as f64);
    }

    /// The store's answer for one record.
    pub(crate) fn appended(&self, appended: &Appended) {
        let reason = match appended {
            Appended::Stored { .. } => {
                self.appended.inc();
                self.stored.inc();
                return;
            }
            Appended::Duplicate { .. } => "duplicate",
            Appended::Conflict { .. } => "conflict",
            Appended::Gap { .. } => "gap",
        };
        self.refused.get_or_create(&[("reason", reason)]).inc();
    }

    /// `records` records refused before the store was asked, for `error`.
    pub(crate) fn refused(&self, records: usize, error: &ArchiveError) {
        let reason = match error {
            ArchiveError::BadRecord { .. } => "bad_record",
            ArchiveError::HashMismatch { .. } => "hash_mismatch",
            ArchiveError::UnknownKey { .. } => "unknown_key",
            ArchiveError::BadSignature { .. } => "bad_signature",
            ArchiveError::BadRequest { .. } => "bad_request",
            ArchiveError::ClipMismatch(_) | ArchiveError::ClipDamaged(_) => "bad_clip",
            _ => "error",
        };
        self.refused
            .get_or_create(&[("reason", reason)])
            .inc_by(records as u64);
    }

    /// One answered request.
    pub(crate) fn request<T>(
        &self,
        rpc: &'static str,
        result: &Result<T, tonic::Status>,
        took: Duration,
    ) {
        self.requests.observe_status(rpc, result, took);
    }
}
