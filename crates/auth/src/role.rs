//! The five roles a token can carry; each gRPC service admits a fixed set of them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Who the bearer is, as far as authorization goes (docs/src/operations/tls.md, "Roles and
/// tokens").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Runs a table: TableService.
    Croupier,
    /// Bets from an account: PlayerService.
    Player,
    /// Reads the archive (regulators, internal audit).
    Auditor,
    /// Machine-to-machine: archive Append, VideoIngest, a table's wallet movements.
    Service,
    /// The casino's cashier: deposits and withdrawals, a player's balance and statement,
    /// blocking an account (WalletService).
    Cashier,
}

impl Role {
    /// Every role, in declaration order.
    pub const ALL: [Role; 5] = [
        Role::Croupier,
        Role::Player,
        Role::Auditor,
        Role::Service,
        Role::Cashier,
    ];

    /// The lowercase name used in tokens, on the command line and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Croupier => "croupier",
            Role::Player => "player",
            Role::Auditor => "auditor",
            Role::Service => "service",
            Role::Cashier => "cashier",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of `croupier`, `player`, `auditor`, `service`, `cashier`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: expected one of croupier, player, auditor, service, cashier")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    /// Exact lowercase names only, so a role means the same thing everywhere.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.chars().take(32).collect()))
    }
}
