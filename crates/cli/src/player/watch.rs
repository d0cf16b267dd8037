//! The resuming subscription: subscribe, read events, and when the stream breaks or the
//! server cuts us off, subscribe again from the last `seq` shown, so that no event is lost
//! and none is shown twice. `SeqGuard` (pure) decides what to show; `Feed` does the I/O.

use std::time::Duration;

use banco_wire::pb;
use banco_wire::pb::table_event::Event;

use super::connect::{Client, is_permanent, status_error};

/// What to do with one event received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// New: show it (its seq is now the resume point).
    Show,
    /// Seen already, or older than what was shown: never shown twice.
    Drop,
    /// The missed events are gone; show the gap, then the snapshot that follows.
    Gap,
    /// The server ends the stream; subscribe again from this seq.
    CutOff { resume_from: u64 },
}

/// The exactly-once guard of one subscriber: remembers the last seq shown.
#[derive(Debug, Clone, Default)]
pub(crate) struct SeqGuard {
    last: u64,
    /// A Snapshot is due first (a new subscription, or after a ResumeGap): it may carry
    /// the seq of the last event it sums up, which can equal the last one shown.
    snapshot_due: bool,
}

impl SeqGuard {
    pub(crate) fn new() -> SeqGuard {
        SeqGuard::default()
    }

    /// The seq to subscribe with: 0 (a fresh snapshot) before anything was shown.
    pub(crate) const fn resume_point(&self) -> u64 {
        self.last
    }

    /// A new stream is about to start.
    pub(crate) fn on_subscribe(&mut self) {
        self.snapshot_due = self.last == 0;
    }

    pub(crate) fn admit(&mut self, event: &pb::TableEvent) -> Verdict {
        match &event.event {
            Some(Event::ResumeGap(_)) => {
                self.snapshot_due = true;
                Verdict::Gap
            }
            Some(Event::CutOff(c)) => Verdict::CutOff {
                // Resume from what was shown; when nothing was, from the server's point.
                resume_from: if self.last == 0 {
                    c.resume_from_seq
                } else {
                    self.last
                },
            },
            Some(Event::Snapshot(_)) if self.snapshot_due && event.seq >= self.last => {
                self.snapshot_due = false;
                self.last = event.seq;
                Verdict::Show
            }
            _ if event.seq > self.last => {
                self.snapshot_due = false;
                self.last = event.seq;
                Verdict::Show
            }
            _ => Verdict::Drop,
        }
    }

    /// After a CutOff whose point is ahead of anything shown (nothing shown yet).
    pub(crate) fn resume_from(&mut self, seq: u64) {
        self.last = self.last.max(seq);
    }
}

/// Reconnection delays: 0.2 s, doubling, at most 5 s; back to 0.2 s once events flow.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(200);
    const MAX: Duration = Duration::from_secs(5);

    pub(crate) const fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// The delay before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    pub(crate) const fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// What a `Feed` hands its reader.
#[derive(Debug, Clone)]
pub enum Item {
    /// A new event (not a stream-control one), in seq order.
    Event(Box<pb::TableEvent>),
    /// The events missed are gone; a Snapshot follows.
    Gap(Box<pb::TableEvent>),
    /// The server cut this subscriber off; it is subscribing again.
    CutOff(Box<pb::TableEvent>),
    /// The stream broke; another attempt follows after `retry_in`.
    Lost { error: String, retry_in: Duration },
}

/// A subscription to one table that resumes by itself.
#[derive(Debug)]
pub struct Feed {
    client: Client,
    table: String,
    guard: SeqGuard,
    backoff: Backoff,
    /// Stop at the first broken stream instead of resubscribing.
    once: bool,
    stream: Option<tonic::Streaming<pb::TableEvent>>,
    wait: Option<Duration>,
}

impl Feed {
    pub fn new(client: Client, table: &str, once: bool) -> Feed {
        Feed {
            client,
            table: table.to_owned(),
            guard: SeqGuard::new(),
            backoff: Backoff::new(),
            once,
            stream: None,
            wait: None,
        }
    }

    /// The next item; an error only for what retrying cannot cure (or any break with
    /// `once`).
    pub async fn next(&mut self) -> anyhow::Result<Item> {
        loop {
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            let Some(stream) = self.stream.as_mut() else {
                self.guard.on_subscribe();
                let request = pb::SubscribeRequest {
                    table_id: self.table.clone(),
                    resume_from_seq: self.guard.resume_point(),
                };
                match self.client.subscribe(request).await {
                    Ok(response) => self.stream = Some(response.into_inner()),
                    Err(status) => {
                        if let Some(lost) = self.lost(&status)? {
                            return Ok(lost);
                        }
                    }
                }
                continue;
            };
            match stream.message().await {
                Ok(Some(event)) => match self.guard.admit(&event) {
                    Verdict::Show => {
                        self.backoff.reset();
                        return Ok(Item::Event(Box::new(event)));
                    }
                    Verdict::Drop => {}
                    Verdict::Gap => return Ok(Item::Gap(Box::new(event))),
                    Verdict::CutOff { resume_from } => {
                        self.guard.resume_from(resume_from);
                        self.stream = None;
                        if self.once {
                            anyhow::bail!(
                                "cut off by the server; resume with seq {resume_from} (--once)"
                            );
                        }
                        return Ok(Item::CutOff(Box::new(event)));
                    }
                },
                Ok(None) => {
                    self.stream = None;
                    let status = tonic::Status::unavailable("the server ended the stream");
                    if let Some(lost) = self.lost(&status)? {
                        return Ok(lost);
                    }
                }
                Err(status) => {
                    self.stream = None;
                    if let Some(lost) = self.lost(&status)? {
                        return Ok(lost);
                    }
                }
            }
        }
    }

    /// A failed call or a broken stream: an error if it is final, else the notice to show
    /// before waiting.
    fn lost(&mut self, status: &tonic::Status) -> anyhow::Result<Option<Item>> {
        if status.code() == tonic::Code::Unimplemented {
            return Err(status_error(status).context(format!(
                "this broadcaster does not serve Subscribe for table {}",
                self.table
            )));
        }
        if is_permanent(status.code()) || self.once {
            return Err(status_error(status).context(format!("Subscribe to table {}", self.table)));
        }
        let retry_in = self.backoff.next_delay();
        self.wait = Some(retry_in);
        Ok(Some(Item::Lost {
            error: status_error(status).to_string(),
            retry_in,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, event: Event) -> pb::TableEvent {
        pb::TableEvent {
            seq,
            table_id: "T01".to_owned(),
            event: Some(event),
            ..pb::TableEvent::default()
        }
    }

    fn snap(seq: u64) -> pb::TableEvent {
        ev(seq, Event::Snapshot(pb::Snapshot::default()))
    }

    fn card(seq: u64) -> pb::TableEvent {
        ev(seq, Event::CardDealt(pb::CardDealt::default()))
    }

    /// Feeds events through a guard, returning the seqs shown and the other verdicts.
    fn run(guard: &mut SeqGuard, events: &[pb::TableEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match guard.admit(e) {
                Verdict::Show => format!("show {}", e.seq),
                Verdict::Drop => format!("drop {}", e.seq),
                Verdict::Gap => "gap".to_owned(),
                Verdict::CutOff { resume_from } => format!("cutoff {resume_from}"),
            })
            .collect()
    }

    #[test]
    fn fresh_subscription_then_live_events() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        assert_eq!(guard.resume_point(), 0);
        let seen = run(&mut guard, &[snap(10), card(11), card(13), card(20)]);
        assert_eq!(seen, ["show 10", "show 11", "show 13", "show 20"]);
        assert_eq!(guard.resume_point(), 20);
    }

    #[test]
    fn a_snapshot_of_an_empty_table_has_seq_zero() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        assert_eq!(run(&mut guard, &[snap(0), card(1)]), ["show 0", "show 1"]);
    }

    #[test]
    fn duplicates_and_out_of_order_are_never_shown() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        let seen = run(
            &mut guard,
            &[
                snap(5),
                card(6),
                card(6),
                card(5),
                card(8),
                card(7),
                card(9),
            ],
        );
        assert_eq!(
            seen,
            [
                "show 5", "show 6", "drop 6", "drop 5", "show 8", "drop 7", "show 9"
            ]
        );
    }

    #[test]
    fn a_resumed_stream_that_repeats_events_shows_only_new_ones() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        run(&mut guard, &[snap(5), card(6), card(7)]);
        // Reconnect: resume from 7; a server replaying 6 and 7 again is ignored, and a
        // stray snapshot that is not due (no gap) is not shown unless it is newer.
        guard.on_subscribe();
        assert_eq!(guard.resume_point(), 7);
        let seen = run(&mut guard, &[card(6), card(7), snap(7), card(8)]);
        assert_eq!(seen, ["drop 6", "drop 7", "drop 7", "show 8"]);
    }

    #[test]
    fn resume_gap_then_snapshot() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        run(&mut guard, &[snap(5), card(6)]);
        guard.on_subscribe();
        let gap = ev(
            0,
            Event::ResumeGap(pb::ResumeGap {
                requested_seq: 6,
                oldest_kept_seq: 500,
            }),
        );
        let seen = run(&mut guard, &[gap, snap(900), card(901), card(900)]);
        assert_eq!(seen, ["gap", "show 900", "show 901", "drop 900"]);
        assert_eq!(guard.resume_point(), 901);
    }

    #[test]
    fn cut_off_resumes_from_the_last_shown() {
        let mut guard = SeqGuard::new();
        guard.on_subscribe();
        run(&mut guard, &[snap(5), card(6)]);
        let cut = |resume| {
            ev(
                0,
                Event::CutOff(pb::CutOff {
                    resume_from_seq: resume,
                    reason: "lagging".to_owned(),
                }),
            )
        };
        assert_eq!(run(&mut guard, &[cut(6)]), ["cutoff 6"]);
        assert_eq!(guard.resume_point(), 6);
        // Nothing shown yet: the server's point is the only one.
        let mut fresh = SeqGuard::new();
        fresh.on_subscribe();
        assert_eq!(run(&mut fresh, &[cut(42)]), ["cutoff 42"]);
        fresh.resume_from(42);
        assert_eq!(fresh.resume_point(), 42);
    }

    #[test]
    fn backoff_doubles_to_five_seconds_and_resets() {
        let mut b = Backoff::new();
        let delays: Vec<u64> = (0..8).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(200));
    }
}
