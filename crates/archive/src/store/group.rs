//! Group commit of appends, as the table's journal does it: one committer task per open
//! store takes the requests waiting in its queue (up to [`MAX_REQUESTS`] and about
//! [`ROUNDS_PER_COMMIT`] rounds, each request of one round or of a batch), checks each round in arrival order and writes them all in ONE
//! transaction ([`super::append::write_batch`]), then answers each caller. Requests that
//! arrive while a transaction commits wait for the next one, so under load a single fsync
//! serves many rounds; alone, a request is committed at once. A table's outbox waits for
//! each answer before it sends more, so a table's rounds reach the queue in chain order.
//!
//! A refused round (gap, conflict) or a duplicate changes nothing and does not affect the
//! others: they are decided before anything is inserted. If the database fails the
//! transaction, nothing of it was committed, and each request is tried again in a
//! transaction of its own so that each caller gets its own answer.

use tokio::sync::{mpsc, oneshot};

use super::Db;
use super::append::{Appended, OwnedRound, write_batch};
use super::known::Known;
use crate::error::ArchiveError;

/// Requests taken into one transaction at most (each of one round, or of a batch of up
/// to 1,000): bounds a transaction to 64,000 rounds however many outboxes catch up at once.
pub(crate) const MAX_REQUESTS: usize = 64;

/// One caller's rounds, and where its answers go (one per round, in order).
type Request = (
    Vec<OwnedRound>,
    oneshot::Sender<Result<Vec<Appended>, ArchiveError>>,
);

/// The queue of a store's committer.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    queue: mpsc::UnboundedSender<Request>,
}

impl GroupCommit {
    /// Starts the committer of `db` (on the current Tokio runtime). It stops when every
    /// clone of the store is gone.
    pub(crate) fn start(db: Db) -> GroupCommit {
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(db, rx));
        GroupCommit { queue }
    }

    /// Queues `rounds` (in order) and waits for the commit of their transaction.
    pub(crate) async fn submit(
        &self,
        rounds: Vec<OwnedRound>,
    ) -> Result<Vec<Appended>, ArchiveError> {
        // The committer stops only with the runtime or the pool: the store is closed.
        let stopped = || ArchiveError::Database(sqlx::Error::PoolClosed);
        let (reply, answer) = oneshot::channel();
        self.queue.send((rounds, reply)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// Rounds after which a transaction takes no further request. Without it, outboxes
/// catching up together fall into lockstep: all check their batches at once, then wait
/// while the one writer commits all of them, and the cores take turns instead of
/// overlapping. Transactions of about this size keep the writer busy while the next
/// batches are being checked, for one fsync per 2,000 rounds or so.
pub(crate) const ROUNDS_PER_COMMIT: usize = 2_000;

async fn run(db: Db, mut rx: mpsc::UnboundedReceiver<Request>) {
    let mut known = Known::default();
    while let Some(first) = rx.recv().await {
        let mut rounds = first.0.len();
        let mut requests = vec![first];
        while rounds < ROUNDS_PER_COMMIT && requests.len() < MAX_REQUESTS {
            let Ok(next) = rx.try_recv() else { break };
            rounds += next.0.len();
            requests.push(next);
        }
        commit(&db, &mut known, requests).await;
    }
}

/// Writes every request's rounds in one transaction. If that fails, nothing of it was
/// committed, and each request is tried again in a transaction of its own, so that each
/// caller gets its own answer.
async fn commit(db: &Db, known: &mut Known, requests: Vec<Request>) {
    let rounds: Vec<&OwnedRound> = requests.iter().flat_map(|(r, _)| r).collect();
    let written = write_batch(db, known, &rounds).await;
    drop(rounds);
    match written {
        Ok(mut answers) => {
            for (rounds, reply) in requests.into_iter().rev() {
                let mine = answers.split_off(answers.len() - rounds.len());
                let _ = reply.send(Ok(mine));
            }
        }
        Err(e) => {
            known.forget();
            if requests.len() == 1 {
                if let Some((_, reply)) = requests.into_iter().next() {
                    let _ = reply.send(Err(e));
                }
                return;
            }
            for (rounds, reply) in requests {
                let refs: Vec<&OwnedRound> = rounds.iter().collect();
                let written = write_batch(db, known, &refs).await;
                if written.is_err() {
                    known.forget();
                }
                let _ = reply.send(written);
            }
        }
    }
}
