//! The release task: answers callers, publishes events and feeds the outbox strictly in
//! journal order, each only once its record is durable.
//!
//! The actor queues one [`Release`] per request it answered (in the order it handled
//! them) and goes on; this task waits for each record's fsync in turn. Answers that need
//! no record (queries, retried requests) are released in the same order, so nobody ever
//! sees a state that a crash could still take back.

use std::ops::Range;
use std::pin::pin;
use std::sync::Arc;

use futures::FutureExt as _;
use tokio::sync::{broadcast, mpsc};

use super::failure::Failure;
use super::outbox::SealedRound;
use super::wallet::WalletWork;
use super::{ActorError, Applied, Published, Reply};
use crate::event::Event;
use crate::journal::PendingCommit;
use crate::metrics::TableMetrics;
use crate::wallet_book::PendingRequest;

/// An answer that needs nothing from the journal; called with `Err(reason)` if the journal
/// failed before it.
pub(crate) type Answer = Box<dyn FnOnce(Result<(), String>) + Send>;

pub(crate) struct Record {
    pub(crate) pending: PendingCommit,
    /// The seq the actor expects the journal to give this record.
    pub(crate) seq: u64,
    pub(crate) applied: Applied,
    pub(crate) sealed: Vec<SealedRound>,
    /// Who waits for this record: none for the actor's own commands (ticks), the players
    /// whose bet request it decides (a first request and its retries).
    pub(crate) replies: Vec<Waiter>,
}

/// One caller waiting for a record's answer.
pub(crate) struct Waiter {
    pub(crate) reply: Reply<Applied>,
    /// The events of the record that are this caller's answer (in a record of the wallet's
    /// answers to many players' requests, the ones of its own request); `None`: all.
    pub(crate) events: Option<Range<usize>>,
}

impl Waiter {
    /// Told every event of the record.
    pub(crate) fn of_all(reply: Reply<Applied>) -> Waiter {
        Waiter {
            reply,
            events: None,
        }
    }

    fn answer(self, applied: &Applied) {
        let events = match self.events {
            None => applied.events.clone(),
            Some(range) => applied.events.get(range).unwrap_or_default().to_vec(),
        };
        let applied = Applied {
            seq: applied.seq,
            events,
            snapshot: applied.snapshot.clone(),
            replayed: applied.replayed,
        };
        // A caller that went away is no error: its record stands.
        let _ = self.reply.send(Ok(applied));
    }

    pub(crate) fn fail(self, error: ActorError) {
        let _ = self.reply.send(Err(error));
    }
}

pub(crate) enum Release {
    Record(Box<Record>),
    Answer(Answer),
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Release::Record(record) => write!(f, "Release::Record({})", record.seq),
            Release::Answer(_) => f.write_str("Release::Answer"),
        }
    }
}

pub(crate) async fn run(
    mut queue: mpsc::Receiver<Release>,
    published: broadcast::Sender<Arc<Published>>,
    outbox: mpsc::UnboundedSender<SealedRound>,
    wallet: mpsc::UnboundedSender<WalletWork>,
    failed: Arc<Failure>,
    metrics: TableMetrics,
) {
    // The bet requests of the records released since the last wait: they go to the wallet
    // together, in one exchange, before this task waits for anything (the next record's
    // fsync, the next record), so a group commit's requests are debited together.
    let mut debits: Vec<PendingRequest> = Vec::new();
    let flush = |debits: &mut Vec<PendingRequest>| {
        if !debits.is_empty() {
            let _ = wallet.send(WalletWork::Debits(std::mem::take(debits)));
        }
    };
    loop {
        let item = match queue.try_recv() {
            Ok(item) => item,
            Err(mpsc::error::TryRecvError::Empty) => {
                flush(&mut debits);
                match queue.recv().await {
                    Some(item) => item,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        match item {
            Release::Answer(answer) => answer(match failed.get() {
                Some(reason) => Err(reason),
                None => Ok(()),
            }),
            Release::Record(record) => {
                let Record {
                    pending,
                    seq,
                    applied,
                    sealed,
                    replies,
                } = *record;
                // Once a record failed, the ones queued after it are refused too (the failed
                // journal writes none of them): the actor rebuilds the table from what is on
                // disk before it takes anything else.
                let durable = match failed.get() {
                    Some(reason) => Err(reason),
                    None => {
                        let mut durable = pin!(pending.durable());
                        let got = match durable.as_mut().now_or_never() {
                            Some(got) => got,
                            None => {
                                flush(&mut debits);
                                durable.await
                            }
                        };
                        match got {
                            Ok(got) if got == seq => Ok(()),
                            Ok(got) => {
                                Err(format!("numbered a record {got}, the actor expected {seq}"))
                            }
                            Err(e) => Err(e.reason()),
                        }
                    }
                };
                match durable {
                    Ok(()) => {
                        for waiter in replies {
                            waiter.answer(&applied);
                        }
                        // What the record asks of the wallet goes out only now it is durable.
                        for event in &applied.events {
                            match event {
                                Event::BetsPending { request } => debits.push(request.clone()),
                                Event::WalletOwed { owed } => {
                                    for owed in owed {
                                        let _ = wallet.send(WalletWork::Owed(owed.clone()));
                                    }
                                }
                                _ => {}
                            }
                        }
                        // No subscriber is not an error.
                        let _ = published.send(Arc::new(Published {
                            seq,
                            events: applied.events,
                            snapshot: applied.snapshot,
                        }));
                        for round in sealed {
                            let winner = match (&round.round.void, &round.round.result) {
                                (None, Some(result)) => Some(result.winner()),
                                _ => None,
                            };
                            metrics.round_finished(winner);
                            // The outbox ends only at shutdown, after this task.
                            let _ = outbox.send(round);
                        }
                    }
                    Err(reason) => {
                        if failed.set(reason.clone()) {
                            tracing::error!(seq, %reason, "journal failed: commands are refused until it is reopened");
                        }
                        let reason = failed.get().unwrap_or(reason);
                        for waiter in replies {
                            waiter.fail(ActorError::JournalFailed(reason.clone()));
                        }
                    }
                }
            }
        }
    }
    flush(&mut debits);
}
