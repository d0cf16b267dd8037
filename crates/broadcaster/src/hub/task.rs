//! The hub's task: the only owner of the ring and the subscribers of one table.

use crate::metrics::HubMetrics;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banco_rules::Scoreboard;
use banco_table::actor::{ActorError, Published, TableHandle};
use banco_table::{Event, Phase, TableSnapshot};
use banco_wire::pb;
use banco_wire::pb::table_event::Event as Wire;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::fanout::Fanout;
use super::ring::{Encoded, INDEX_HALF, INDEX_MAX, index_of, record_of, through, wire_seq};
use super::translate::{Outgoing, translate_into};
use super::{
    CHAT_SHOWN, Command, FanoutLimits, HubView, LAST_BETS_BEFORE, Publish, StreamStart,
    TOTALS_EVERY, encode,
};

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
    published: broadcast::Receiver<Arc<Published>>,
    inbox: mpsc::UnboundedReceiver<Command>,
    /// The latest journal record handled, and the index of the next event after it.
    journal: u64,
    next_index: u64,
    /// The table as the latest record left it.
    table: TableSnapshot,
    board: Scoreboard,
    fanout: Fanout,
    /// Where every event numbered here goes to be published (`--events`), if anywhere.
    publish: Option<mpsc::UnboundedSender<Publish>>,
    /// Totals changed since the last BetTotals sent, and when one may be sent next.
    totals_dirty: bool,
    totals_next: Instant,
    last_bets: Option<LastBets>,
    /// The wire events of the record being handled (kept: see [`translate_into`]).
    outgoing: Vec<Outgoing>,
}

impl HubTask {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn start(
        handle: TableHandle,
        currency: String,
        limits: FanoutLimits,
        view: Arc<Mutex<HubView>>,
        inbox: mpsc::UnboundedReceiver<Command>,
        commands: mpsc::UnboundedSender<Command>,
        metrics: HubMetrics,
        streamed: Option<StreamStart>,
    ) -> Result<HubTask, ActorError> {
        // Subscribe before reading the table, so that nothing falls between the two.
        let published = handle.subscribe();
        let joined = handle.join("").await?;
        let streamed = match streamed {
            Some(start) => Some(start(through(joined.seq)).await),
            None => None,
        };
        let table_id: Arc<str> = Arc::from(handle.table_id());
        let (tail, last, publish) = match streamed {
            Some(s) => (s.tail, s.last, Some(s.publish)),
            None => (Vec::new(), 0, None),
        };
        let floor = tail
            .first()
            .map_or(through(joined.seq), |e| e.seq.saturating_sub(1));
        // The hub's own events after the latest record, sent by the broadcaster that ran
        // before this one: numbered after them, never over them.
        let next_index = if last > through(joined.seq) && record_of(last) == joined.seq {
            index_of(last) + 1
        } else {
            INDEX_HALF + 1
        };
        let mut fanout = Fanout::new(limits, floor, view, commands, metrics);
        for event in tail {
            fanout.keep(event);
        }
        let mut task = HubTask {
            handle,
            table_id,
            currency,
            published,
            inbox,
            journal: joined.seq,
            next_index,
            table: joined.table,
            board: joined.scoreboard,
            fanout,
            publish,
            totals_dirty: false,
            totals_next: Instant::now(),
            last_bets: None,
            outgoing: Vec::new(),
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
        self.fanout.cut_all("the table stopped");
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
        let mut outgoing = std::mem::take(&mut self.outgoing);
        translate_into(
            &published.events,
            &self.table,
            &published.snapshot,
            &mut self.board,
            &self.currency,
            &mut outgoing,
        );
        self.journal = published.seq;
        self.next_index = 0;
        self.table = published.snapshot.clone();
        for event in &published.events {
            self.note(event);
        }
        for out in outgoing.drain(..) {
            self.emit(out);
        }
        self.outgoing = outgoing;
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
            Event::SeatTaken { player, seat } => self.fanout.with_view(|v| {
                let i = usize::from(*seat).saturating_sub(1);
                if v.seats.len() <= i {
                    v.seats.resize(i + 1, String::new());
                }
                v.seats[i].clone_from(player);
            }),
            Event::SeatLeft { seat, .. } => self.fanout.with_view(|v| {
                if let Some(s) = v.seats.get_mut(usize::from(*seat).saturating_sub(1)) {
                    s.clear();
                }
            }),
            Event::Chat { player, text, at } => self.fanout.with_view(|v| {
                if v.chat.len() == CHAT_SHOWN {
                    v.chat.pop_front();
                }
                v.chat.push_back(pb::ChatLine {
                    at: Some(banco_wire::convert::timestamp_of_ms(*at)),
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
                    closes_at: Some(banco_wire::convert::timestamp_of_ms(warning.closes_at)),
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
        let totals = banco_table::convert::position_totals(&self.table.bet_totals);
        self.emit(Outgoing {
            to: None,
            round_id,
            event: Wire::BetTotals(pb::BetTotals { bet_totals: totals }),
        });
    }

    fn on_command(&mut self, command: Command) {
        let last = self.last_seq();
        if let Some(injected) = self.fanout.handle(command, last) {
            self.emit(Outgoing {
                to: injected.to,
                round_id: injected.round_id,
                event: injected.event,
            });
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
        if let Some(publish) = &self.publish {
            // The publisher keeps its own bounded buffer; it lives as long as the hub.
            let _ = publish.send(Publish::Event(Arc::clone(&event)));
        }
        self.fanout.deliver(event);
    }

    /// After missing published records: start again from the table as it is now. Every
    /// subscriber is cut off; their resume points fall before the new floor, so each gets
    /// a snapshot on its return.
    async fn resync(&mut self) -> Result<(), ActorError> {
        self.published = self.handle.subscribe();
        let joined = self.handle.join("").await?;
        self.fanout
            .cut_all("the broadcaster fell behind the table: resume to get a fresh snapshot");
        self.fanout.reset(through(joined.seq));
        if let Some(publish) = &self.publish {
            // The records it missed are in the journal, where the publisher reads them.
            let _ = publish.send(Publish::Missed {
                through: through(joined.seq),
            });
        }
        self.journal = joined.seq;
        self.next_index = INDEX_HALF + 1;
        self.table = joined.table;
        self.board = joined.scoreboard;
        self.set_seats(&joined.seats);
        self.schedule_last_bets();
        Ok(())
    }

    fn set_seats(&self, seats: &[Option<String>]) {
        self.fanout.with_view(|v| {
            v.seats = seats
                .iter()
                .map(|s| s.clone().unwrap_or_default())
                .collect();
        });
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
