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
use std::pin::Pin;

use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_table::Phase;
use banco_table::actor::Joined;
use banco_wire::pb;
use banco_wire::pb::table_event::Event as Wire;
use bytes::Bytes;
use futures::Stream;
use tonic::Status;

pub(crate) use grpc::{GRPC_HEADER, frame, trailers};
pub(crate) use routes::{PlayerRoutes, SubscribeRoute};

use crate::hosted::HostedTable;
use crate::hub::{self, AttachError, Attached, Feed, From, Front, Hub, Next};
use crate::player_service::PlayerServer;
use crate::wire;

/// How many times a new subscriber reads the table again when the table moved on faster
/// than the hub keeps events between the read and the attach.
const JOIN_TRIES: usize = 3;

/// Opens `player`'s subscription to the table `request` names.
pub(crate) async fn open(
    server: &PlayerServer,
    player: &str,
    request: pb::SubscribeRequest,
) -> Result<Subscription, Status> {
    let table = server.table(&request.table_id)?;
    let hub = table.hub()?;
    let resume = request.resume_from_seq;
    let (prefix, position, attached) = if resume == 0 {
        let (snapshot, seq, attached) = fresh(server, &table, hub, player).await?;
        (vec![snapshot_event(hub, seq, snapshot)], seq, attached)
    } else {
        match hub.attach(player, From::Resume(resume)).await {
            Some(Ok(attached)) => (Vec::new(), resume, attached),
            Some(Err(AttachError::Gap { oldest_kept })) => {
                let (snapshot, seq, attached) = fresh(server, &table, hub, player).await?;
                let gap = Wire::ResumeGap(pb::ResumeGap {
                    requested_seq: resume,
                    oldest_kept_seq: oldest_kept,
                });
                (
                    vec![event(hub, seq, gap), snapshot_event(hub, seq, snapshot)],
                    seq,
                    attached,
                )
            }
            None => return Err(stopped(table.id())),
        }
    };
    Ok(stream(
        hub.table_id().into(),
        prefix.into(),
        position,
        attached,
    ))
}

/// The snapshot, with the round in play (if any) as its `round_id`, so that a client can
/// bet at once.
struct Shown {
    round_id: String,
    snapshot: pb::Snapshot,
}

fn snapshot_event(hub: &Hub, seq: u64, shown: Shown) -> Bytes {
    hub::encode(
        seq,
        hub.table_id(),
        &shown.round_id,
        Wire::Snapshot(shown.snapshot),
    )
}

/// Reads the table for `player` and attaches after it.
async fn fresh(
    server: &PlayerServer,
    table: &HostedTable,
    hub: &Hub,
    player: &str,
) -> Result<(Shown, u64, Attached), Status> {
    // The wallet's balance, read first: any later change reaches the stream as an event.
    let available = server.available(player).await?;
    for _ in 0..JOIN_TRIES {
        let joined = table
            .handle()
            .join(player)
            .await
            .map_err(|e| table.actor_error(e))?;
        let seq = hub::through(joined.seq);
        match hub.attach(player, From::Snapshot(seq)).await {
            Some(Ok(attached)) => {
                let shown = Shown {
                    round_id: joined
                        .table
                        .round_id
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    snapshot: snapshot(server, table, &joined, available),
                };
                return Ok((shown, seq, attached));
            }
            Some(Err(AttachError::Gap { .. })) => continue,
            None => return Err(stopped(table.id())),
        }
    }
    Err(Status::unavailable(format!(
        "table {}: its events come faster than a subscription can start; try again",
        table.id()
    )))
}

fn stopped(table: &str) -> Status {
    Status::unavailable(format!(
        "table {table}: its event fan-out has stopped (the broadcaster is shutting down)"
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

/// What a subscriber is shown on joining: the table, and the caller's own bets and money.
fn snapshot(
    server: &PlayerServer,
    table: &HostedTable,
    joined: &Joined,
    available: i64,
) -> pb::Snapshot {
    let state = wire::round_state(&joined.table, hub::through(joined.seq));
    let (closes_at, countdown_ms) = match joined.table.phase {
        Phase::BettingOpen {
            closes_at: Some(closes_at),
            ..
        } => (
            Some(wire::timestamp(closes_at)),
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
        balance: Some(server.balance(available, position.in_play(), position.pending)),
        cards_left: state.cards_left,
        table: Some(server.info(
            table,
            &joined.table,
            joined.scoreboard.last_results(LAST_RESULTS_SHOWN),
        )),
    }
}
