//! One table's stream read into its hub on an edge: from the stream's latest events (as
//! many as the hub's ring keeps), then each one as it comes, for as long as the hub is
//! there. When the server goes away (or the reader's consumer is lost) it starts again
//! after the last message it handed over, so nothing is skipped or given twice.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use futures::StreamExt as _;
use tokio::sync::mpsc;

use crate::events::{layout, tail};
use crate::hub::StreamItem;

/// Events read ahead of the hub: beyond, the reader waits (and the server's flow control
/// with it) rather than the edge holding the whole stream in memory.
pub(super) const AHEAD: usize = 1_024;

/// Reads `table`'s stream from `opened` on into `items`.
pub(super) async fn read(
    js: jetstream::Context,
    table: String,
    keep: usize,
    opened: tail::Tail,
    items: mpsc::Sender<StreamItem>,
) {
    let mut tail = Some(opened);
    // The last stream sequence handed over.
    let mut after: Option<u64> = None;
    let mut wait = Duration::from_millis(100);
    loop {
        let current = match tail.take() {
            Some(tail) => Ok(tail),
            None => tail::open(&js, &table, keep, after, None).await,
        };
        match current {
            Ok(mut tail) => {
                if after.is_none()
                    && tail.last == 0
                    && items.send(StreamItem::CaughtUp).await.is_err()
                {
                    return;
                }
                while let Some(message) = tail.messages.next().await {
                    let message = match message {
                        Ok(message) => message,
                        // The consumer makes itself again (a heartbeat missed, the server
                        // back): it says so, and goes on after its last message.
                        Err(e) => {
                            tracing::debug!(%table, error = %e, "edge: the table's stream reader starts again");
                            continue;
                        }
                    };
                    let Ok(info) = message.info() else { continue };
                    let (stream_seq, pending) = (info.stream_sequence, info.pending);
                    match layout::event(message.headers.as_ref(), &message.payload) {
                        Ok(event) => {
                            let item = StreamItem::Event {
                                event: Arc::new(event),
                                pending,
                            };
                            if items.send(item).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => tracing::warn!(%table, stream_seq, error = %e, "edge: skipped"),
                    }
                    after = Some(stream_seq);
                    wait = Duration::from_millis(100);
                }
            }
            Err(e) => {
                tracing::warn!(%table, error = %e, "edge: the table's stream cannot be read; trying again")
            }
        }
        if items.is_closed() {
            return;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(5));
    }
}
