//! Voiding a round, and the refunds a void or a clear gives back.

use std::collections::BTreeMap;

use banco_rules::BetKind;
use banco_wallet::{CreditKind, TxId};

use crate::book::Stakes;
use crate::event::{BalanceReason, Event, RoundTotals};
use crate::ledger::{Account, Entry, EntryKind};
use crate::phase::{Phase, VoidRecord};
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::wallet_book::{self, OwedOp};

use super::settling::RoundEnd;
use super::{Handled, Round, Table, required, round_entry};

impl Table {
    pub(super) fn void(&mut self, asked: &RoundId, reason: &str, by: &str, now: u64) -> Handled {
        let action = "void the round";
        self.check_round_in_play(action, asked)?;
        let phase = self.phase;
        if !phase.round_in_progress() {
            return Err(Refusal::NotNow { action, phase });
        }
        required("reason", reason)?;
        required("by", by)?;
        let round = self
            .round
            .as_ref()
            .ok_or(Refusal::NotNow { action, phase })?;
        let mut entries = Vec::new();
        let mut credits = Vec::new();
        let mut refunds = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            let id = |kind| wallet_book::void_refund_id(&round.id, player, kind);
            let (mut e, mut c) = self.refunds(round, player, stakes, "void", id);
            entries.append(&mut e);
            credits.append(&mut c);
            refunds.insert(player.clone(), stakes.values().sum::<i64>());
        }
        let shoe = self.finished_hand()?;
        self.ledger.post_all(entries)?;
        // Nothing below can fail.
        for player in round.book.players().keys() {
            if let Some(state) = self.players.get_mut(player) {
                state.history.voided(&round.id);
            }
        }
        let void = VoidRecord {
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
        };
        let told = Event::RoundVoided {
            round_id: round.id.clone(),
            void: void.clone(),
            refunds,
        };
        let staked = round.book.total();
        let finished = self.finished(round, Some(void), BTreeMap::new(), None, now);
        let end = RoundEnd {
            told,
            credits,
            finished,
            totals: RoundTotals {
                staked,
                returned: staked,
            },
            phase: Phase::Voided,
            reason: BalanceReason::VoidRefund,
            shoe,
        };
        Ok(self.close_round(end, now))
    }

    /// The ledger entries and the wallet credits that give `player` back their `stakes` of
    /// `round` (a clear, a void): one credit per position under the id `id(kind)`, settling
    /// the position's debits.
    pub(super) fn refunds(
        &self,
        round: &Round,
        player: &str,
        stakes: &Stakes,
        what: &str,
        id: impl Fn(BetKind) -> TxId,
    ) -> (Vec<Entry>, Vec<OwedOp>) {
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        stakes
            .iter()
            .map(|(&kind, &amount)| {
                let tx = id(kind);
                let entry = round_entry(
                    format!("{what}:{tx}"),
                    EntryKind::Refund,
                    (Account::InPlay, Account::Player(player.to_owned())),
                    amount,
                    &round.id,
                    Some(tx.clone()),
                );
                let debits = round
                    .debits
                    .get(&(player.to_owned(), kind))
                    .cloned()
                    .unwrap_or_default();
                let credit = wallet_book::credit(
                    tx,
                    CreditKind::Refund,
                    table,
                    currency,
                    &round.id,
                    player,
                    kind,
                    amount,
                    debits,
                );
                (entry, OwedOp::Credit(credit))
            })
            .unzip()
    }
}
