//! One table's publisher: every event its hub numbers goes to the table's stream, in
//! order, each exactly once, without ever making the table wait.
//!
//! The hub hands events over an unbounded channel and moves on; the publisher keeps them
//! in its own buffer until the server has acknowledged them. Publishes are pipelined
//! ([`WINDOW`] in flight), each with the event's seq as its message id and the stream
//! sequence it must follow (`Nats-Expected-Last-Sequence`): a publish after a lost
//! acknowledgement is dropped as a duplicate, and two broadcasters never interleave.
//!
//! Before publishing (at start, and after anything went wrong: the server away, a
//! publish refused) the publisher reads the stream's last event, drops what the stream
//! already has, and makes again from the journal the events it never had in hand (those
//! of a broadcaster killed before they left it, or beyond [`max_buffered`](EventLog) while
//! the server was away). The table's journal is the outbox: nothing recorded is lost.
//!
//! Fencing: once this process has published, a stream whose last event another
//! broadcaster published means the table was moved (a failover); this one stops publishing
//! for good and says so, instead of writing over the new owner.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::{PublishAckFuture, PublishErrorKind};
use async_nats::jetstream::{self, stream};
use banco_table::actor::ActorConfig;
use futures::StreamExt as _;
use futures::stream::FuturesOrdered;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::layout;
use crate::hub::{Encoded, Publish, record_of};
use crate::metrics::EventMetrics;

/// A publish's acknowledgement, awaited.
type Ack = <PublishAckFuture as std::future::IntoFuture>::IntoFuture;

/// Publishes awaiting their acknowledgement at once.
const WINDOW: usize = 256;

/// The first wait before trying the server again; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// What a publisher is started with.
pub(super) struct Start {
    pub(super) js: jetstream::Context,
    pub(super) table_id: String,
    pub(super) currency: String,
    /// This process, in every message's `Banco-Owner`.
    pub(super) owner: Arc<str>,
    pub(super) journal: ActorConfig,
    pub(super) max_events: i64,
    pub(super) max_buffered: usize,
    pub(super) events: mpsc::UnboundedReceiver<Publish>,
    /// Events to publish first, oldest first (made again from the journal at start).
    pub(super) first: Vec<Arc<Encoded>>,
    /// The events after this seq are in `first` or still to come from the hub.
    pub(super) complete_after: u64,
    pub(super) metrics: EventMetrics,
}

/// Where the stream stood at the last sync.
#[derive(Clone, Copy, Debug)]
struct Synced {
    /// The stream sequence the next publish must follow.
    expected_last: u64,
}

struct Publisher {
    js: jetstream::Context,
    table_id: String,
    subject: String,
    currency: String,
    owner: Arc<str>,
    journal: ActorConfig,
    max_events: i64,
    max_buffered: usize,
    events: Option<mpsc::UnboundedReceiver<Publish>>,
    /// Events not yet acknowledged, oldest first; the first `in_flight.len()` are sent.
    buffer: VecDeque<Arc<Encoded>>,
    in_flight: FuturesOrdered<Ack>,
    complete_after: u64,
    synced: Option<Synced>,
    /// This process has published (a last event by another then means it lost the table).
    published: bool,
    fenced: bool,
    retry: Duration,
    retry_at: Instant,
    metrics: EventMetrics,
}

/// Why the stream could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(super) enum SyncError {
    #[error("{0}")]
    Server(String),
    #[error("the journal could not be read again: {0}")]
    Journal(String),
}

/// Runs a table's publisher until its hub stops and what it handed over is published (or
/// the server is away when it stops: the next start publishes it from the journal).
pub(super) async fn run(start: Start) {
    let mut publisher = Publisher {
        subject: layout::subject(&start.table_id),
        js: start.js,
        table_id: start.table_id,
        currency: start.currency,
        owner: start.owner,
        journal: start.journal,
        max_events: start.max_events,
        max_buffered: start.max_buffered.max(1),
        events: Some(start.events),
        buffer: start.first.into(),
        in_flight: FuturesOrdered::new(),
        complete_after: start.complete_after,
        synced: None,
        published: false,
        fenced: false,
        retry: RETRY_FIRST,
        retry_at: Instant::now(),
        metrics: start.metrics,
    };
    publisher.run().await;
}

impl Publisher {
    async fn run(&mut self) {
        loop {
            if self.fenced {
                // Drained and dropped: the hub never waits for this.
                match self.events.as_mut() {
                    Some(events) => {
                        if events.recv().await.is_none() {
                            return;
                        }
                    }
                    None => return,
                }
                continue;
            }
            if self.synced.is_none() && Instant::now() >= self.retry_at {
                self.sync().await;
            }
            self.send().await;
            self.metrics.buffered(self.buffer.len());
            if self.events.is_none() && self.buffer.is_empty() {
                return;
            }
            let waiting = self.synced.is_none();
            tokio::select! {
                handed = recv(&mut self.events) => match handed {
                    Some(handed) => self.take(handed),
                    None => self.events = None,
                },
                ack = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    if let Some(ack) = ack {
                        self.acknowledged(ack).await;
                    }
                }
                () = tokio::time::sleep_until(self.retry_at), if waiting => {}
            }
        }
    }

    fn take(&mut self, handed: Publish) {
        match handed {
            Publish::Event(event) => {
                self.buffer.push_back(event);
                // Beyond what is kept, the oldest unsent events go: the journal has them.
                while self.buffer.len() > self.max_buffered && self.in_flight.is_empty() {
                    if let Some(dropped) = self.buffer.pop_front() {
                        self.complete_after = self.complete_after.max(dropped.seq);
                    }
                }
            }
            Publish::Missed { through } => {
                self.complete_after = self.complete_after.max(through);
            }
        }
    }

    /// Sends what the window allows.
    async fn send(&mut self) {
        while let Some(synced) = self.synced
            && self.in_flight.len() < WINDOW
            && let Some(event) = self.buffer.get(self.in_flight.len())
        {
            let headers = layout::headers(event, &self.owner, synced.expected_last);
            let sent = self
                .js
                .publish_with_headers(self.subject.clone(), headers, layout::payload(event))
                .await;
            match sent {
                Ok(ack) => {
                    self.in_flight
                        .push_back(std::future::IntoFuture::into_future(ack));
                    self.synced = Some(Synced {
                        expected_last: synced.expected_last + 1,
                    });
                }
                Err(e) => {
                    self.lost(&format!("could not publish event {}: {e}", event.seq));
                    return;
                }
            }
        }
    }

    async fn acknowledged(
        &mut self,
        ack: Result<jetstream::publish::PublishAck, jetstream::context::PublishError>,
    ) {
        match ack {
            Ok(ack) if !ack.duplicate => {
                if let Some(event) = self.buffer.pop_front() {
                    self.metrics.published.inc();
                    tracing::trace!(table = %self.table_id, seq = event.seq, stream_seq = ack.sequence, "published");
                }
                self.published = true;
                self.retry = RETRY_FIRST;
            }
            // The stream had it (a resend after a lost acknowledgement): the sequences
            // after it are not what this publisher counted on, so read them again.
            Ok(_) => self.lost("an event was already in the stream"),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                self.lost("the stream moved on without this broadcaster");
            }
            Err(e) => self.lost(&format!("a publish was not acknowledged: {e}")),
        }
    }

    /// Something went wrong: forget what is in flight (its events stay buffered) and sync
    /// again after a wait.
    fn lost(&mut self, why: &str) {
        if self.synced.take().is_some() {
            tracing::warn!(table = %self.table_id, why, buffered = self.buffer.len(), "events: publishing paused; the table carries on");
        }
        self.in_flight = FuturesOrdered::new();
        self.retry_at = Instant::now() + self.retry;
        self.retry = (self.retry * 2).min(RETRY_MAX);
    }

    /// Reads where the stream stands and lines the buffer up after it.
    async fn sync(&mut self) {
        match self.try_sync().await {
            Ok(synced) => {
                tracing::info!(table = %self.table_id, expected_last = synced.expected_last, buffered = self.buffer.len(), "events: publishing to the table's stream");
                self.synced = Some(synced);
            }
            Err(e) => {
                tracing::warn!(table = %self.table_id, error = %e, "events: the table's stream cannot be read; trying again");
                self.lost("the stream cannot be read");
            }
        }
    }

    async fn try_sync(&mut self) -> Result<Synced, SyncError> {
        let server = |e: &dyn std::fmt::Display| SyncError::Server(e.to_string());
        let stream = self
            .js
            .get_or_create_stream(layout::stream_config(&self.table_id, self.max_events))
            .await
            .map_err(|e| server(&e))?;
        let (expected_last, last) = last_event(&stream, &self.subject).await?;
        let last_seq = last.as_ref().map_or(0, |(seq, _)| *seq);
        if let Some((seq, owner)) = &last
            && owner.as_deref() != Some(&*self.owner)
            && (self.published || self.buffer.front().is_some_and(|e| e.seq <= *seq))
        {
            self.fenced = true;
            self.metrics.fenced.set(1);
            tracing::error!(
                table = %self.table_id,
                last = seq,
                by = owner.as_deref().unwrap_or("?"),
                "events: another broadcaster publishes this table's events now; this one has stopped publishing them (restart it to take the table back)"
            );
            return Err(SyncError::Server("fenced".to_owned()));
        }
        if self.complete_after > last_seq {
            let made = remake(
                &self.journal,
                &self.table_id,
                &self.currency,
                last_seq,
                self.complete_after,
            )
            .await?;
            tracing::info!(table = %self.table_id, after = last_seq, through = self.complete_after, events = made.len(), "events: made again from the journal");
            self.metrics.remade.inc_by(made.len() as u64);
            let later: Vec<Arc<Encoded>> = self
                .buffer
                .drain(..)
                .filter(|e| e.seq > self.complete_after)
                .collect();
            self.buffer = made.into_iter().chain(later).collect();
            self.complete_after = last_seq;
        }
        while self.buffer.front().is_some_and(|e| e.seq <= last_seq) {
            self.buffer.pop_front();
        }
        self.retry = RETRY_FIRST;
        Ok(Synced { expected_last })
    }
}

async fn recv(events: &mut Option<mpsc::UnboundedReceiver<Publish>>) -> Option<Publish> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// The stream's last sequence, and its last event's seq and publisher (none: empty).
async fn last_event(
    stream: &stream::Stream,
    subject: &str,
) -> Result<(u64, Option<(u64, Option<String>)>), SyncError> {
    let info = stream
        .get_info()
        .await
        .map_err(|e| SyncError::Server(e.to_string()))?;
    if info.state.messages == 0 {
        return Ok((info.state.last_sequence, None));
    }
    let message = stream
        .get_last_raw_message_by_subject(subject)
        .await
        .map_err(|e| SyncError::Server(e.to_string()))?;
    let event = layout::event(Some(&message.headers), &message.payload)
        .map_err(|e| SyncError::Server(e.to_string()))?;
    let owner = layout::owner(Some(&message.headers)).map(str::to_owned);
    Ok((message.sequence, Some((event.seq, owner))))
}

/// The events with a seq in `(after, through]` made again from `journal`.
pub(super) async fn remake(
    journal: &ActorConfig,
    table_id: &str,
    currency: &str,
    after: u64,
    through: u64,
) -> Result<Vec<Arc<Encoded>>, SyncError> {
    let journal = journal.clone();
    // The record of `after` itself may have events after it.
    let from = record_of(after).saturating_sub(1);
    let until = record_of(through);
    let republished = tokio::task::spawn_blocking(move || {
        banco_table::actor::read_published(&journal, from, until)
    })
    .await
    .map_err(|e| SyncError::Journal(e.to_string()))?
    .map_err(|e| SyncError::Journal(e.to_string()))?;
    Ok(crate::hub::regenerate(
        &republished,
        table_id,
        currency,
        after,
        through,
    ))
}
