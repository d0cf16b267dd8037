//! Subscribe: a player's stream of a table's events.
//!
//! A new subscription reads the table and the caller's money in one actor request
//! ([`banco_table::TableHandle::join`]), sends that as a private Snapshot numbered
//! `through(seq)`, and attaches to the hub after it: the hub sends exactly the events that
//! came after, public ones and the caller's own. A resuming subscription attaches after
//! the seq the client last saw; when the hub no longer keeps what followed it, the client
//! gets a ResumeGap, then a fresh Snapshot. Snapshot, ResumeGap and CutOff carry the seq the
//! stream stands at, so a client that remembers the last seq it saw never loses or repeats
//! an event.

mod codec;
mod grpc;
mod routes;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_table::Phase;
use banco_table::actor::Joined;
use banco_wire::pb;
use banco_wire::pb::table_event::Event as Wire;
use bytes::Bytes;
use futures::Stream;
use futures::future::BoxFuture;
use tonic::Status;

pub(crate) use grpc::{GRPC_HEADER, frame, trailers};
pub(crate) use routes::{PlayerRoutes, SubscribeRoute, VideoSource};

use crate::hosted::HostedTable;
use crate::hub::{self, AttachError, Attached, Feed, From, Front, Hub, Next};
use crate::player_service::PlayerServer;

/// How many times a new subscriber reads the table again when the table moved on faster
/// than the hub keeps events between the read and the attach.
const JOIN_TRIES: usize = 3;

/// Where Subscribe streams come from: the tables hosted here (a broadcaster), or the
/// tables' event streams (an edge).
pub(crate) trait Subscriptions: Send + Sync + 'static {
    /// `player`'s stream of the table `request` names; `request` still carries the
    /// caller's metadata.
    fn open(
        self: Arc<Self>,
        player: String,
        request: tonic::Request<pb::SubscribeRequest>,
    ) -> BoxFuture<'static, Result<Subscription, Status>>;
}

impl Subscriptions for PlayerServer {
    fn open(
        self: Arc<Self>,
        player: String,
        request: tonic::Request<pb::SubscribeRequest>,
    ) -> BoxFuture<'static, Result<Subscription, Status>> {
        Box::pin(async move { open(&self, &player, request.into_inner()).await })
    }
}

/// Opens `player`'s subscription to the table `request` names.
pub(crate) async fn open(
    server: &PlayerServer,
    player: &str,
    request: pb::SubscribeRequest,
) -> Result<Subscription, Status> {
    let table = server.table(&request.table_id)?;
    let hub = table.hub()?;
    let resume = request.resume_from_seq;
    let from = (resume != 0).then_some(From::Resume(resume));
    open_on(hub, player, from, || fresh(server, &table, player)).await
}

/// A subscription's events decoded, for callers of a PlayerService object in the same
/// process (the served route sends the bytes as they are).
pub(crate) type EventStream = Pin<Box<dyn Stream<Item = Result<pb::TableEvent, Status>> + Send>>;

/// `subscription`'s events, decoded.
pub(crate) fn decoded(subscription: Subscription) -> EventStream {
    use futures::StreamExt as _;
    use prost::Message as _;
    Box::pin(subscription.map(|item| {
        item.and_then(|bytes| {
            pb::TableEvent::decode(bytes.slice(GRPC_HEADER..))
                .map_err(|e| Status::internal(format!("an encoded event did not decode: {e}")))
        })
    }))
}

/// A new subscriber's Snapshot event, framed, and the seq it stands at.
pub(crate) struct Fresh {
    pub(crate) bytes: Bytes,
    pub(crate) seq: u64,
}

/// Opens `player`'s subscription to `hub`'s table: from `from` (a resume point), or from
/// a snapshot `fresh` gives (also when what followed the resume point is no longer kept,
/// after a ResumeGap).
pub(crate) async fn open_on<F, Fut>(
    hub: &Hub,
    player: &str,
    from: Option<From>,
    mut fresh: F,
) -> Result<Subscription, Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Fresh, Status>>,
{
    let (prefix, position, attached) = match from {
        None => {
            let (snapshot, attached) = attach_fresh(hub, player, &mut fresh).await?;
            let seq = snapshot.seq;
            (vec![snapshot.bytes], seq, attached)
        }
        Some(from) => {
            let resume = match from {
                From::Snapshot(seq) | From::Resume(seq) | From::InStream(seq) => seq,
            };
            match hub.attach(player, from).await {
                Some(Ok(attached)) => (Vec::new(), resume, attached),
                Some(Err(AttachError::Gap { oldest_kept })) => {
                    let (snapshot, attached) = attach_fresh(hub, player, &mut fresh).await?;
                    let seq = snapshot.seq;
                    let gap = Wire::ResumeGap(pb::ResumeGap {
                        requested_seq: resume,
                        oldest_kept_seq: oldest_kept,
                    });
                    (vec![event(hub, seq, gap), snapshot.bytes], seq, attached)
                }
                None => return Err(stopped(hub.table_id())),
            }
        }
    };
    Ok(stream(
        hub.table_id().into(),
        prefix.into(),
        position,
        attached,
    ))
}

/// A snapshot from `fresh`, and the subscriber attached after it.
async fn attach_fresh<F, Fut>(
    hub: &Hub,
    player: &str,
    fresh: &mut F,
) -> Result<(Fresh, Attached), Status>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Fresh, Status>>,
{
    for _ in 0..JOIN_TRIES {
        let snapshot = fresh().await?;
        match hub.attach(player, From::Snapshot(snapshot.seq)).await {
            Some(Ok(attached)) => return Ok((snapshot, attached)),
            Some(Err(AttachError::Gap { .. })) => continue,
            None => return Err(stopped(hub.table_id())),
        }
    }
    Err(Status::unavailable(format!(
        "table {}: its events come faster than a subscription can start; try again",
        hub.table_id()
    )))
}

/// Reads the table for `player`: their Snapshot.
async fn fresh(server: &PlayerServer, table: &HostedTable, player: &str) -> Result<Fresh, Status> {
    // The wallet's balance, read first: any later change reaches the stream as an event.
    let available = server.available(player).await?;
    let joined = table
        .handle()
        .join(player)
        .await
        .map_err(|e| table.actor_error(e))?;
    let seq = hub::through(joined.seq);
    let round_id = joined
        .table
        .round_id
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let snapshot = snapshot(server, table, &joined, Some(available));
    Ok(Fresh {
        bytes: hub::encode(seq, table.id(), &round_id, Wire::Snapshot(snapshot)),
        seq,
    })
}

pub(crate) fn stopped(table: &str) -> Status {
    Status::unavailable(format!(
        "table {table}: its event fan-out has stopped (this server is shutting down)"
    ))
}

fn event(hub: &Hub, seq: u64, event: Wire) -> Bytes {
    hub::encode(seq, hub.table_id(), "", event)
}

/// The prefix, then the hub's events; when the hub lets go of the subscriber, a CutOff
/// with the seq to resume from. Call on the thread that attached (its feed is that
/// thread's).
fn stream(
    table_id: std::sync::Arc<str>,
    prefix: VecDeque<Bytes>,
    position: u64,
    attached: Attached,
) -> Subscription {
    let (feed, reader) = attached.join_feed();
    attached.queue.set_reader(reader);
    Subscription {
        table_id,
        prefix,
        last: position,
        feed,
        reader,
        attached: Some(attached),
        done: false,
    }
}

/// A subscriber's stream of `TableEvent`s, each framed as a gRPC message, polled by its
/// HTTP/2 stream: the public events from the feed and its own from its queue, merged by
/// seq. Written out by hand because it runs for
/// every subscriber on every event.
pub(crate) struct Subscription {
    table_id: std::sync::Arc<str>,
    prefix: VecDeque<Bytes>,
    /// The seq the stream stands at: the last event it gave, or where it started.
    last: u64,
    feed: std::sync::Arc<Feed>,
    reader: usize,
    /// `None` once cut off: the hub has let go of the subscriber.
    attached: Option<Attached>,
    done: bool,
}

impl Subscription {
    /// Ends the stream with a CutOff at the seq it stands at; the hub lets go of it.
    fn cut_off(&mut self, reason: String) -> Bytes {
        self.done = true;
        self.attached = None;
        hub::encode(
            self.last,
            &self.table_id,
            "",
            Wire::CutOff(pb::CutOff {
                resume_from_seq: self.last,
                reason,
            }),
        )
    }

    /// For a subscriber that cannot be sent anything now: its CutOff, ending the stream,
    /// once it has fallen too far behind; until then, woken at the next event to ask again.
    pub(crate) fn poll_lagged(&mut self, cx: &mut std::task::Context<'_>) -> Option<Bytes> {
        if self.done || !self.feed.lagged(self.reader, cx) {
            return None;
        }
        Some(self.cut_off(lagged(self.feed.kept())))
    }
}

fn lagged(kept: usize) -> String {
    format!("more than {kept} public events were waiting unread: resume from your last seq")
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.feed.leave(self.reader);
    }
}

impl Stream for Subscription {
    type Item = Result<Bytes, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        if let Some(bytes) = this.prefix.pop_front() {
            return Poll::Ready(Some(Ok(bytes)));
        }
        let Some(attached) = this.attached.as_ref().filter(|_| !this.done) else {
            return Poll::Ready(None);
        };
        // Served outside the connection threads, no relay flags its queue: it is looked at
        // every time.
        let direct = matches!(attached.public, hub::Public::Direct(_));
        // The subscriber's own first event, once looked at this time.
        let mut own: Option<std::sync::Arc<hub::Encoded>> = None;
        let mut queue_read = direct;
        loop {
            let Some(attached) = this.attached.as_ref() else {
                return Poll::Ready(None);
            };
            if queue_read && own.is_none() {
                match attached.queue.front(cx) {
                    Front::Cut(reason) => return Poll::Ready(Some(Ok(this.cut_off(reason)))),
                    Front::Event(event) => own = Some(event),
                    Front::Empty if !direct => this.feed.queue_empty(this.reader),
                    Front::Empty => {}
                }
            }
            // A public event goes first if it comes before the subscriber's own.
            let limit = own.as_ref().map_or(u64::MAX, |own| own.seq);
            match this
                .feed
                .next(this.reader, this.last, limit, queue_read, cx)
            {
                Next::Event { seq, bytes } => {
                    this.last = seq;
                    return Poll::Ready(Some(Ok(bytes)));
                }
                Next::Lagged => {
                    let kept = this.feed.kept();
                    return Poll::Ready(Some(Ok(this.cut_off(lagged(kept)))));
                }
                Next::Queue => {
                    queue_read = true;
                    continue;
                }
                // No public event unread: the feed has every one before the subscriber's
                // own (the relay, or outside the threads the hub, gave them in order).
                Next::Nothing if own.is_none() => return Poll::Pending,
                Next::Nothing | Next::Later => {}
            }
            if let Some(event) = own.take() {
                attached.queue.pop();
                if event.seq > this.last {
                    this.last = event.seq;
                    return Poll::Ready(Some(Ok(event.bytes.clone())));
                }
            }
        }
    }
}

/// What a subscriber is shown on joining: the table, and the caller's own bets and money
/// (`available`: the wallet's balance; `None` for the snapshot every player sees, without
/// anyone's money).
pub(crate) fn snapshot(
    server: &PlayerServer,
    table: &HostedTable,
    joined: &Joined,
    available: Option<i64>,
) -> pb::Snapshot {
    let state = pb::TableState::from(&joined.table);
    let (closes_at, countdown_ms) = match joined.table.phase {
        Phase::BettingOpen {
            closes_at: Some(closes_at),
            ..
        } => (
            Some(banco_wire::convert::timestamp_of_ms(closes_at)),
            u32::try_from(closes_at.saturating_sub(crate::wire::unix_ms())).unwrap_or(u32::MAX),
        ),
        _ => (None, 0),
    };
    let position = &joined.position;
    pb::Snapshot {
        phase: state.phase,
        shoe_state: state.shoe_state,
        closes_at,
        countdown_ms,
        cards: state.cards,
        due: state.due,
        result: state.result,
        last_results: hub::winners(&joined.scoreboard),
        roads: Some(pb::Roads::from(&joined.scoreboard)),
        bet_totals: state.bet_totals,
        own_bets: position
            .stakes
            .iter()
            .map(|(&kind, &stake)| pb::Bet {
                kind: pb::BetKind::from(kind).into(),
                stake_minor: stake,
            })
            .collect(),
        balance: available
            .map(|available| server.balance(available, position.in_play(), position.pending)),
        cards_left: state.cards_left,
        table: Some(server.info(
            table,
            &joined.table,
            joined.scoreboard.last_results(LAST_RESULTS_SHOWN),
        )),
    }
}
