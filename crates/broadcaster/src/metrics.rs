//! What the broadcaster counts for Prometheus, by table.
//!
//! - [`HubMetricFamilies`]: the fan-out hubs' subscribers now, how far the furthest-behind
//!   one is, and how many were cut off for falling too far behind. Each hub task (the only
//!   owner of its subscribers) sets its own handles.
//! - [`VideoMetricFamilies`]: the video relays' viewers, units and skips, the publisher,
//!   and round clips (written, uploaded, and lost, by why).
//!
//! The `/metrics` endpoint only reads.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::video::clip_store::MissingReason;

type Table = [(&'static str, String); 1];
type TableReason = [(&'static str, String); 2];

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
            "Public events waiting unread for the furthest-behind subscriber, after the last one sent",
            f.lag.clone(),
        );
        registry.register(
            "banco_subscribers_cut_off",
            "Subscribers cut off for falling too far behind (they resume from their last seq)",
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
}

/// What an edge counts: its subscribers (as a broadcaster's hubs count theirs), how far
/// it is behind each table's stream, its video relays and their upstreams, and every call
/// it forwarded to a table's broadcaster, by result.
#[derive(Debug, Clone)]
pub struct EdgeMetricFamilies {
    pub(crate) hub: HubMetricFamilies,
    pub(crate) video: VideoMetricFamilies,
    stream_lag: Family<Table, Gauge>,
    pub(crate) forwarded: banco_serving::RequestMetrics,
}

impl EdgeMetricFamilies {
    /// New families, registered into `registry`.
    pub fn register(registry: &mut Registry) -> EdgeMetricFamilies {
        let hub = HubMetricFamilies::register(registry);
        let video = VideoMetricFamilies::register(registry);
        let stream_lag = Family::default();
        registry.register(
            "banco_edge_stream_lag_events",
            "Events in the table's stream this edge has not read yet",
            stream_lag.clone(),
        );
        let forwarded = banco_serving::RequestMetrics::register(
            registry,
            "banco_edge_upstream",
            "PlayerService calls forwarded to the table's broadcaster, by result",
            "How long a forwarded call took, the broadcaster's answer included",
            std::time::Duration::from_micros(100),
        );
        EdgeMetricFamilies {
            hub,
            video,
            stream_lag,
            forwarded,
        }
    }

    pub(crate) fn stream_lag(&self, table_id: &str) -> Gauge {
        self.stream_lag
            .get_or_create_owned(&[("table", table_id.to_owned())])
    }
}

impl Default for EdgeMetricFamilies {
    /// Families registered nowhere (tests).
    fn default() -> EdgeMetricFamilies {
        EdgeMetricFamilies::register(&mut Registry::default())
    }
}

/// What each table's publisher to its stream counts (`--events`): events published, made
/// again from the journal, waiting in memory, and whether the table was fenced (another
/// broadcaster publishes it now).
#[derive(Debug, Clone, Default)]
pub struct EventMetricFamilies {
    published: Family<Table, Counter>,
    remade: Family<Table, Counter>,
    buffered: Family<Table, Gauge>,
    fenced: Family<Table, Gauge>,
}

impl EventMetricFamilies {
    /// New families, registered into `registry` under `banco_events_*`.
    pub fn register(registry: &mut Registry) -> EventMetricFamilies {
        let f = EventMetricFamilies::default();
        registry.register(
            "banco_events_published",
            "Events published to the table's stream and acknowledged",
            f.published.clone(),
        );
        registry.register(
            "banco_events_remade",
            "Events the stream missed, made again from the table's journal",
            f.remade.clone(),
        );
        registry.register(
            "banco_events_buffered",
            "Events waiting in memory for the stream's acknowledgement",
            f.buffered.clone(),
        );
        registry.register(
            "banco_events_fenced",
            "1 once another broadcaster publishes this table's events (this one stopped)",
            f.fenced.clone(),
        );
        f
    }

    pub(crate) fn for_table(&self, table_id: &str) -> EventMetrics {
        let labels = [("table", table_id.to_owned())];
        EventMetrics {
            published: self.published.get_or_create_owned(&labels),
            remade: self.remade.get_or_create_owned(&labels),
            buffered: self.buffered.get_or_create_owned(&labels),
            fenced: self.fenced.get_or_create_owned(&labels),
        }
    }
}

/// One table's publisher handles.
#[derive(Debug, Clone)]
pub(crate) struct EventMetrics {
    pub(crate) published: Counter,
    pub(crate) remade: Counter,
    pub(crate) buffered: Gauge,
    pub(crate) fenced: Gauge,
}

impl EventMetrics {
    pub(crate) fn buffered(&self, n: usize) {
        self.buffered.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// What the video relays count, by table: viewers now, units relayed, viewers that fell
/// behind and the units they skipped, whether a camera publishes, and round clips. The
/// relay, each viewer's stream, the clip recorder and the archive sink set their own
/// handles; the `/metrics` endpoint only reads.
#[derive(Debug, Clone, Default)]
pub struct VideoMetricFamilies {
    viewers: Family<Table, Gauge>,
    units_relayed: Family<Table, Counter>,
    viewer_skips: Family<Table, Counter>,
    units_skipped: Family<Table, Counter>,
    publisher_connected: Family<Table, Gauge>,
    clips_written: Family<Table, Counter>,
    clips_uploaded: Family<Table, Counter>,
    clips_lost: Family<TableReason, Counter>,
}

impl VideoMetricFamilies {
    /// New families, registered into `registry` under `banco_video_*`.
    pub fn register(registry: &mut Registry) -> VideoMetricFamilies {
        let f = VideoMetricFamilies::default();
        registry.register(
            "banco_video_viewers",
            "Video streams (WatchVideo) open now",
            f.viewers.clone(),
        );
        registry.register(
            "banco_video_units_relayed",
            "Access units from the table's camera relayed to its viewers",
            f.units_relayed.clone(),
        );
        registry.register(
            "banco_video_viewer_skips",
            "Times a viewer fell too far behind and jumped to the next keyframe",
            f.viewer_skips.clone(),
        );
        registry.register(
            "banco_video_units_skipped",
            "Units not sent to a viewer that was behind, up to the keyframe it jumped to",
            f.units_skipped.clone(),
        );
        registry.register(
            "banco_video_publisher_connected",
            "1 while a camera publishes the table's video (VideoIngest), else 0",
            f.publisher_connected.clone(),
        );
        registry.register(
            "banco_video_clips_written",
            "Round clips written to the clip folder",
            f.clips_written.clone(),
        );
        registry.register(
            "banco_video_clips_uploaded",
            "Round clips the archive accepted (UploadClip; a round retried by the outbox uploads again)",
            f.clips_uploaded.clone(),
        );
        registry.register(
            "banco_video_clips_lost",
            "Rounds the archive stored without their clip although there was video to record, by why (a round with no camera publishing is not counted)",
            f.clips_lost.clone(),
        );
        f
    }

    /// One round of `table_id` archived without its clip, lost for `reason`.
    pub(crate) fn clip_lost(&self, table_id: &str, reason: MissingReason) {
        self.clips_lost
            .get_or_create(&[
                ("table", table_id.to_owned()),
                ("reason", reason.label().to_owned()),
            ])
            .inc();
    }

    /// The handles of `table_id` (created at zero, so a table shows before any video).
    pub(crate) fn for_table(&self, table_id: &str) -> VideoMetrics {
        let labels = [("table", table_id.to_owned())];
        VideoMetrics {
            viewers: self.viewers.get_or_create_owned(&labels),
            units_relayed: self.units_relayed.get_or_create_owned(&labels),
            viewer_skips: self.viewer_skips.get_or_create_owned(&labels),
            units_skipped: self.units_skipped.get_or_create_owned(&labels),
            publisher_connected: self.publisher_connected.get_or_create_owned(&labels),
            clips_written: self.clips_written.get_or_create_owned(&labels),
            clips_uploaded: self.clips_uploaded.get_or_create_owned(&labels),
        }
    }
}

/// One table's video handles.
#[derive(Debug, Clone, Default)]
pub(crate) struct VideoMetrics {
    pub(crate) viewers: Gauge,
    pub(crate) units_relayed: Counter,
    pub(crate) viewer_skips: Counter,
    pub(crate) units_skipped: Counter,
    pub(crate) publisher_connected: Gauge,
    pub(crate) clips_written: Counter,
    pub(crate) clips_uploaded: Counter,
}
