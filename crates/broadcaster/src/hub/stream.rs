//! The hub of a table on an edge: fed by the table's event stream (already numbered and
//! encoded by the table's own hub) instead of by the table actor, and otherwise the same
//! fan-out (`fanout`): the same ring, feeds, queues and cut-offs.
//!
//! It starts from the stream's latest events (as many as the ring keeps), so that a
//! subscriber moved here from another edge, or back after this one restarted, resumes
//! with exactly what it missed. Attaches wait until the hub has read the stream up to
//! where it stood when the hub started; after that, a subscriber may resume from a seq
//! this hub has not reached yet (`From::InStream`, checked against the stream first).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::mpsc;

use super::fanout::Fanout;
use super::ring::Encoded;
use super::{Command, FanoutLimits};

/// What the stream's reader hands the hub.
#[derive(Debug)]
pub(crate) enum StreamItem {
    /// The stream's next event, and how many more it had after it then.
    Event { event: Arc<Encoded>, pending: u64 },
    /// The stream had nothing (more) when the reader started: the hub has caught up.
    CaughtUp,
}

/// The task owning one stream-fed hub.
pub(crate) struct StreamHub {
    table_id: Arc<str>,
    fanout: Fanout,
    items: mpsc::Receiver<StreamItem>,
    inbox: mpsc::UnboundedReceiver<Command>,
    /// The latest seq delivered (0: none yet).
    last: u64,
    /// Shared with the hub's handles.
    last_shared: Arc<std::sync::atomic::AtomicU64>,
    /// Whether the ring's floor is known yet (`false` until the first event when the
    /// reader did not start at the stream's very first message).
    floor_known: bool,
    caught_up: bool,
    /// Attaches waiting for the hub to catch up.
    waiting: Vec<Command>,
    /// Events in the stream not yet read here.
    lag: Gauge,
}

impl StreamHub {
    /// A hub for `table_id` fed by `items`. `whole`: the reader starts at the stream's
    /// very first event, so the ring is complete from the table's beginning.
    pub(crate) fn start(
        table_id: &str,
        limits: FanoutLimits,
        metrics: crate::metrics::HubMetrics,
        lag: Gauge,
        items: mpsc::Receiver<StreamItem>,
        whole: bool,
    ) -> super::Hub {
        let view = Arc::new(std::sync::Mutex::new(super::HubView::default()));
        let (commands, inbox) = mpsc::unbounded_channel();
        let last_shared = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let table_id: Arc<str> = Arc::from(table_id);
        let task = StreamHub {
            table_id: Arc::clone(&table_id),
            fanout: Fanout::new(
                limits,
                if whole { 0 } else { u64::MAX },
                Arc::clone(&view),
                commands.clone(),
                metrics,
            ),
            items,
            inbox,
            last: 0,
            last_shared: Arc::clone(&last_shared),
            floor_known: whole,
            caught_up: false,
            waiting: Vec::new(),
            lag,
        };
        tokio::spawn(task.run());
        super::Hub {
            commands,
            view,
            table_id,
            last: last_shared,
        }
    }

    async fn run(mut self) {
        loop {
            tokio::select! {
                biased;
                item = self.items.recv() => match item {
                    Some(StreamItem::Event { event, pending }) => self.on_event(event, pending),
                    Some(StreamItem::CaughtUp) => self.catch_up(),
                    None => break,
                },
                command = self.inbox.recv() => match command {
                    Some(command) if !self.caught_up && matches!(command, Command::Attach { .. }) => {
                        self.waiting.push(command);
                    }
                    Some(command) => self.on_command(command),
                    None => break,
                },
            }
        }
        self.fanout.cut_all(
            "this edge stopped reading the table's events: subscribe again with the last seq \
             you saw as resume_from_seq",
        );
    }

    fn on_event(&mut self, event: Arc<Encoded>, pending: u64) {
        self.lag.set(i64::try_from(pending).unwrap_or(i64::MAX));
        // A message the stream's reader was given again (a consumer made anew).
        if event.seq <= self.last {
            return;
        }
        if !self.floor_known {
            self.floor_known = true;
            self.fanout.reset(event.seq.saturating_sub(1));
        }
        self.last = event.seq;
        self.last_shared.store(event.seq, Ordering::Release);
        self.fanout.deliver(event);
        if pending == 0 {
            self.catch_up();
        }
    }

    fn catch_up(&mut self) {
        if self.caught_up {
            return;
        }
        self.caught_up = true;
        if !self.floor_known {
            // An empty stream: nothing was ever missed.
            self.floor_known = true;
            self.fanout.reset(0);
        }
        tracing::debug!(table = %self.table_id, last = self.last, "caught up with the table's stream");
        for command in std::mem::take(&mut self.waiting) {
            self.on_command(command);
        }
    }

    fn on_command(&mut self, command: Command) {
        // Refusals are told by the table's own hub, and reach here through the stream.
        let _ = self.fanout.handle(command, self.last);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::hub::From;
    use crate::subscribe::{Fresh, GRPC_HEADER, open_on};
    use banco_wire::pb;
    use futures::StreamExt as _;
    use prost::Message as _;
    use tonic::Status;

    fn event(seq: u64, to: Option<&str>) -> Arc<Encoded> {
        Arc::new(Encoded {
            seq,
            to: to.map(Arc::from),
            bytes: banco_wire::framing::frame(&pb::TableEvent {
                seq,
                table_id: "T01".into(),
                ..pb::TableEvent::default()
            }),
        })
    }

    async fn feed(items: &mpsc::Sender<StreamItem>, events: &[(u64, Option<&str>)]) {
        for (i, &(seq, to)) in events.iter().enumerate() {
            let pending = (events.len() - i - 1) as u64;
            let event = event(seq, to);
            items
                .send(StreamItem::Event { event, pending })
                .await
                .unwrap();
        }
    }

    async fn next_seq(subscription: &mut crate::subscribe::Subscription) -> u64 {
        let bytes = subscription.next().await.unwrap().unwrap();
        pb::TableEvent::decode(bytes.slice(GRPC_HEADER..))
            .unwrap()
            .seq
    }

    async fn no_snapshot() -> Result<Fresh, Status> {
        Err(Status::internal("no snapshot was expected"))
    }

    /// A player resuming here from a seq another edge already sent it (this hub has not
    /// read that far) is attached and sent exactly what follows it, its own private events
    /// and not another's; a resume point after the whole stream is a gap.
    #[tokio::test]
    async fn a_resume_ahead_of_this_hub_waits_for_the_stream_and_one_beyond_it_is_a_gap() {
        let (items, read) = mpsc::channel(64);
        let hub = StreamHub::start(
            "T01",
            FanoutLimits::default(),
            crate::metrics::HubMetricFamilies::default().for_table("T01"),
            Gauge::default(),
            read,
            true,
        );
        feed(&items, &[(1, None), (2, Some("alice")), (3, None)]).await;
        let mut ahead = open_on(&hub, "alice", Some(From::InStream(5)), no_snapshot)
            .await
            .unwrap();
        let mut behind = open_on(&hub, "alice", Some(From::Resume(1)), no_snapshot)
            .await
            .unwrap();
        feed(
            &items,
            &[
                (4, None),
                (5, None),
                (6, Some("bob")),
                (7, Some("alice")),
                (8, None),
            ],
        )
        .await;
        for expected in [7, 8] {
            assert_eq!(next_seq(&mut ahead).await, expected);
        }
        for expected in [2, 3, 4, 5, 7, 8] {
            assert_eq!(next_seq(&mut behind).await, expected);
        }
        // Beyond the stream: a gap, then the snapshot given.
        let snapshot = || async {
            Ok(Fresh {
                bytes: banco_wire::framing::frame(&pb::TableEvent {
                    seq: 8,
                    event: Some(pb::table_event::Event::Snapshot(pb::Snapshot::default())),
                    ..pb::TableEvent::default()
                }),
                seq: 8,
            })
        };
        let mut beyond = open_on(&hub, "alice", Some(From::Resume(100)), snapshot)
            .await
            .unwrap();
        let gap = beyond.next().await.unwrap().unwrap();
        let gap = pb::TableEvent::decode(gap.slice(GRPC_HEADER..)).unwrap();
        assert!(
            matches!(gap.event, Some(pb::table_event::Event::ResumeGap(_))),
            "{gap:?}"
        );
        assert_eq!(next_seq(&mut beyond).await, 8, "the snapshot");
    }
}
