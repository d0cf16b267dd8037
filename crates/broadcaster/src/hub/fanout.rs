//! The subscribers of one table and the delivery of its numbered events to them: what a
//! table's hub (fed by the table actor, `task`) and a stream's hub (fed by the table's
//! event stream on an edge, `stream`) share. Owned by the hub's task alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;

use tokio::sync::mpsc;

use super::feed::{Feed, FeedSpec};
use super::queue::{self, Queue, Relay};
use super::ring::{Encoded, Ring};
use super::{AttachError, Attached, Command, DetachGuard, FanoutLimits, From, HubView, Public};
use crate::metrics::HubMetrics;

/// An event a handler asks the hub to send (a refusal no journal record carries).
pub(super) struct Injected {
    pub(super) to: Option<Arc<str>>,
    pub(super) round_id: String,
    pub(super) event: banco_wire::pb::table_event::Event,
}

struct Subscriber {
    player: Arc<str>,
    /// Events up to this seq are already in the subscriber's snapshot.
    after: u64,
    queue: Arc<Queue>,
    relay: Option<Relay>,
}

pub(super) struct Fanout {
    queue: usize,
    /// For the detach guards handed out.
    commands: mpsc::UnboundedSender<Command>,
    view: Arc<Mutex<HubView>>,
    ring: Ring,
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
    pub(super) metrics: HubMetrics,
}

impl Fanout {
    /// No subscribers yet; the ring complete above `floor`.
    pub(super) fn new(
        limits: FanoutLimits,
        floor: u64,
        view: Arc<Mutex<HubView>>,
        commands: mpsc::UnboundedSender<Command>,
        metrics: HubMetrics,
    ) -> Fanout {
        Fanout {
            queue: limits.subscriber_queue.max(1),
            commands,
            view,
            ring: Ring::new(limits.ring_events, floor),
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
            metrics,
        }
    }

    /// Keeps `event` in the ring without delivering it: an event sent before this hub
    /// started, for subscribers that resume after it.
    pub(super) fn keep(&mut self, event: Arc<Encoded>) {
        self.ring.push(event);
    }

    /// Attaches `player` from `from`; `last_seq` is the latest seq this hub has.
    pub(super) fn attach(
        &mut self,
        player: Arc<str>,
        from: From,
        relay: Option<Relay>,
        last_seq: u64,
    ) -> Result<Attached, AttachError> {
        let after = match from {
            From::Snapshot(seq) | From::Resume(seq) | From::InStream(seq) => seq,
        };
        // Beyond anything sent here: numbers of a broadcaster that ran before this one
        // (its own events after the last record); a snapshot puts the subscriber right.
        if matches!(from, From::Resume(_)) && after > last_seq {
            return Err(AttachError::Gap {
                oldest_kept: last_seq,
            });
        }
        let backlog = if after >= last_seq {
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
            start: after.max(last_seq),
            _guard: DetachGuard {
                id,
                commands: self.commands.clone(),
            },
        })
    }

    /// Does what a subscriber's `command` asks, the hub having every event up to
    /// `last_seq`; an event to inject is handed back (only a table's hub makes events).
    pub(super) fn handle(&mut self, command: Command, last_seq: u64) -> Option<Injected> {
        match command {
            Command::Attach {
                player,
                from,
                relay,
                reply,
            } => {
                let _ = reply.send(self.attach(player, from, relay, last_seq));
                None
            }
            Command::Detach { id } => {
                self.remove(id);
                None
            }
            Command::Inject {
                to,
                round_id,
                event,
            } => Some(Injected {
                to,
                round_id,
                event: *event,
            }),
        }
    }

    /// Keeps `event` and delivers it: a public one once to each connection thread, a
    /// private one to its player's subscribers.
    pub(super) fn deliver(&mut self, event: Arc<Encoded>) {
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

    pub(super) fn remove(&mut self, id: u64) {
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

    /// Lets go of every subscriber, each told `reason` after what it was already given.
    pub(super) fn cut_all(&mut self, reason: &str) {
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

    /// Forgets every event kept: the ring is complete above `floor` only.
    pub(super) fn reset(&mut self, floor: u64) {
        self.ring.reset(floor);
    }

    fn count_players(&self) {
        self.metrics.subscribers(self.subscribers.len());
        let players = u32::try_from(self.by_player.len()).unwrap_or(u32::MAX);
        self.with_view(|v| v.players = players);
    }

    pub(super) fn with_view(&self, change: impl FnOnce(&mut HubView)) {
        change(&mut self.view.lock().unwrap_or_else(PoisonError::into_inner));
    }
}
