//! `banco stream`'s `/metrics`: what the camera encoded and what the publisher sent,
//! dropped and reconnected, read from their own counters at each scrape (the encoder's
//! thread and the publisher never wait for the endpoint).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use banco_streaming::Publisher;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// The camera process's figures for one table.
#[derive(Debug)]
pub(crate) struct StreamMetrics {
    table: String,
    encoder: &'static str,
    /// Access units out of the encoder: one per frame encoded.
    frames: Arc<AtomicU64>,
    publisher: Arc<Publisher>,
}

impl StreamMetrics {
    /// Registers the figures of `publisher`, `frames` (counted where the encoder hands
    /// each unit on) and the encoder's name into `registry`.
    pub(crate) fn register(
        registry: &mut Registry,
        table: &str,
        encoder: &'static str,
        frames: Arc<AtomicU64>,
        publisher: Arc<Publisher>,
    ) {
        registry.register_collector(Box::new(StreamMetrics {
            table: table.to_owned(),
            encoder,
            frames,
            publisher,
        }));
    }

    fn labels(&self) -> Labels {
        vec![("table", self.table.clone())]
    }
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    labels: &Labels,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let counter = ConstCounter::new(value);
    let mut metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
    counter.encode(metric.encode_family(labels)?)
}

impl Collector for StreamMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.publisher.stats();
        // Each frame is counted before its unit is queued or dropped, and a unit is written
        // after it was queued: reading the frames last keeps frames >= written + dropped
        // in every scrape.
        let written = stats.units_written.load(Ordering::Relaxed);
        let bytes = stats.bytes_written.load(Ordering::Relaxed);
        let dropped = stats.units_dropped.load(Ordering::Relaxed);
        let behind = stats
            .units_dropped_behind
            .load(Ordering::Relaxed)
            .min(dropped);
        let streams = stats.streams.load(Ordering::Relaxed);
        let frames = self.frames.load(Ordering::Relaxed);
        let labels = self.labels();
        counter(
            &mut encoder,
            "banco_stream_frames_encoded",
            "Frames the camera pipeline encoded (one access unit each)",
            &labels,
            frames,
        )?;
        counter(
            &mut encoder,
            "banco_stream_units_published",
            "Access units written to the Publish stream to the broadcaster",
            &labels,
            written,
        )?;
        counter(
            &mut encoder,
            "banco_stream_published_bytes",
            "Bytes of H.264 in those units",
            &labels,
            bytes,
        )?;
        let mut metric = encoder.encode_descriptor(
            "banco_stream_units_dropped",
            "Units dropped here instead of slowing the camera: `behind` when the link to the broadcaster was full (and up to the next keyframe), `not_connected` while no stream was up (and up to a new stream's first keyframe)",
            None,
            MetricType::Counter,
        )?;
        for (reason, value) in [("behind", behind), ("not_connected", dropped - behind)] {
            let mut labels = labels.clone();
            labels.push(("reason", reason.to_owned()));
            ConstCounter::new(value).encode(metric.encode_family(&labels)?)?;
        }
        counter(
            &mut encoder,
            "banco_stream_reconnects",
            "Publish streams that carried video after the first one (the broadcaster restarted or the link broke)",
            &labels,
            streams.saturating_sub(1),
        )?;
        let mut info_labels = labels;
        info_labels.push(("encoder", self.encoder.to_owned()));
        let info = Info::new(info_labels);
        let metric = encoder.encode_descriptor(
            "banco_stream_encoder",
            "The GStreamer element encoding the camera's H.264",
            None,
            info.metric_type(),
        )?;
        info.encode(metric)
    }
}
