//! The movements every wallet test makes, on table T01's first round, in euros.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use banco_wallet::{Debit, TxId};

pub fn tx(id: &str) -> TxId {
    TxId::new(id).unwrap()
}

/// A debit of `amount` minor units on the banker, the player's whole stake there.
pub fn debit(id: &str, player: &str, amount: i64) -> Debit {
    Debit {
        tx: tx(id),
        player: player.to_owned(),
        currency: "EUR".to_owned(),
        amount,
        table: "T01".to_owned(),
        round: "T01-S0001-H001".to_owned(),
        bet: "banker".to_owned(),
        position_total: amount,
    }
}
