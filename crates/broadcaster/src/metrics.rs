//! What the fan-out hubs count for Prometheus, by table: subscribers now, how far the
//! furthest-behind one is, and how many were cut off for falling too far behind. Each
//! hub task (the only owner of its subscribers) sets its own handles; the `/metrics`
//! endpoint only reads.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Table = [(&'static str, String); 1];

/// The hub metric families of every table in the process.
#[derive(Debug, Clone, Default)]
pub struct HubMetricFamilies {
    subscribers: Family<Table, Gauge>,
    lag: Family<Table, Gauge>,
    cut_off: Family<Table, Counter>,
}

impl HubMetricFamilies {
    /// New families, registered into `registry` under `banco_*`.
    pub fn register(registry: &mut Registry) -> HubMetricFamilies {
        let f = HubMetricFamilies::default();
        registry.register(
            "banco_subscribers",
            "Event streams (SubscribeTable) open now",
            f.subscribers.clone(),
        );
        registry.register(
            "banco_subscriber_lag_events",
            "Events waiting unread for the furthest-behind subscriber, after the last event sent",
            f.lag.clone(),
        );
        registry.register(
            "banco_subscribers_cut_off",
            "Subscribers cut off because their queue was full (they resume from their last seq)",
            f.cut_off.clone(),
        );
        f
    }

    pub(crate) fn for_table(&self, table_id: &str) -> HubMetrics {
        let labels = [("table", table_id.to_owned())];
        HubMetrics {
            subscribers: self.subscribers.get_or_create_owned(&labels),
            lag: self.lag.get_or_create_owned(&labels),
            cut_off: self.cut_off.get_or_create_owned(&labels),
        }
    }
}

/// One table's hub handles.
#[derive(Debug, Clone)]
pub(crate) struct HubMetrics {
    pub(crate) subscribers: Gauge,
    pub(crate) lag: Gauge,
    pub(crate) cut_off: Counter,
}

impl HubMetrics {
    pub(crate) fn subscribers(&self, n: usize) {
        self.subscribers.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub(crate) fn lag(&self, events: usize) {
        self.lag.set(i64::try_from(events).unwrap_or(i64::MAX));
    }
}
