//! The table's ledger: every movement of money at the table as a transfer between two
//! accounts, in integer minor units, each with an idempotency key: the table's own books of
//! the bets in play and the house, reconciled against the players' wallet.
//!
//! Accounts: one per player (keyed by player id) standing for the player's side, the
//! wallet (what the table took from it and gave back, so negative when the player is down at
//! this table), the house, and "bets in play", which holds the stakes of the open round.
//! Money comes to the table only as a stake the wallet debited and leaves only as a credit
//! to the wallet, so at every instant
//!
//! ```text
//! sum(players) + house + in_play == 0
//! ```
//!
//! and bets in play are never negative ([`Ledger::check`]). The house may go negative (it
//! pays winnings before it has collected anything). The player's balance itself is the
//! wallet's, never the table's.
//!
//! # Keys and their lifetime
//! Round entries (stake, refund, payout, loss) get keys derived from the round id, and are
//! remembered until the next round opens, when [`Ledger::start_round`] hands them over to
//! the round record. An entry that moves money to or from a player's wallet carries the
//! wallet transaction (`tx`) that moved it, which `banco audit reconcile` matches.

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use banco_records::round::{Account, Entry, EntryKind};

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
    /// Entries of the current round, in order; their keys are unique among them.
    round: Vec<Entry>,
    /// Position in `round` of each key, so that a posting finds an earlier use of its key
    /// without scanning the round (a busy round holds thousands of stakes). Hashed: the
    /// keys of a round share their long start (`stake:debit:<round>:`), which a search in
    /// order compares again at every step (2 % of `banco-bench bets`' CPU, perf).
    round_keys: HashMap<String, usize>,
}

impl Ledger {
    /// What the table took from the player's wallet and gave back, net (negative: the
    /// player is down at this table).
    pub fn net(&self, player: &str) -> i64 {
        self.players.get(player).copied().unwrap_or(0)
    }

    pub fn nets(&self) -> &BTreeMap<String, i64> {
        &self.players
    }

    pub const fn house(&self) -> i64 {
        self.house
    }

    pub const fn in_play(&self) -> i64 {
        self.in_play
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

    /// Posts `entry`, or recognises a retry of it (the same entry under the same key).
    pub fn post(&mut self, entry: Entry) -> Result<Posted, LedgerError> {
        if let Some(&i) = self.round_keys.get(&entry.key) {
            return if self.round[i] == entry {
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
            *self.get_mut(&entry.from) -= amount;
            *self.get_mut(&entry.to) += amount;
            self.round_keys.insert(entry.key.clone(), self.round.len());
            self.round.push(entry);
        }
        Ok(())
    }

    /// Runs [`Ledger::post_all`]'s checks on a shadow of the accounts the batch touches.
    fn check_batch(&self, entries: &[Entry]) -> Result<(), LedgerError> {
        let mut shadow: BTreeMap<&Account, i64> = BTreeMap::new();
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        for entry in entries {
            let amount = entry.amount;
            if amount <= 0 {
                return Err(LedgerError::NonPositive {
                    key: entry.key.clone(),
                    amount,
                });
            }
            if self.round_keys.contains_key(&entry.key) || !keys.insert(&entry.key) {
                return Err(LedgerError::KeyReused {
                    key: entry.key.clone(),
                });
            }
            let overflow = |account: &Account| LedgerError::Overflow {
                account: account.clone(),
            };
            let from = &entry.from;
            let balance = shadow.get(from).copied().unwrap_or_else(|| self.get(from));
            // Only the stakes in play are money the table holds: the house may owe, and a
            // player's side is what the wallet gave, whatever the wallet holds.
            if matches!(from, Account::InPlay) && balance < amount {
                return Err(LedgerError::Insufficient {
                    account: from.clone(),
                    balance,
                    amount,
                });
            }
            let after = balance.checked_sub(amount).ok_or_else(|| overflow(from))?;
            shadow.insert(from, after);
            let to = &entry.to;
            let balance = shadow.get(to).copied().unwrap_or_else(|| self.get(to));
            let after = balance.checked_add(amount).ok_or_else(|| overflow(to))?;
            shadow.insert(to, after);
        }
        Ok(())
    }

    fn get(&self, account: &Account) -> i64 {
        match account {
            Account::Player(p) => self.net(p),
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

    /// The ledger's own invariants: the accounts sum to zero (every cent the table holds or
    /// paid came from a player's wallet), and bets in play are not negative.
    pub fn check(&self) -> Result<(), LedgerError> {
        let players: i128 = self.players.values().map(|&b| i128::from(b)).sum();
        let total = players + i128::from(self.house) + i128::from(self.in_play);
        if total != 0 {
            return Err(LedgerError::Unbalanced(format!(
                "players {players} + house {} + in play {} = {total}, not 0",
                self.house, self.in_play
            )));
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
