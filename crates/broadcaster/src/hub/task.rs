//! The hub's task: the only owner of the ring and the subscribers of one table.

use crate::metrics::HubMetrics;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;
use std::time::Duration;

use banco_rules::Scoreboard;
use banco_table::actor::{ActorError, Published, TableHandle};
use banco_table::{Event, Phase, TableSnapshot};
use banco_wire::pb;
use banco_wire::pb::table_event::Event as Wire;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::feed::{Feed, FeedSpec};
use super::queue::{self, Queue, Relay};
use super::ring::{Encoded, INDEX_HALF, INDEX_MAX, Ring, through, wire_seq};
use super::translate::{Outgoing, translate};
use super::{
    AttachError, Attached, CHAT_SHOWN, Command, DetachGuard, FanoutLimits, From, HubView,
    LAST_BETS_BEFORE, Public, TOTALS_EVERY, encode,
};
use crate::wire;

struct Subscriber {
    player: Arc<str>,
    /// Events up to this seq are already in the subscriber's snapshot.
    after: u64,
    queue: Arc<Queue>,
    relay: Option<Relay>,
}

/// A pending LastBets warning.
struct LastBets {
    at: Instant,
    round_id: String,
    closes_at: u64,
}

pub(super) struct HubTask {
    handle: TableHandle,
    table_id: Arc<str>,
    currency: String,
    queue: usize,
    published: broadcast::Receiver<Arc<Published>>,
    inbox: mpsc::UnboundedReceiver<Command>,
    /// For the detach guards handed out.
    commands: mpsc::UnboundedSender<Command>,
    view: Arc<Mutex<HubView>>,
    ring: Ring,
    /// The latest journal record handled, and the index of the next event after it.
    journal: u64,
    next_index: u64,
    /// The table as the latest record left it.
    table: TableSnapshot,
    board: Scoreboard,
    subscribers: HashMap<u64, Subscriber>,
    by_player: HashMap<Arc<str>, Vec<u64>>,
    next_id: u64,
    /// What the feeds of this table are made with.
    spec: Arc<FeedSpec>,
    /// The connection threads that serve (or served) a subscriber of this table: each is
    /// handed every public event for its feed.
    relays: Vec<Relay>,
    /// The feed of subscribers served outside the connection threads, if any came.
    direct: Option<Arc<Feed>>,
    /// Totals changed since the last BetTotals sent, and when one may be sent next.
    totals_dirty: bool,
    totals_next: Instant,
    last_bets: Option<LastBets>,
    metrics: HubMetrics,
}

impl HubTask {
    pub(super) async fn start(
        handle: TableHandle,
        currency: String,
        limits: FanoutLimits,
        view: Arc<Mutex<HubView>>,
        inbox: mpsc::UnboundedReceiver<Command>,
        commands: mpsc::UnboundedSender<Command>,
        metrics: HubMetrics,
    ) -> Result<HubTask, ActorError> {
        // Subscribe before reading the table, so that nothing falls between the two.
        let published = handle.subscribe();
        let joined = handle.join("").await?;
        let table_id: Arc<str> = Arc::from(handle.table_id());
        let mut task = HubTask {
            handle,
            table_id,
            currency,
            queue: limits.subscriber_queue.max(1),
            published,
            inbox,
            commands,
            view,
            ring: Ring::new(limits.ring_events, through(joined.seq)),
            journal: joined.seq,
            next_index: INDEX_HALF + 1,
            table: joined.table,
            board: joined.scoreboard,
            subscribers: HashMap::new(),
            by_player: HashMap::new(),
            next_id: 0,
            spec: Arc::new(FeedSpec::new(
                limits.subscriber_queue,
                metrics.cut_off.clone(),
                metrics.lag.clone(),
            )),
            relays: Vec::new(),
            direct: None,
            totals_dirty: false,
            totals_next: Instant::now(),
            last_bets: None,
            metrics,
        };
        task.set_seats(&joined.seats);
        task.schedule_last_bets();
        Ok(task)
    }

    pub(super) async fn run(mut self) {
        loop {
            let timer = self.next_timer();
            tokio::select! {
                biased;
                published = self.published.recv() => match published {
                    Ok(published) => self.on_published(&published),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(table = %self.table_id, missed, "the hub fell behind its table: every subscriber resumes from a snapshot");
                        if self.resync().await.is_err() {
                            break;
                        }
                    }
                    Err(RecvError::Closed) => break,
                },
                command = self.inbox.recv() => match command {
                    Some(command) => self.on_command(command),
                    None => break,
                },
                () = sleep_until(timer) => self.on_timer(),
            }
        }
        self.cut_all("the table stopped");
    }

    fn next_timer(&self) -> Option<Instant> {
        let totals = self.totals_dirty.then_some(self.totals_next);
        let last_bets = self.last_bets.as_ref().map(|l| l.at);
        match (totals, last_bets) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_published(&mut self, published: &Published) {
        if published.seq <= self.journal {
            return;
        }
        let outgoing = translate(
            &published.events,
            &self.table,
            &published.snapshot,
            &mut self.board,
            &self.currency,
        );
        self.journal = published.seq;
        self.next_index = 0;
        self.table = published.snapshot.clone();
        for event in &published.events {
            self.note(event);
        }
        for out in outgoing {
            self.emit(out);
        }
        self.next_index = INDEX_HALF + 1;
        if published
            .events
            .iter()
            .any(|e| matches!(e, Event::BetTotals { .. }))
        {
            self.totals_dirty = true;
        }
        if self.totals_dirty && Instant::now() >= self.totals_next {
            self.send_totals();
        }
    }

    /// Keeps the view, the timers and the totals in step with the table.
    fn note(&mut self, event: &Event) {
        match event {
            Event::BettingOpened { .. } => self.schedule_last_bets(),
            Event::BettingClosed { .. } | Event::RoundVoided { .. } => {
                self.last_bets = None;
                // BettingClosed carries the final totals.
                self.totals_dirty = false;
            }
            Event::SeatTaken { player, seat } => self.with_view(|v| {
                let i = usize::from(*seat).saturating_sub(1);
                if v.seats.len() <= i {
                    v.seats.resize(i + 1, String::new());
                }
                v.seats[i].clone_from(player);
            }),
            Event::SeatLeft { seat, .. } => self.with_view(|v| {
                if let Some(s) = v.seats.get_mut(usize::from(*seat).saturating_sub(1)) {
                    s.clear();
                }
            }),
            Event::Chat { player, text, at } => self.with_view(|v| {
                if v.chat.len() == CHAT_SHOWN {
                    v.chat.pop_front();
                }
                v.chat.push_back(pb::ChatLine {
                    at: Some(wire::timestamp(*at)),
                    player: player.clone(),
                    text: text.clone(),
                });
            }),
            _ => {}
        }
    }

    fn schedule_last_bets(&mut self) {
        self.last_bets = match (self.table.phase, &self.table.round_id) {
            (
                Phase::BettingOpen {
                    closes_at: Some(closes_at),
                    ..
                },
                Some(round_id),
            ) => {
                let warn_at = closes_at.saturating_sub(millis(LAST_BETS_BEFORE));
                let wait = warn_at.saturating_sub(crate::wire::unix_ms());
                Some(LastBets {
                    at: Instant::now() + Duration::from_millis(wait),
                    round_id: round_id.to_string(),
                    closes_at,
                })
            }
            _ => None,
        };
    }

    fn on_timer(&mut self) {
        let now = Instant::now();
        if self.last_bets.as_ref().is_some_and(|l| l.at <= now)
            && let Some(warning) = self.last_bets.take()
        {
            let remaining = warning.closes_at.saturating_sub(crate::wire::unix_ms());
            self.emit(Outgoing {
                to: None,
                round_id: warning.round_id,
                event: Wire::LastBets(pb::LastBets {
                    closes_at: Some(wire::timestamp(warning.closes_at)),
                    remaining_ms: u32::try_from(remaining).unwrap_or(u32::MAX),
                }),
            });
        }
        if self.totals_dirty && self.totals_next <= now {
            self.send_totals();
        }
    }

    fn send_totals(&mut self) {
        self.totals_dirty = false;
        self.totals_next = Instant::now() + TOTALS_EVERY;
        let round_id = self
            .table
            .round_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let totals = wire::position_totals_to_pb(&self.table.bet_totals);
        self.emit(Outgoing {
            to: None,
            round_id,
            event: Wire::BetTotals(pb::BetTotals { bet_totals: totals }),
        });
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Attach {
                player,
                from,
                relay,
                reply,
            } => {
                let _ = reply.send(self.attach(player, from, relay));
            }
            Command::Detach { id } => self.remove(id),
            Command::Inject {
                to,
                round_id,
                event,
            } => self.emit(Outgoing {
                to,
                round_id,
                event: *event,
            }),
        }
    }

    /// The latest seq given to an event, or `through` the latest record when none was
    /// made after it.
    fn last_seq(&self) -> u64 {
        if self.next_index > INDEX_HALF + 1 {
            wire_seq(self.journal, self.next_index - 1)
        } else {
            through(self.journal)
        }
    }

    fn attach(
        &mut self,
        player: Arc<str>,
        from: From,
        relay: Option<Relay>,
    ) -> Result<Attached, AttachError> {
        let after = match from {
            From::Snapshot(seq) | From::Resume(seq) => seq,
        };
        // Beyond anything sent here: numbers of a broadcaster that ran before this one
        // (its own events after the last record); a snapshot puts the subscriber right.
        if matches!(from, From::Resume(_)) && after > self.last_seq() {
            return Err(AttachError::Gap {
                oldest_kept: self.last_seq(),
            });
        }
        let backlog = if after >= self.last_seq() {
            Vec::new()
        } else {
            self.ring
                .since(after, &player)
                .map_err(|old| AttachError::Gap {
                    oldest_kept: old.oldest_kept,
                })?
        };
        // The backlog is already in the ring: the queue holds it on top of the usual room,
        // so a subscriber catching up is not cut off for what it missed.
        let queue = Arc::new(Queue::new(self.queue + backlog.len(), backlog));
        let public = match &relay {
            Some(relay) => {
                if !self.relays.iter().any(|r| r.same(relay)) {
                    self.relays.push(relay.clone());
                }
                Public::Relayed(Arc::clone(&self.spec))
            }
            None => Public::Direct(Arc::clone(
                self.direct
                    .get_or_insert_with(|| Arc::new(Feed::new(Arc::clone(&self.spec)))),
            )),
        };
        let id = self.next_id;
        self.next_id += 1;
        self.by_player
            .entry(Arc::clone(&player))
            .or_default()
            .push(id);
        self.subscribers.insert(
            id,
            Subscriber {
                player,
                after,
                queue: Arc::clone(&queue),
                relay,
            },
        );
        self.count_players();
        Ok(Attached {
            queue,
            public,
            // The backlog (or the snapshot) has every event up to here; the feed the rest.
            start: after.max(self.last_seq()),
            _guard: DetachGuard {
                id,
                commands: self.commands.clone(),
            },
        })
    }

    /// Numbers, encodes, keeps and delivers one event.
    fn emit(&mut self, out: Outgoing) {
        let limit = if self.next_index < INDEX_HALF {
            INDEX_HALF
        } else {
            INDEX_MAX + 1
        };
        if self.next_index >= limit {
            tracing::error!(table = %self.table_id, journal = self.journal, "an event was dropped: no seq left after this journal record");
            return;
        }
        let seq = wire_seq(self.journal, self.next_index);
        self.next_index += 1;
        let bytes = encode(seq, &self.table_id, &out.round_id, out.event);
        let event = Arc::new(Encoded {
            seq,
            to: out.to,
            bytes,
        });
        self.ring.push(Arc::clone(&event));
        let Some(player) = &event.to else {
            // Once to each connection thread, which every subscriber there reads.
            for relay in &self.relays {
                relay.publish(&self.spec, &event);
            }
            if let Some(direct) = &self.direct {
                queue::wake_now(direct.append(&event));
            }
            return;
        };
        let mut full = Vec::new();
        for &id in self.by_player.get(player).map_or(&[][..], Vec::as_slice) {
            if let Some(sub) = self.subscribers.get(&id) {
                if event.seq <= sub.after {
                    continue;
                }
                match &sub.relay {
                    // Queued on the subscriber's thread, in order with the public events.
                    Some(relay) => relay.own(&self.spec, &sub.queue, &event),
                    None => match sub.queue.offer(Arc::clone(&event), &self.metrics.cut_off) {
                        Ok(queued) => queued.waker.into_iter().for_each(Waker::wake),
                        Err(_) => full.push(id),
                    },
                }
            }
        }
        // Cut off by its queue: let go of it at once.
        for id in full {
            self.remove(id);
        }
    }

    fn remove(&mut self, id: u64) {
        let Some(sub) = self.subscribers.remove(&id) else {
            return;
        };
        if let Some(ids) = self.by_player.get_mut(&sub.player) {
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                self.by_player.remove(&sub.player);
            }
        }
        self.count_players();
    }

    fn cut_all(&mut self, reason: &str) {
        for sub in self.subscribers.values() {
            match &sub.relay {
                Some(relay) => relay.cut(&self.spec, &sub.queue, reason.to_owned()),
                None => sub.queue.cut(reason.to_owned()),
            }
        }
        self.subscribers.clear();
        self.by_player.clear();
        self.count_players();
    }

    /// After missing published records: start again from the table as it is now. Every
    /// subscriber is cut off; their resume points fall before the new floor, so each gets
    /// a snapshot on its return.
    async fn resync(&mut self) -> Result<(), ActorError> {
        self.published = self.handle.subscribe();
        let joined = self.handle.join("").await?;
        self.cut_all("the broadcaster fell behind the table: resume to get a fresh snapshot");
        self.ring.reset(through(joined.seq));
        self.journal = joined.seq;
        self.next_index = INDEX_HALF + 1;
        self.table = joined.table;
        self.board = joined.scoreboard;
        self.set_seats(&joined.seats);
        self.schedule_last_bets();
        Ok(())
    }

    fn set_seats(&self, seats: &[Option<String>]) {
        self.with_view(|v| {
            v.seats = seats
                .iter()
                .map(|s| s.clone().unwrap_or_default())
                .collect();
        });
    }

    fn count_players(&self) {
        self.metrics.subscribers(self.subscribers.len());
        let players = u32::try_from(self.by_player.len()).unwrap_or(u32::MAX);
        self.with_view(|v| v.players = players);
    }

    fn with_view(&self, change: impl FnOnce(&mut HubView)) {
        change(&mut self.view.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
