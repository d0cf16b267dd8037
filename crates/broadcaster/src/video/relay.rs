//! One table's video relay: the GOP cache and the broadcast to viewers.

use std::sync::{Arc, Mutex, MutexGuard};

use banco_wire::pb;
use bytes::Bytes;
use prost::Message as _;
use tokio::sync::{broadcast, watch};
use tonic::Status;

use super::viewer::{self, VideoBytes};
use crate::metrics::VideoMetrics;

/// Units a viewer may be behind before it is cut back to the next keyframe: one second at
/// 30 fps. Beyond this, what it shows is no longer "live".
pub(crate) const LAG_LIMIT: usize = 30;
/// Units the broadcast keeps for the slowest viewer; one that falls further behind has
/// lost them and skips to the next keyframe.
const BROADCAST: usize = 256;
/// A GOP longer than this (a publisher that sends no keyframes) is not cached: new viewers
/// then wait for the next keyframe instead of the broadcaster holding unbounded memory.
const GOP_UNITS: usize = 1_200;
const GOP_BYTES: usize = 64 << 20;

/// One unit as relayed: encoded once, shared by every viewer.
#[derive(Debug)]
pub(crate) struct Relayed {
    pub(crate) keyframe: bool,
    pub(crate) encoded: Bytes,
}

#[derive(Debug, Default)]
struct Gop {
    units: Vec<Arc<Relayed>>,
    bytes: usize,
    publishing: bool,
}

/// A table's live video.
#[derive(Debug)]
pub(crate) struct VideoRelay {
    table_id: String,
    gop: Mutex<Gop>,
    sender: broadcast::Sender<Arc<Relayed>>,
    /// Set when the broadcaster shuts down: every viewer's and publisher's stream ends,
    /// so that the server can drain its connections.
    closed: watch::Sender<bool>,
    metrics: VideoMetrics,
}

impl VideoRelay {
    pub(crate) fn new(table_id: &str, metrics: VideoMetrics) -> VideoRelay {
        VideoRelay {
            table_id: table_id.to_owned(),
            gop: Mutex::new(Gop::default()),
            sender: broadcast::channel(BROADCAST).0,
            closed: watch::channel(false).0,
            metrics,
        }
    }

    /// The table's video handles (the clip recorder counts into them too).
    pub(crate) fn metrics(&self) -> &VideoMetrics {
        &self.metrics
    }

    /// Ends every stream of this table's video, now and from now on.
    pub(crate) fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Completes once [`VideoRelay::close`] was called.
    pub(crate) fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut closed = self.closed.subscribe();
        async move {
            let _ = closed.wait_for(|c| *c).await;
        }
    }

    /// The GOP is a cache of bytes: a panic while holding it leaves nothing to repair.
    fn gop(&self) -> MutexGuard<'_, Gop> {
        self.gop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes the caller the table's one publisher until the guard is dropped; ALREADY_EXISTS
    /// while another one publishes.
    pub(crate) fn claim(self: &Arc<Self>) -> Result<PublisherGuard, Status> {
        let mut gop = self.gop();
        if gop.publishing {
            return Err(Status::already_exists(format!(
                "table {}: another publisher is sending its video",
                self.table_id
            )));
        }
        gop.publishing = true;
        self.metrics.publisher_connected.set(1);
        Ok(PublisherGuard {
            relay: Arc::clone(self),
        })
    }

    /// Relays one (checked) unit to every viewer.
    pub(crate) fn relay(&self, unit: &pb::VideoAccessUnit) {
        let relayed = Arc::new(Relayed {
            keyframe: unit.keyframe,
            encoded: Bytes::from(unit.encode_to_vec()),
        });
        let mut gop = self.gop();
        if relayed.keyframe {
            gop.units.clear();
            gop.bytes = 0;
        }
        if !gop.units.is_empty() || relayed.keyframe {
            if gop.units.len() >= GOP_UNITS || gop.bytes + relayed.encoded.len() > GOP_BYTES {
                gop.units.clear();
                gop.bytes = 0;
            } else {
                gop.bytes += relayed.encoded.len();
                gop.units.push(Arc::clone(&relayed));
            }
        }
        // Under the GOP lock, so a viewer joining now sees each unit exactly once: in the
        // GOP it copies or on the channel it subscribes to, never both.
        let _ = self.sender.send(relayed);
        self.metrics.units_relayed.inc();
    }

    /// Viewers watching now.
    pub(crate) fn viewers(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Whether a publisher is sending the table's video now.
    pub(crate) fn publishing(&self) -> bool {
        self.gop().publishing
    }

    /// The GOP so far (from its keyframe), as units: a round's clip starts with it.
    pub(crate) fn gop_units(&self) -> Vec<pb::VideoAccessUnit> {
        let gop = self.gop();
        gop.units
            .iter()
            .filter_map(|u| pb::VideoAccessUnit::decode(u.encoded.clone()).ok())
            .collect()
    }

    /// A new viewer's stream: the GOP so far, then the live units.
    pub(crate) fn watch(&self) -> VideoBytes {
        let gop = self.gop();
        let backlog = gop.units.clone();
        let receiver = self.sender.subscribe();
        drop(gop);
        viewer::stream(backlog, receiver, self.closed(), self.metrics.clone())
    }
}

/// Held by the publishing stream; dropping it frees the table for the next publisher and
/// empties the GOP (a new viewer must not be shown a picture from a stream that ended).
#[derive(Debug)]
pub(crate) struct PublisherGuard {
    relay: Arc<VideoRelay>,
}

impl Drop for PublisherGuard {
    fn drop(&mut self) {
        let mut gop = self.relay.gop();
        gop.publishing = false;
        gop.units.clear();
        gop.bytes = 0;
        self.relay.metrics.publisher_connected.set(0);
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use prost::Message as _;

    use super::*;

    fn unit(sequence: u64, keyframe: bool) -> pb::VideoAccessUnit {
        pb::VideoAccessUnit {
            table_id: "T01".to_owned(),
            sequence,
            keyframe,
            codec: "h264".to_owned(),
            data: vec![0, 0, 1, if keyframe { 0x65 } else { 0x41 }],
            ..Default::default()
        }
    }

    async fn next_sequence(stream: &mut VideoBytes) -> u64 {
        let bytes = stream.next().await.expect("a unit").expect("no error");
        pb::VideoAccessUnit::decode(bytes)
            .expect("decodes")
            .sequence
    }

    #[tokio::test]
    async fn a_new_viewer_starts_at_the_last_keyframe_then_goes_live() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _publisher = relay.claim().expect("first publisher");
        for s in 1..=3 {
            relay.relay(&unit(s, s == 1));
        }
        relay.relay(&unit(4, true));
        relay.relay(&unit(5, false));
        let mut viewer = relay.watch();
        relay.relay(&unit(6, false));
        for expected in [4, 5, 6] {
            assert_eq!(next_sequence(&mut viewer).await, expected);
        }
    }

    #[tokio::test]
    async fn a_viewer_that_joins_before_any_keyframe_waits_for_one() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _publisher = relay.claim().expect("first publisher");
        let mut viewer = relay.watch();
        relay.relay(&unit(7, false));
        relay.relay(&unit(8, true));
        assert_eq!(next_sequence(&mut viewer).await, 8);
    }

    #[tokio::test]
    async fn a_viewer_too_far_behind_skips_to_the_next_keyframe() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _publisher = relay.claim().expect("first publisher");
        let mut viewer = relay.watch();
        relay.relay(&unit(1, true));
        // The viewer reads nothing while LAG_LIMIT + 10 units go by.
        let last = 1 + LAG_LIMIT as u64 + 10;
        for s in 2..=last {
            relay.relay(&unit(s, false));
        }
        relay.relay(&unit(last + 1, true));
        relay.relay(&unit(last + 2, false));
        assert_eq!(next_sequence(&mut viewer).await, 1);
        assert_eq!(relay.metrics().viewer_skips.get(), 0);
        // Units 2.. were queued when it was already more than LAG_LIMIT behind.
        let mut seen = Vec::new();
        while seen.last() != Some(&(last + 2)) {
            seen.push(next_sequence(&mut viewer).await);
        }
        assert!(seen.len() < 12, "skipped most of the backlog: {seen:?}");
        let keyframe_at = seen
            .iter()
            .position(|&s| s == last + 1)
            .expect("keyframe kept");
        assert_eq!(&seen[keyframe_at..], &[last + 1, last + 2]);
        // Before the keyframe, only the tail that was within LAG_LIMIT when read.
        assert!(seen[..keyframe_at].windows(2).all(|w| w[1] == w[0] + 1));
        // One jump, over every unit it was not sent.
        let sent_before_keyframe = keyframe_at as u64;
        assert_eq!(relay.metrics().viewer_skips.get(), 1);
        assert_eq!(
            relay.metrics().units_skipped.get(),
            last - 1 - sent_before_keyframe
        );
        assert_eq!(relay.metrics().units_relayed.get(), last + 2);
    }

    #[tokio::test]
    async fn a_viewer_that_lost_units_to_the_broadcast_counts_them_as_skipped() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _publisher = relay.claim().expect("first publisher");
        let mut viewer = relay.watch();
        relay.relay(&unit(1, true));
        let last = 1 + BROADCAST as u64 + 50;
        for s in 2..=last {
            relay.relay(&unit(s, false));
        }
        relay.relay(&unit(last + 1, true));
        // The broadcast kept only its last BROADCAST units: the keyframe 1 is gone too.
        assert_eq!(next_sequence(&mut viewer).await, last + 1);
        assert_eq!(relay.metrics().viewer_skips.get(), 1);
        assert_eq!(relay.metrics().units_skipped.get(), last);
    }

    #[tokio::test]
    async fn viewers_and_the_publisher_are_counted_while_connected() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let metrics = relay.metrics().clone();
        assert_eq!(metrics.publisher_connected.get(), 0);
        let publisher = relay.claim().expect("first publisher");
        assert_eq!(metrics.publisher_connected.get(), 1);
        let first = relay.watch();
        let second = relay.watch();
        assert_eq!(metrics.viewers.get(), 2);
        drop(first);
        assert_eq!(metrics.viewers.get(), 1);
        drop(publisher);
        assert_eq!(metrics.publisher_connected.get(), 0);
        drop(second);
        assert_eq!(metrics.viewers.get(), 0);
        // A viewer that joins before any keyframe waits; that is no skip.
        let _publisher = relay.claim().expect("free again");
        let mut waiting = relay.watch();
        relay.relay(&unit(1, false));
        relay.relay(&unit(2, true));
        assert_eq!(next_sequence(&mut waiting).await, 2);
        assert_eq!(metrics.viewer_skips.get(), 0);
        assert_eq!(metrics.units_skipped.get(), 0);
    }

    #[tokio::test]
    async fn closing_ends_every_viewers_stream() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _publisher = relay.claim().expect("first publisher");
        relay.relay(&unit(1, true));
        let mut viewer = relay.watch();
        assert_eq!(next_sequence(&mut viewer).await, 1);
        relay.close();
        assert!(viewer.next().await.is_none());
        assert!(
            relay.watch().next().await.is_none(),
            "and a later one at once"
        );
    }

    #[tokio::test]
    async fn a_second_publisher_is_refused_until_the_first_leaves_and_the_gop_goes_with_it() {
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let first = relay.claim().expect("first publisher");
        relay.relay(&unit(1, true));
        let refused = relay.claim().expect_err("second publisher");
        assert_eq!(refused.code(), tonic::Code::AlreadyExists);
        drop(first);
        assert!(relay.gop().units.is_empty());
        let _second = relay.claim().expect("free again");
    }
}
