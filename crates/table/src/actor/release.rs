//! The release task: answers callers, publishes events and feeds the outbox strictly in
//! journal order, each only once its record is durable.
//!
//! The actor queues one [`Release`] per request it answered (in the order it handled
//! them) and goes on; this task waits for each record's fsync in turn. Answers that need
//! no record (queries, retried requests) are released in the same order, so nobody ever
//! sees a state that a crash could still take back.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::failure::Failure;
use super::outbox::SealedRound;
use super::wallet::WalletWork;
use super::{ActorError, Applied, Published, Reply};
use crate::event::Event;
use crate::journal::PendingCommit;
use crate::metrics::TableMetrics;

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
    pub(crate) replies: Vec<Reply<Applied>>,
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
    while let Some(item) = queue.recv().await {
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
                    None => match pending.durable().await {
                        Ok(got) if got == seq => Ok(()),
                        Ok(got) => {
                            Err(format!("numbered a record {got}, the actor expected {seq}"))
                        }
                        Err(e) => Err(e.reason()),
                    },
                };
                match durable {
                    Ok(()) => {
                        for reply in replies {
                            let _ = reply.send(Ok(applied.clone()));
                        }
                        // What the record asks of the wallet goes out only now it is durable.
                        for event in &applied.events {
                            match event {
                                Event::BetsPending { request } => {
                                    let _ = wallet.send(WalletWork::Debits(request.clone()));
                                }
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
                        for reply in replies {
                            let _ = reply.send(Err(ActorError::JournalFailed(reason.clone())));
                        }
                    }
                }
            }
        }
    }
}
