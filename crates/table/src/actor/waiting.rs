//! Bet requests waiting for the wallet: who is told what once the wallet's answers are
//! journaled, and the requests a restart finds still unanswered.

use banco_wallet::WalletError;

use super::release::Waiter;
use super::task::Actor;
use crate::command::{Command, DebitOutcome};
use crate::event::Event;

impl Actor {
    /// Whoever waits for the requests `command` decides (a `WalletDebited`, or each of a
    /// `WalletDebitedMany`'s answers), each told the events of its own request.
    pub(super) fn answered_by(&mut self, command: &Command, events: &[Event]) -> Vec<Waiter> {
        for event in events {
            match event {
                Event::BetsAccepted { .. } => self.metrics.bet_accepted(),
                Event::BetsRefused { why, .. } => self.metrics.bet_refused_by_wallet(why),
                _ => {}
            }
        }
        match command {
            Command::WalletDebited { player, key, .. } => self
                .waiting
                .remove(&(player.clone(), key.clone()))
                .unwrap_or_default()
                .into_iter()
                .map(Waiter::of_all)
                .collect(),
            Command::WalletDebitedMany { .. } => {
                let mut waiters = Vec::new();
                for (player, key, range) in answers_in(events) {
                    let waiting = self.waiting.remove(&(player, key)).unwrap_or_default();
                    waiters.extend(waiting.into_iter().map(|reply| Waiter {
                        reply,
                        events: Some(range.clone()),
                    }));
                }
                waiters
            }
            _ => Vec::new(),
        }
    }

    /// Refuses every bet request the journal left waiting for the wallet (see `run`).
    pub(super) async fn refuse_unanswered(&mut self) {
        let unanswered: Vec<(String, String)> = self
            .table
            .wallet()
            .pending_requests()
            .map(|r| (r.player.clone(), r.key.clone()))
            .collect();
        for (player, key) in unanswered {
            let command = Command::WalletDebited {
                player,
                key,
                outcome: DebitOutcome::Refused {
                    error: WalletError::Unavailable(
                        "the table restarted before the wallet answered".to_owned(),
                    ),
                },
                now_ms: self.clock.now_ms(),
            };
            match self.table.apply(&command) {
                Ok(events) => {
                    self.journal(None, command, events, Vec::new(), (None, None))
                        .await
                }
                Err(refusal) => {
                    tracing::error!(%refusal, "a bet request left pending could not be refused")
                }
            }
        }
    }
}

/// The (player, key) of a bet request that went to the wallet with this command.
pub(super) fn bet_key(command: &Command, events: &[Event]) -> Option<(String, String)> {
    match (command, events) {
        (Command::PlaceBets { .. } | Command::Rebet { .. }, [Event::BetsPending { request }]) => {
            Some((request.player.clone(), request.key.clone()))
        }
        _ => None,
    }
}

/// The (player, key) of a retried request that is still at the wallet.
pub(super) fn pending_retry(events: &[Event]) -> Option<(String, String)> {
    match events {
        [Event::Replayed { original, .. }] => match original.as_slice() {
            [Event::BetsPending { request }] => Some((request.player.clone(), request.key.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// The requests a batch of the wallet's answers decided, in the order of its events: each
/// (player, key) with the range of its events, from its `BetsAccepted` or `BetsRefused` to
/// the next one's (what else its answer caused, such as betting closing, included).
fn answers_in(events: &[Event]) -> Vec<(String, String, std::ops::Range<usize>)> {
    let mut decided: Vec<(String, String, std::ops::Range<usize>)> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let (player, key) = match event {
            Event::BetsAccepted { player, key, .. } | Event::BetsRefused { player, key, .. } => {
                (player, key)
            }
            _ => continue,
        };
        if let Some(last) = decided.last_mut() {
            last.2.end = i;
        }
        decided.push((player.clone(), key.clone(), i..events.len()));
    }
    decided
}
