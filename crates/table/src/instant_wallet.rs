//! A wallet that answers at once, from the balances the table last heard of: for tests,
//! benchmarks and replays that drive a [`Table`] without an actor (which talks to a real
//! wallet, see `actor::wallet`).
//!
//! The debits of a pending bet request are taken when the balance the table shows covers
//! them (refused for insufficient funds otherwise), and every owed movement is
//! acknowledged, a credit adding to that balance.

use std::collections::BTreeMap;

use banco_wallet::WalletError;

use crate::command::{Command, DebitOutcome, WalletAck};
use crate::event::Event;
use crate::refusal::Refusal;
use crate::table::Table;
use crate::wallet_book::OwedOp;

impl Table {
    /// Applies `cmd`, then this module's wallet's answers to what it asked of the wallet
    /// (and to what those asked, in turn). The events of all of them, in order.
    pub fn apply_with_instant_wallet(&mut self, cmd: &Command) -> Result<Vec<Event>, Refusal> {
        let mut events = self.apply(cmd)?;
        let mut i = 0;
        while i < events.len() {
            if let Some(answer) = instant_answer(self, &events[i], cmd.now_ms()) {
                let more = self.apply(&answer)?;
                events.extend(more);
            }
            i += 1;
        }
        Ok(events)
    }
}

/// What a wallet holding the balances `table` last heard of answers to `event`.
pub fn instant_answer(table: &Table, event: &Event, now_ms: u64) -> Option<Command> {
    match event {
        Event::BetsPending { request } => {
            let needed: i64 = request.debits.iter().map(|d| d.amount).sum();
            let available = table.balance(&request.player).unwrap_or(0);
            let outcome = if needed <= available {
                DebitOutcome::Taken {
                    balance: available - needed,
                    version: None,
                }
            } else {
                DebitOutcome::Refused {
                    error: WalletError::InsufficientFunds { needed, available },
                }
            };
            Some(Command::WalletDebited {
                player: request.player.clone(),
                key: request.key.clone(),
                outcome,
                now_ms,
            })
        }
        Event::WalletOwed { owed } if !owed.is_empty() => {
            let mut balances = BTreeMap::new();
            let acks = owed
                .iter()
                .map(|o| {
                    let player = o.op.player().to_owned();
                    let balance = balances
                        .entry(player.clone())
                        .or_insert_with(|| table.balance(&player).unwrap_or(0));
                    // A cancel here undoes a debit this wallet never took.
                    if let OwedOp::Credit(credit) = &o.op {
                        *balance += credit.amount;
                    }
                    WalletAck {
                        number: o.number,
                        balance: Some(*balance),
                        version: None,
                    }
                })
                .collect();
            Some(Command::WalletAcked { acks, now_ms })
        }
        _ => None,
    }
}

/// The wallet telling the table that `player`'s balance moved by `delta` elsewhere (the
/// cashier).
pub fn funding(table: &Table, player: &str, delta: i64) -> Command {
    Command::WalletChanged {
        player: player.into(),
        balance: table.balance(player).unwrap_or(0) + delta,
        delta,
        reason: if delta < 0 { "withdrawal" } else { "deposit" }.into(),
        version: None,
        now_ms: 0,
    }
}
