//! The fan-out hub of one table: it turns every journaled command the table publishes into
//! wire events, numbers and encodes each once, keeps the recent ones in a ring, hands the
//! public ones once to each connection thread's feed, and pushes each private one to its
//! player's subscribers' bounded queues.
//!
//! One task owns all of it (like the table actor owns the table): handlers attach
//! subscribers and inject events by message. A subscriber that falls too far behind (its
//! feed has dropped what it did not read, or its queue is full) is cut off with its resume
//! point, so that a slow or stalled player never delays the table or the others; the ring
//! lets it come back for exactly what it missed.
//!
//! Bet totals change with every bet; they are sent at most every [`TOTALS_EVERY`]. The
//! "last bets" warning comes [`LAST_BETS_BEFORE`] before betting closes on a timed round.

mod fanout;
mod feed;
mod queue;
mod regenerate;
mod ring;
#[cfg(feature = "jetstream")]
mod stream;
mod task;
mod translate;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use banco_table::actor::{ActorError, TableHandle};
use banco_wire::pb;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

pub(crate) use feed::{Feed, Next};
pub(crate) use queue::{Front, Queue, Relay, current_relay, install_relay};
#[cfg(feature = "jetstream")]
pub(crate) use regenerate::regenerate;
pub(crate) use ring::Encoded;
#[cfg(feature = "jetstream")]
pub(crate) use ring::record_of;
pub(crate) use ring::through;
#[cfg(feature = "jetstream")]
pub(crate) use stream::{StreamHub, StreamItem};
pub(crate) use translate::winners;

/// How much the hub of each table keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FanoutLimits {
    /// Recent events kept for resuming subscribers (default 16,384).
    pub ring_events: usize,
    /// Events that may wait unread for one subscriber before it is cut off (default
    /// 1,024): each connection thread's feed of the table keeps this many public events,
    /// and each subscriber's queue holds this many of its own.
    pub subscriber_queue: usize,
}

impl Default for FanoutLimits {
    fn default() -> FanoutLimits {
        FanoutLimits {
            ring_events: 16_384,
            subscriber_queue: 1_024,
        }
    }
}

/// Least time between two BetTotals events.
pub(crate) const TOTALS_EVERY: Duration = Duration::from_millis(250);

/// How long before betting closes the LastBets warning is sent.
pub(crate) const LAST_BETS_BEFORE: Duration = Duration::from_secs(5);

/// Chat lines the croupier console is shown.
pub(crate) const CHAT_SHOWN: usize = 50;

/// What the console and the lobby read of the hub without asking it.
#[derive(Debug, Default)]
pub(crate) struct HubView {
    /// Distinct players subscribed now.
    pub(crate) players: u32,
    /// Seat `i + 1`: who sits there (empty: free).
    pub(crate) seats: Vec<String>,
    pub(crate) chat: VecDeque<pb::ChatLine>,
}

/// Where a subscription starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum From {
    /// After a snapshot the subscriber was given (`through(journal seq)`); the hub may not
    /// have reached it yet.
    Snapshot(u64),
    /// After the last seq a reconnecting subscriber saw.
    Resume(u64),
    /// After a seq the table's event stream has, which this hub (an edge's, reading the
    /// stream) may not have reached yet.
    InStream(u64),
}

/// What a table's hub starts with when its events are also published to the table's
/// stream (`--events`).
#[derive(Debug)]
pub(crate) struct Streamed {
    /// The events already sent, oldest first: the stream's latest, and those of journal
    /// records the stream does not have yet (a crash lost them before they left). Kept so
    /// that a subscriber who saw some before a restart resumes after them.
    pub(crate) tail: Vec<Arc<Encoded>>,
    /// The latest seq the stream has (0: none, or not known).
    pub(crate) last: u64,
    /// Where every event the hub numbers goes, in order, to be published.
    pub(crate) publish: mpsc::UnboundedSender<Publish>,
}

/// How a table's hub starts from its stream (`--events`): given the seq the hub starts at
/// (through the latest journal record), what it starts with.
pub(crate) type StreamStart =
    Box<dyn FnOnce(u64) -> futures::future::BoxFuture<'static, Streamed> + Send>;

/// What a table's hub hands its publisher.
#[derive(Debug)]
pub(crate) enum Publish {
    /// The next event numbered.
    Event(Arc<Encoded>),
    /// The hub fell behind the table and skipped records: the events up to `through` may
    /// be missing here (the publisher reads them from the journal).
    Missed { through: u64 },
}

/// Why a subscription could not be attached where it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttachError {
    /// What came after the resume point is no longer kept (or was sent by a broadcaster
    /// that ran before this one): a snapshot is needed.
    Gap { oldest_kept: u64 },
}

/// A subscriber's end of the hub.
#[derive(Debug)]
pub(crate) struct Attached {
    /// The subscriber's own events (and a resume's backlog), then why the hub let go of
    /// it, if it does.
    pub(crate) queue: Arc<Queue>,
    /// Where its public events come from.
    pub(crate) public: Public,
    /// The backlog, or the snapshot, has every event up to this seq; the feed has the
    /// public ones after it.
    pub(crate) start: u64,
    /// Detaches on drop, so that the player count stays true.
    pub(crate) _guard: DetachGuard,
}

/// Where a subscriber reads the public events.
#[derive(Debug)]
pub(crate) enum Public {
    /// From its connection thread's feed of the table, which the hub fills through the
    /// thread's relay.
    Relayed(Arc<feed::FeedSpec>),
    /// From the hub's own feed (a subscriber served outside the connection threads).
    Direct(Arc<Feed>),
}

impl Attached {
    /// The feed to read, joined after [`start`](Self::start): for a relayed subscriber,
    /// the current thread's, so call this on the thread that attached.
    pub(crate) fn join_feed(&self) -> (Arc<Feed>, usize) {
        let feed = match &self.public {
            Public::Relayed(spec) => feed::on_this_thread(spec),
            Public::Direct(feed) => Arc::clone(feed),
        };
        let reader = feed.join(self.start);
        (feed, reader)
    }
}

/// Tells the hub a subscriber went away.
#[derive(Debug)]
pub(crate) struct DetachGuard {
    id: u64,
    commands: mpsc::UnboundedSender<Command>,
}

impl Drop for DetachGuard {
    fn drop(&mut self) {
        // The hub may already be gone with the server: nothing to tell then.
        let _ = self.commands.send(Command::Detach { id: self.id });
    }
}

pub(crate) enum Command {
    Attach {
        player: Arc<str>,
        from: From,
        /// The connection thread the subscriber is served on, if any.
        relay: Option<queue::Relay>,
        reply: oneshot::Sender<Result<Attached, AttachError>>,
    },
    Detach {
        id: u64,
    },
    /// An event that no journal record carries (a refused bet), numbered after the
    /// latest record.
    Inject {
        to: Option<Arc<str>>,
        round_id: String,
        event: Box<pb::table_event::Event>,
    },
}

/// A cloneable handle to one table's hub.
#[derive(Clone, Debug)]
pub(crate) struct Hub {
    commands: mpsc::UnboundedSender<Command>,
    view: Arc<Mutex<HubView>>,
    table_id: Arc<str>,
    /// The latest seq a stream-fed hub has delivered (0 on a table's own hub).
    last: Arc<std::sync::atomic::AtomicU64>,
}

/// Why the hub could not start.
#[derive(Debug, thiserror::Error)]
#[error("the fan-out hub of table {table} could not read the table: {source}")]
pub struct HubError {
    table: String,
    #[source]
    source: ActorError,
}

impl Hub {
    /// Starts the hub of the table behind `handle`, from the table as it is now.
    pub(crate) async fn start(
        handle: TableHandle,
        currency: String,
        limits: FanoutLimits,
        metrics: crate::metrics::HubMetrics,
        streamed: Option<StreamStart>,
    ) -> Result<Hub, HubError> {
        let table_id: Arc<str> = Arc::from(handle.table_id());
        let view = Arc::new(Mutex::new(HubView::default()));
        let (commands, inbox) = mpsc::unbounded_channel();
        let task = task::HubTask::start(
            handle,
            currency,
            limits,
            Arc::clone(&view),
            inbox,
            commands.clone(),
            metrics,
            streamed,
        )
        .await
        .map_err(|source| HubError {
            table: table_id.to_string(),
            source,
        })?;
        tokio::spawn(task.run());
        Ok(Hub {
            commands,
            view,
            table_id,
            last: Arc::default(),
        })
    }

    /// Attaches a subscriber for `player` from `from`. `None` when the hub has stopped.
    pub(crate) async fn attach(
        &self,
        player: &str,
        from: From,
    ) -> Option<Result<Attached, AttachError>> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Attach {
                player: Arc::from(player),
                from,
                relay: queue::current_relay(),
                reply,
            })
            .ok()?;
        answer.await.ok()
    }

    /// Sends `event` to `player` only (a refusal the journal has no record of).
    pub(crate) fn tell(&self, player: &str, round_id: &str, event: pb::table_event::Event) {
        let _ = self.commands.send(Command::Inject {
            to: Some(Arc::from(player)),
            round_id: round_id.to_owned(),
            event: Box::new(event),
        });
    }

    pub(crate) fn table_id(&self) -> &str {
        &self.table_id
    }

    /// The latest seq a stream-fed hub has delivered.
    pub(crate) fn last_seq(&self) -> u64 {
        self.last.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Reads the hub's view (players, seats, chat).
    pub(crate) fn view<T>(&self, read: impl FnOnce(&HubView) -> T) -> T {
        read(&self.view.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Encodes `event` as a `TableEvent` numbered `seq`, framed as a gRPC message: sent as
/// it is to every subscriber.
pub(crate) fn encode(
    seq: u64,
    table_id: &str,
    round_id: &str,
    event: pb::table_event::Event,
) -> Bytes {
    crate::subscribe::frame(&pb::TableEvent {
        seq,
        server_time: Some(crate::wire::now()),
        table_id: table_id.to_owned(),
        round_id: round_id.to_owned(),
        event: Some(event),
    })
}
