//! The table's ledger: every movement of money as a transfer between two accounts, in
//! integer minor units, each with an idempotency key.
//!
//! Accounts: one per player (keyed by player id), the house, and "bets in play", which
//! holds the stakes of the open round. Money enters only by a deposit and leaves only by a
//! withdrawal, so at every instant
//!
//! ```text
//! sum(players) + house + in_play == deposits − withdrawals
//! ```
//!
//! and no player balance is ever negative ([`Ledger::check`]). The house may go negative
//! (it pays winnings before it has collected anything).
//!
//! # Keys and their lifetime
//! Deposits and withdrawals carry the caller's key and are remembered for the life of the
//! table (a cashier may retry days later). Round entries (stake, refund, payout, loss) get
//! keys derived from the round id, and are remembered until the next round opens, when
//! [`Ledger::start_round`] hands them over to the round record.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::round_id::RoundId;

/// One account of the table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Account {
    Player(String),
    House,
    /// Stakes of the open round, between acceptance and settlement or refund.
    InPlay,
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Account::Player(p) => write!(f, "player {p}"),
            Account::House => f.write_str("house"),
            Account::InPlay => f.write_str("bets in play"),
        }
    }
}

/// Why money moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// From outside to a player.
    Deposit,
    /// From a player to outside.
    Withdrawal,
    /// A player's stake into bets in play, on acceptance.
    Stake,
    /// A stake back from bets in play to its player (cleared bets, void round).
    Refund,
    /// At settlement: a returned stake (from bets in play) or winnings (from the house).
    Payout,
    /// At settlement: a losing stake from bets in play to the house.
    Loss,
}

/// One transfer. `from`/`to` `None` is outside the table (the cashier).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub kind: EntryKind,
    pub from: Option<Account>,
    pub to: Option<Account>,
    pub amount: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_id: Option<RoundId>,
}

/// Whether a posting moved money or was a retry of one already posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    New,
    /// The same entry under the same key was already posted: nothing moved.
    Duplicate,
}

/// A transfer the ledger refuses. Nothing moves.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("amount {amount} for `{key}`: must be a positive number of minor units")]
    NonPositive { key: String, amount: i64 },
    #[error("key `{key}` was already used by an earlier entry")]
    KeyReused { key: String },
    #[error("{account} holds {balance}, {amount} is needed")]
    Insufficient {
        account: Account,
        balance: i64,
        amount: i64,
    },
    #[error("{account}: balance would overflow")]
    Overflow { account: Account },
    #[error("books do not balance: {0}")]
    Unbalanced(String),
}

/// Balances and the entries that made them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    players: BTreeMap<String, i64>,
    house: i64,
    in_play: i64,
    deposits: i64,
    withdrawals: i64,
    /// Deposits and withdrawals by key, kept for the life of the table.
    external: BTreeMap<String, Entry>,
    /// Entries of the current round, in order; their keys are unique among them.
    round: Vec<Entry>,
    /// Position in `round` of each key, so that a posting finds an earlier use of its key
    /// without scanning the round (a busy round holds thousands of stakes).
    round_keys: BTreeMap<String, usize>,
}

impl Entry {
    /// A deposit or a withdrawal: money crossing the table's edge.
    fn is_external(&self) -> bool {
        self.from.is_none() || self.to.is_none()
    }
}

impl Ledger {
    pub fn balance(&self, player: &str) -> i64 {
        self.players.get(player).copied().unwrap_or(0)
    }

    pub fn balances(&self) -> &BTreeMap<String, i64> {
        &self.players
    }

    pub const fn house(&self) -> i64 {
        self.house
    }

    pub const fn in_play(&self) -> i64 {
        self.in_play
    }

    pub const fn deposits(&self) -> i64 {
        self.deposits
    }

    pub const fn withdrawals(&self) -> i64 {
        self.withdrawals
    }

    /// Entries posted since the current round opened.
    pub fn round_entries(&self) -> &[Entry] {
        &self.round
    }

    /// Forgets the previous round's entries (they went into its record) and returns them.
    pub fn start_round(&mut self) -> Vec<Entry> {
        self.round_keys.clear();
        std::mem::take(&mut self.round)
    }

    /// The entry posted earlier under `entry`'s key, if any.
    fn earlier(&self, entry: &Entry) -> Option<&Entry> {
        if entry.is_external() {
            self.external.get(&entry.key)
        } else {
            self.round_keys.get(&entry.key).map(|&i| &self.round[i])
        }
    }

    /// Posts `entry`, or recognises a retry of it (the same entry under the same key).
    pub fn post(&mut self, entry: Entry) -> Result<Posted, LedgerError> {
        if let Some(earlier) = self.earlier(&entry) {
            return if *earlier == entry {
                Ok(Posted::Duplicate)
            } else {
                Err(LedgerError::KeyReused { key: entry.key })
            };
        }
        self.post_all(vec![entry])?;
        Ok(Posted::New)
    }

    /// Posts every entry, in order, or none: each is checked against the balances the
    /// entries before it leave, and every key must be new. This is what lets a command
    /// that moves money on several accounts (a bet request, a settlement, a void) decide
    /// every refusal before it changes anything.
    pub fn post_all(&mut self, entries: Vec<Entry>) -> Result<(), LedgerError> {
        self.check_batch(&entries)?;
        // Checked above: nothing below can fail or overflow.
        for entry in entries {
            let amount = entry.amount;
            match (&entry.from, &entry.to) {
                (None, _) => self.deposits += amount,
                (_, None) => self.withdrawals += amount,
                _ => {}
            }
            if let Some(from) = &entry.from {
                *self.get_mut(from) -= amount;
            }
            if let Some(to) = &entry.to {
                *self.get_mut(to) += amount;
            }
            if entry.is_external() {
                self.external.insert(entry.key.clone(), entry);
            } else {
                self.round_keys.insert(entry.key.clone(), self.round.len());
                self.round.push(entry);
            }
        }
        Ok(())
    }

    /// Runs [`Ledger::post_all`]'s checks on a shadow of the accounts the batch touches.
    fn check_batch(&self, entries: &[Entry]) -> Result<(), LedgerError> {
        let mut shadow: BTreeMap<&Account, i64> = BTreeMap::new();
        let mut keys: BTreeSet<(bool, &str)> = BTreeSet::new();
        let (mut deposits, mut withdrawals) = (self.deposits, self.withdrawals);
        for entry in entries {
            let amount = entry.amount;
            if amount <= 0 {
                return Err(LedgerError::NonPositive {
                    key: entry.key.clone(),
                    amount,
                });
            }
            if self.earlier(entry).is_some() || !keys.insert((entry.is_external(), &entry.key)) {
                return Err(LedgerError::KeyReused {
                    key: entry.key.clone(),
                });
            }
            let overflow = |account: &Account| LedgerError::Overflow {
                account: account.clone(),
            };
            if let Some(from) = &entry.from {
                let balance = shadow.get(from).copied().unwrap_or_else(|| self.get(from));
                if matches!(from, Account::Player(_) | Account::InPlay) && balance < amount {
                    return Err(LedgerError::Insufficient {
                        account: from.clone(),
                        balance,
                        amount,
                    });
                }
                let after = balance.checked_sub(amount).ok_or_else(|| overflow(from))?;
                shadow.insert(from, after);
            }
            if let Some(to) = &entry.to {
                let balance = shadow.get(to).copied().unwrap_or_else(|| self.get(to));
                let after = balance.checked_add(amount).ok_or_else(|| overflow(to))?;
                shadow.insert(to, after);
            }
            let external = match (&entry.from, &entry.to) {
                (None, _) => &mut deposits,
                (_, None) => &mut withdrawals,
                _ => continue,
            };
            *external = external
                .checked_add(amount)
                .ok_or_else(|| overflow(&Account::House))?;
        }
        Ok(())
    }

    fn get(&self, account: &Account) -> i64 {
        match account {
            Account::Player(p) => self.balance(p),
            Account::House => self.house,
            Account::InPlay => self.in_play,
        }
    }

    fn get_mut(&mut self, account: &Account) -> &mut i64 {
        match account {
            Account::Player(p) => self.players.entry(p.clone()).or_insert(0),
            Account::House => &mut self.house,
            Account::InPlay => &mut self.in_play,
        }
    }

    /// The ledger's own invariants: the accounts sum to deposits − withdrawals, and no
    /// player or in-play balance is negative.
    pub fn check(&self) -> Result<(), LedgerError> {
        let players: i128 = self.players.values().map(|&b| i128::from(b)).sum();
        let total = players + i128::from(self.house) + i128::from(self.in_play);
        let external = i128::from(self.deposits) - i128::from(self.withdrawals);
        if total != external {
            return Err(LedgerError::Unbalanced(format!(
                "players {players} + house {} + in play {} = {total}, deposits − withdrawals = {external}",
                self.house, self.in_play
            )));
        }
        if let Some((p, b)) = self.players.iter().find(|(_, b)| **b < 0) {
            return Err(LedgerError::Unbalanced(format!("player {p} has {b}")));
        }
        if self.in_play < 0 {
            return Err(LedgerError::Unbalanced(format!(
                "bets in play hold {}",
                self.in_play
            )));
        }
        Ok(())
    }
}
