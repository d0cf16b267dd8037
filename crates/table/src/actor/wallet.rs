//! The table's side of the wallet: the debits of each bet request, and the delivery of
//! owed credits and cancels until the wallet has acknowledged each.
//!
//! The release task hands this task what each durable record asks of the wallet, in
//! journal order ([`WalletWork`]): so nothing is ever sent that a crash could still take
//! back, and everything journaled is sent, again after a restart (the journal rebuilds the
//! table's [`crate::WalletBook`]). What the wallet answers comes back to the actor as
//! ordinary journaled commands ([`Command::WalletDebitedMany`], [`Command::WalletAcked`]).
//!
//! - The debits of the bet requests that became durable together (one group commit) go
//!   out together, in one exchange where the wallet can ([`Wallet::debit_many`]: one
//!   transaction of the store, one call to `banco wallet`), and their answers come back in
//!   one record: a bet costs the journal one record of its own, not two, and the wallet
//!   one commit per group, not per bet. A request is taken only if every one of its debits
//!   was taken within [`WalletOptions::debit_timeout`]. Otherwise (a refusal, no answer in
//!   time) the table refuses the bet and cancels **every** debit of the request: a debit
//!   that timed out may still have been taken, and a cancel of one that never arrived is
//!   remembered by the wallet, so the late debit is refused. Nothing is ever half-debited.
//! - Owed movements go out in the order they were made, a window of them at a time, each
//!   retried with backoff until the wallet answers it; a wallet that refuses one for good
//!   (which only a bug or an operator's edit can cause) is logged as an alert and retried
//!   slowly, so the movement stays visible as owed (and in `banco audit reconcile`) until an
//!   operator sees to it.
//! - A player's balance changed elsewhere (the cashier, another table), as the wallet tells
//!   ([`Wallet::changes`]), reaches the table as [`Command::WalletChanged`] for a player the
//!   table already shows a balance to, so that their subscriptions here show it. (A player
//!   new to the table is told their balance when they join, read from the wallet.)

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use banco_wallet::{BalanceChange, Changes, Debit, Receipt, Wallet, WalletError};
use futures::stream::{FuturesOrdered, StreamExt as _};
use tokio::sync::{broadcast, mpsc};

use super::TableHandle;
use super::outbox::{RETRY_FIRST, RETRY_MAX};
use crate::command::{Command, DebitAnswer, DebitOutcome, WalletAck};
use crate::metrics::TableMetrics;
use crate::wallet_book::{Owed, OwedOp, PendingRequest, supersedes};

/// How the table uses its wallet.
#[derive(Clone, Debug)]
pub struct WalletOptions {
    /// A debit not answered within this is given up: its request is refused and every debit
    /// of it cancelled (seamless wallets: 3 s by default).
    pub debit_timeout: Duration,
    /// Owed movements in flight at once.
    pub window: usize,
}

impl Default for WalletOptions {
    fn default() -> WalletOptions {
        WalletOptions {
            debit_timeout: Duration::from_secs(3),
            window: 64,
        }
    }
}

/// What durable records ask of the wallet.
#[derive(Debug)]
pub(crate) enum WalletWork {
    /// The bet requests of records made durable together.
    Debits(Vec<PendingRequest>),
    Owed(Owed),
}

/// Runs until `work` closes (the release task stopped) or the actor is gone.
pub(crate) async fn run(
    wallet: Arc<dyn Wallet>,
    options: WalletOptions,
    currency: String,
    owed: Vec<Owed>,
    mut work: mpsc::UnboundedReceiver<WalletWork>,
    actor: TableHandle,
    metrics: TableMetrics,
) {
    let mut changes = wallet.changes();
    let mut queue: VecDeque<Owed> = owed.into();
    let mut in_flight = FuturesOrdered::new();
    let window = options.window.max(1);
    loop {
        while in_flight.len() < window
            && let Some(owed) = queue.pop_front()
        {
            in_flight.push_back(deliver(Arc::clone(&wallet), owed, metrics.clone()));
        }
        metrics.wallet_owed(queue.len() + in_flight.len());
        tokio::select! {
            next = work.recv() => match next {
                Some(WalletWork::Debits(requests)) => {
                    let wallet = Arc::clone(&wallet);
                    let actor = actor.clone();
                    let timeout = options.debit_timeout;
                    let metrics = metrics.clone();
                    tokio::spawn(async move {
                        let sent = Instant::now();
                        let answers = debit_all(wallet.as_ref(), requests, timeout).await;
                        metrics.debits_answered(answers.len(), sent.elapsed());
                        let command = Command::WalletDebitedMany { answers, now_ms: 0 };
                        if let Err(e) = actor.submit(None, command).await {
                            // The actor stopped: the requests stay pending in the journal,
                            // and the next start cancels their debits.
                            tracing::warn!(error = %e, "wallet: the table did not take the debits' answers");
                        }
                    });
                }
                Some(WalletWork::Owed(owed)) => queue.push_back(owed),
                None => return,
            },
            committed = next_changes(&mut changes), if changes.is_some() => match committed {
                Some(committed) => {
                    for change in committed.iter() {
                        relay(wallet.as_ref(), &actor, &currency, change).await;
                    }
                }
                None => changes = None,
            },
            Some(ack) = in_flight.next(), if !in_flight.is_empty() => {
                let mut acks = vec![ack];
                // Acknowledge whatever else is done in one record.
                while let Some(Some(ack)) = futures::FutureExt::now_or_never(in_flight.next()) {
                    acks.push(ack);
                }
                let command = Command::WalletAcked { acks, now_ms: 0 };
                if let Err(e) = actor.submit(None, command).await {
                    tracing::warn!(error = %e, "wallet: the table did not take acknowledgements; they are sent again at its next start");
                    return;
                }
            }
        }
    }
}

/// The next changes the wallet tells (those of a commit); `None` once it tells no more.
async fn next_changes(changes: &mut Option<broadcast::Receiver<Changes>>) -> Option<Changes> {
    let receiver = changes.as_mut()?;
    loop {
        match receiver.recv().await {
            Ok(changes) => return Some(changes),
            // Balances are absolute: a missed change is made good by the next one, and a
            // player joining reads their balance from the wallet.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "wallet: the balance changes of commits missed (the table was busy)"
                );
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// Passes on a change made elsewhere to the table, if the table shows that player a
/// balance. Its own movements the table knows from the wallet's answers. The balance is
/// read again rather than taken from the change: changes reach the table after its own
/// answers in any order, and an older balance must not replace a newer one.
async fn relay(wallet: &dyn Wallet, actor: &TableHandle, currency: &str, change: &BalanceChange) {
    if change.table == actor.table_id() || change.currency != currency {
        return;
    }
    let Ok(Some(shown)) = actor.balance(&change.player).await else {
        return;
    };
    let (balance, version) = match wallet.account(&change.player, currency).await {
        Ok(account) => (account.balance, account.version),
        Err(e) => {
            tracing::debug!(error = %e, "wallet: a balance change not read again");
            return;
        }
    };
    if shown == balance {
        return;
    }
    let command = Command::WalletChanged {
        player: change.player.clone(),
        balance,
        delta: change.delta,
        reason: change.reason.clone(),
        version,
        now_ms: 0,
    };
    if let Err(e) = actor.submit(None, command).await {
        tracing::debug!(error = %e, "wallet: the table did not take a balance change");
    }
}

/// Every debit of `requests`, in one exchange: each request's answer.
async fn debit_all(
    wallet: &dyn Wallet,
    requests: Vec<PendingRequest>,
    timeout: Duration,
) -> Vec<DebitAnswer> {
    let debits: Vec<Debit> = requests
        .iter()
        .flat_map(|r| r.debits.iter().cloned())
        .collect();
    let mut answers = wallet.debit_many(&debits, timeout).await.into_iter();
    requests
        .into_iter()
        .map(|request| {
            // A wallet that answered fewer debits than it was sent left the rest unknown.
            let mine = request.debits.iter().map(|debit| {
                answers
                    .next()
                    .unwrap_or_else(|| Err(banco_wallet::api::no_answer(debit, timeout)))
            });
            let outcome = outcome(mine);
            DebitAnswer {
                player: request.player,
                key: request.key,
                outcome,
            }
        })
        .collect()
}

/// A request's outcome from the answers to its debits.
fn outcome(answers: impl Iterator<Item = Result<Receipt, WalletError>>) -> DebitOutcome {
    let mut balance: Option<(i64, Option<u64>)> = None;
    let mut refusal = None;
    for answer in answers {
        match answer {
            // Concurrent debits answer in any order: the newest balance is the one after
            // them all (the lowest, from a wallet that does not number them).
            Ok(Receipt {
                balance: b,
                version: v,
                ..
            }) => {
                balance = Some(match balance {
                    Some((a, None)) if v.is_none() => (a.min(b), None),
                    Some((a, known)) if !supersedes(v, known) => (a, known),
                    _ => (b, v),
                });
            }
            // A decision beats "unreachable": it says why to the player.
            Err(e) if refusal.as_ref().is_none_or(WalletError::is_transient) => {
                refusal = Some(e);
            }
            Err(_) => {}
        }
    }
    match (refusal, balance) {
        (Some(error), _) => DebitOutcome::Refused { error },
        (None, Some((balance, version))) => DebitOutcome::Taken { balance, version },
        (None, None) => DebitOutcome::Refused {
            error: WalletError::Invalid("a bet request with no debit".to_owned()),
        },
    }
}

/// One owed movement, retried until the wallet answers it.
async fn deliver(wallet: Arc<dyn Wallet>, owed: Owed, metrics: TableMetrics) -> WalletAck {
    let mut backoff = RETRY_FIRST;
    loop {
        let answer = match &owed.op {
            OwedOp::Credit(credit) => wallet.credit(credit).await,
            OwedOp::Cancel(cancel) => wallet.cancel(cancel).await,
        };
        match answer {
            Ok(receipt) => {
                return WalletAck {
                    number: owed.number,
                    balance: Some(receipt.balance),
                    version: receipt.version,
                };
            }
            // The debit this cancel was for never reached the wallet (or was refused):
            // the cancel's work is done.
            Err(WalletError::DebitDoesNotExist { .. } | WalletError::Cancelled { .. })
                if matches!(owed.op, OwedOp::Cancel(_)) =>
            {
                return WalletAck {
                    number: owed.number,
                    balance: None,
                    version: None,
                };
            }
            Err(e) if e.is_transient() => {
                metrics.wallet_failed();
                tracing::warn!(tx = %owed.op.tx(), error = %e, retry_in_ms = backoff.as_millis(), "wallet: movement not delivered, will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RETRY_MAX);
            }
            Err(e) => {
                metrics.wallet_failed();
                tracing::error!(tx = %owed.op.tx(), error = %e, "ALERT: the wallet refused a movement the table owes; retrying slowly until an operator sees to it");
                tokio::time::sleep(RETRY_MAX * 6).await;
            }
        }
    }
}
