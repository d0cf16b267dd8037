//! One viewer's stream and its drop policy.
//!
//! The viewer reads the relay's broadcast at its own pace. When it is more than
//! [`LAG_LIMIT`] units behind the newest (its connection is slow or stalled), or the
//! broadcast has overwritten units it had not read, it drops everything up to the next
//! keyframe: the picture jumps forward to live instead of playing late, and a decoder can
//! resume there. The relay never waits for a viewer, so one slow viewer costs the others
//! and the encoder nothing. Sequence numbers are relayed unchanged: a viewer sees where
//! its jumps were.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use tokio::sync::broadcast::{self, error::RecvError};
use tonic::Status;

use super::relay::{LAG_LIMIT, Relayed};
use crate::metrics::VideoMetrics;

/// A viewer's stream of encoded `VideoAccessUnit`s.
pub(crate) type VideoBytes = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send>>;

/// A viewer's units decoded, for callers of a PlayerService object in the same process.
pub(crate) type VideoStream =
    Pin<Box<dyn Stream<Item = Result<banco_wire::pb::VideoAccessUnit, Status>> + Send>>;

/// `units`, decoded.
pub(crate) fn decoded(units: VideoBytes) -> VideoStream {
    use futures::StreamExt as _;
    use prost::Message as _;
    Box::pin(units.map(|item| {
        item.and_then(|bytes| {
            banco_wire::pb::VideoAccessUnit::decode(bytes)
                .map_err(|e| Status::internal(format!("a relayed unit did not decode: {e}")))
        })
    }))
}

/// Whether units are dropped until a keyframe, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skipping {
    No,
    /// A viewer that joined with no GOP to start from waits for the first keyframe.
    FirstKeyframe,
    /// The viewer fell behind: what it skips is counted.
    Behind,
}

struct Viewer {
    backlog: std::vec::IntoIter<Arc<Relayed>>,
    receiver: broadcast::Receiver<Arc<Relayed>>,
    skipping: Skipping,
    metrics: VideoMetrics,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.metrics.viewers.dec();
    }
}

pub(super) fn stream(
    backlog: Vec<Arc<Relayed>>,
    receiver: broadcast::Receiver<Arc<Relayed>>,
    closed: impl Future<Output = ()> + Send + 'static,
    metrics: VideoMetrics,
) -> VideoBytes {
    metrics.viewers.inc();
    let viewer = Viewer {
        // The backlog, when there is one, starts with a keyframe.
        skipping: if backlog.is_empty() {
            Skipping::FirstKeyframe
        } else {
            Skipping::No
        },
        backlog: backlog.into_iter(),
        receiver,
        metrics,
    };
    let closed: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(closed);
    Box::pin(futures::stream::unfold(
        (viewer, closed),
        |(mut viewer, mut closed)| async move {
            let unit = tokio::select! {
                biased;
                () = &mut closed => return None,
                unit = viewer.next() => unit?,
            };
            Some((Ok(unit), (viewer, closed)))
        },
    ))
}

impl Viewer {
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(unit) = self.backlog.next() {
            return Some(unit.encoded.clone());
        }
        loop {
            match self.receiver.recv().await {
                Ok(unit) if unit.keyframe => {
                    self.skipping = Skipping::No;
                    return Some(unit.encoded.clone());
                }
                Ok(_) if self.skipping == Skipping::FirstKeyframe => {}
                Ok(_) if self.skipping == Skipping::Behind => {
                    self.metrics.units_skipped.inc();
                }
                Ok(unit) => {
                    if self.receiver.len() > LAG_LIMIT {
                        self.fall_behind(1);
                    } else {
                        return Some(unit.encoded.clone());
                    }
                }
                Err(RecvError::Lagged(missed)) => self.fall_behind(missed),
                Err(RecvError::Closed) => return None,
            }
        }
    }

    /// Skips to the next keyframe, `units` gone already.
    fn fall_behind(&mut self, units: u64) {
        if self.skipping != Skipping::Behind {
            self.metrics.viewer_skips.inc();
        }
        self.skipping = Skipping::Behind;
        self.metrics.units_skipped.inc_by(units);
    }
}
