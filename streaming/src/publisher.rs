//! Access units from the encoder to the broadcaster's VideoIngest, reconnecting by itself.
//!
//! The encoder hands each unit to [`Publisher::offer`] on its streaming thread, which never
//! waits: a unit that finds no connection, or a connection that is behind, is dropped, and
//! the next unit sent is a keyframe, so the broadcaster's viewers lose a moment of video
//! rather than the camera slowing down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use banco_wire::pb;
use banco_wire::pb::video_ingest_client::VideoIngestClient;
use tokio::sync::mpsc;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::service::Interceptor;
use tonic::transport::Channel;

/// Units waiting for the network: two seconds at 30 fps.
const QUEUE: usize = 60;
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(5);
/// A connection that lasted this long resets the retry delay.
const STABLE: Duration = Duration::from_secs(10);

/// Counters, read while publishing.
#[derive(Debug, Default)]
pub struct PublisherStats {
    /// Units handed to the stream to the broadcaster (queued for it).
    pub units_sent: AtomicU64,
    /// Units taken from that queue onto the connection (a stream that fails loses what
    /// was still queued), and the bytes of H.264 in them.
    pub units_written: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Units dropped because no connection was up or the connection was behind (units
    /// offered after [`Publisher::close`] are not drops: the stream has ended).
    pub units_dropped: AtomicU64,
    /// Of those, the units dropped because the stream's queue was full (the link is
    /// slower than the camera), and the ones after them up to the next keyframe.
    pub units_dropped_behind: AtomicU64,
    /// Publish streams attempted (the first, then each retry).
    pub connections: AtomicU64,
    /// Publish streams that carried video: each after the first is a reconnect.
    pub streams: AtomicU64,
}

impl PublisherStats {
    fn dropped(&self, behind: bool) {
        self.units_dropped.fetch_add(1, Ordering::Relaxed);
        if behind {
            self.units_dropped_behind.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[derive(Debug, Default)]
struct Slot {
    sender: Option<mpsc::Sender<pb::VideoAccessUnit>>,
    /// Drop units until a keyframe: set at each new connection and after a drop.
    need_keyframe: bool,
    /// The last drop was for a full queue, not for a missing connection.
    behind: bool,
    closed: bool,
}

/// Publishes one table's units; share it between the encoder callback and the task that
/// runs [`Publisher::run`].
#[derive(Debug, Default)]
pub struct Publisher {
    slot: Mutex<Slot>,
    stats: PublisherStats,
}

impl Publisher {
    pub fn new() -> Arc<Publisher> {
        Arc::new(Publisher::default())
    }

    pub fn stats(&self) -> &PublisherStats {
        &self.stats
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes one unit from the encoder without waiting.
    pub fn offer(&self, unit: pb::VideoAccessUnit) {
        let mut slot = self.slot();
        if slot.closed {
            return;
        }
        let Some(sender) = slot.sender.as_ref() else {
            drop(slot);
            self.stats.dropped(false);
            return;
        };
        if slot.need_keyframe && !unit.keyframe {
            let behind = slot.behind;
            drop(slot);
            self.stats.dropped(behind);
            return;
        }
        match sender.try_send(unit) {
            Ok(()) => {
                slot.need_keyframe = false;
                slot.behind = false;
                self.stats.units_sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => {
                let behind = matches!(error, mpsc::error::TrySendError::Full(_));
                slot.need_keyframe = true;
                slot.behind = behind;
                drop(slot);
                self.stats.dropped(behind);
            }
        }
    }

    /// Ends the current stream (the broadcaster answers its summary) and stops
    /// [`Publisher::run`] from reconnecting.
    pub fn close(&self) {
        let mut slot = self.slot();
        slot.closed = true;
        slot.sender = None;
    }

    /// Publishes until [`Publisher::close`] (returning the broadcaster's summary of the
    /// last stream) or an error that another attempt cannot cure (returned). Any other
    /// failure is retried after a growing pause. `on_connect` runs at each new stream:
    /// ask the encoder for a keyframe there, so that video resumes at once.
    pub async fn run<I>(
        self: &Arc<Self>,
        channel: Channel,
        interceptor: I,
        on_connect: impl Fn(),
    ) -> Result<pb::PublishSummary, tonic::Status>
    where
        I: Interceptor + Clone,
    {
        let mut retry = FIRST_RETRY;
        loop {
            let (sender, receiver) = mpsc::channel(QUEUE);
            {
                let mut slot = self.slot();
                if slot.closed {
                    return Ok(pb::PublishSummary::default());
                }
                slot.sender = Some(sender);
                slot.need_keyframe = true;
                slot.behind = false;
            }
            on_connect();
            self.stats.connections.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            let mut client =
                VideoIngestClient::with_interceptor(channel.clone(), interceptor.clone());
            // A stream is counted when its first unit goes out on it: only then is it up.
            let publisher = Arc::clone(self);
            let mut carried = false;
            let units = ReceiverStream::new(receiver).map(move |unit| {
                let stats = &publisher.stats;
                if !carried {
                    carried = true;
                    stats.streams.fetch_add(1, Ordering::Relaxed);
                }
                stats.units_written.fetch_add(1, Ordering::Relaxed);
                stats
                    .bytes_written
                    .fetch_add(unit.data.len() as u64, Ordering::Relaxed);
                unit
            });
            let outcome = client.publish(units).await;
            let closed = {
                let mut slot = self.slot();
                slot.sender = None;
                slot.closed
            };
            match outcome {
                Ok(summary) if closed => return Ok(summary.into_inner()),
                Ok(summary) => {
                    tracing::warn!(summary = ?summary.get_ref(), "the broadcaster ended the video stream; reconnecting");
                }
                Err(status) if is_permanent(status.code()) => return Err(status),
                Err(status) => {
                    if closed {
                        return Err(status);
                    }
                    tracing::warn!(code = ?status.code(), message = status.message(), "video stream to the broadcaster lost; reconnecting");
                }
            }
            if started.elapsed() >= STABLE {
                retry = FIRST_RETRY;
            }
            tokio::time::sleep(retry).await;
            retry = (retry * 2).min(LAST_RETRY);
        }
    }
}

/// Errors that another attempt cannot cure.
fn is_permanent(code: tonic::Code) -> bool {
    use tonic::Code;
    matches!(
        code,
        Code::Unauthenticated
            | Code::PermissionDenied
            | Code::InvalidArgument
            | Code::NotFound
            | Code::Unimplemented
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(sequence: u64, keyframe: bool) -> pb::VideoAccessUnit {
        pb::VideoAccessUnit {
            sequence,
            keyframe,
            ..Default::default()
        }
    }

    #[test]
    fn without_a_connection_units_are_dropped_and_counted() {
        let publisher = Publisher::new();
        publisher.offer(unit(1, true));
        assert_eq!(publisher.stats().units_dropped.load(Ordering::Relaxed), 1);
        assert_eq!(publisher.stats().units_sent.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_link_drops_until_the_next_keyframe() {
        let publisher = Publisher::new();
        let (sender, mut receiver) = mpsc::channel(2);
        {
            let mut slot = publisher.slot();
            slot.sender = Some(sender);
            slot.need_keyframe = true;
        }
        // A new stream starts at a keyframe.
        publisher.offer(unit(1, false));
        publisher.offer(unit(2, true));
        publisher.offer(unit(3, false));
        // Full: 4 is dropped, and so is 5 although there is room again by then.
        publisher.offer(unit(4, false));
        assert_eq!(receiver.try_recv().map(|u| u.sequence), Ok(2));
        publisher.offer(unit(5, false));
        publisher.offer(unit(6, true));
        let rest: Vec<u64> = std::iter::from_fn(|| receiver.try_recv().ok())
            .map(|u| u.sequence)
            .collect();
        assert_eq!(rest, vec![3, 6]);
        let stats = publisher.stats();
        assert_eq!(stats.units_dropped.load(Ordering::Relaxed), 3);
        // 1 waited for the stream's first keyframe; 4 found the queue full, 5 followed it.
        assert_eq!(stats.units_dropped_behind.load(Ordering::Relaxed), 2);
        assert_eq!(stats.units_sent.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn after_close_units_are_neither_sent_nor_dropped() {
        let publisher = Publisher::new();
        let (sender, _receiver) = mpsc::channel(2);
        publisher.slot().sender = Some(sender);
        publisher.offer(unit(1, true));
        publisher.close();
        publisher.offer(unit(2, false));
        let stats = publisher.stats();
        assert_eq!(stats.units_sent.load(Ordering::Relaxed), 1);
        assert_eq!(stats.units_dropped.load(Ordering::Relaxed), 0);
    }
}
