//! Group commit of appends, as the table's journal does it: one committer task per open
//! store takes every round waiting in its queue (up to [`MAX_BATCH`]), checks each in
//! arrival order and writes them all in ONE transaction ([`super::append::write_batch`]),
//! then answers each caller. Rounds that arrive while a transaction commits wait for the
//! next one, so under load a single fsync serves many rounds; alone, a round is committed
//! at once. A table's outbox sends one round at a time and waits for its answer, so a
//! table's rounds reach the queue in chain order.
//!
//! A refused round (gap, conflict) or a duplicate changes nothing and does not affect the
//! others of its batch: they are decided before anything is inserted. If the database
//! fails the batch, nothing of it was committed, and each round is tried again in a
//! transaction of its own so that each caller gets its own answer.

use tokio::sync::{mpsc, oneshot};

use super::Db;
use super::append::{Appended, OwnedRound, write_batch};
use super::known::Known;
use crate::error::ArchiveError;

/// Rounds written in one transaction at most.
pub(crate) const MAX_BATCH: usize = 2000;

type Reply = oneshot::Sender<Result<Appended, ArchiveError>>;

/// The queue of a store's committer.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    queue: mpsc::UnboundedSender<(OwnedRound, Reply)>,
}

impl GroupCommit {
    /// Starts the committer of `db` (on the current Tokio runtime). It stops when every
    /// clone of the store is gone.
    pub(crate) fn start(db: Db) -> GroupCommit {
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(db, rx));
        GroupCommit { queue }
    }

    /// Queues `round` and waits for the commit of its batch.
    pub(crate) async fn submit(&self, round: OwnedRound) -> Result<Appended, ArchiveError> {
        // The committer stops only with the runtime or the pool: the store is closed.
        let stopped = || ArchiveError::Database(sqlx::Error::PoolClosed);
        let (reply, answer) = oneshot::channel();
        self.queue.send((round, reply)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(db: Db, mut rx: mpsc::UnboundedReceiver<(OwnedRound, Reply)>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut known = Known::default();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit(&db, &mut known, std::mem::take(&mut batch)).await;
    }
}

async fn commit(db: &Db, known: &mut Known, batch: Vec<(OwnedRound, Reply)>) {
    let rounds: Vec<&OwnedRound> = batch.iter().map(|(r, _)| r).collect();
    let written = write_batch(db, known, &rounds).await;
    if written.is_err() {
        known.forget();
    }
    match written {
        Ok(answers) => {
            drop(rounds);
            for ((_, reply), answer) in batch.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Err(e) if batch.len() == 1 => {
            drop(rounds);
            if let Some((_, reply)) = batch.into_iter().next() {
                let _ = reply.send(Err(e));
            }
        }
        Err(_) => {
            drop(rounds);
            for (round, reply) in batch {
                let written = write_batch(db, known, &[&round]).await;
                if written.is_err() {
                    known.forget();
                }
                let answer = written.and_then(|mut a| {
                    a.pop().ok_or_else(|| {
                        ArchiveError::Corrupt(format!(
                            "round {}: the append gave no answer",
                            round.row.round_id
                        ))
                    })
                });
                let _ = reply.send(answer);
            }
        }
    }
}
