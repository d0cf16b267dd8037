//! Settling: confirming a result, paying it, the wallet's acknowledgements of what the
//! table owes, and the balance events that tell players of them.

use std::collections::{BTreeMap, BTreeSet};

use banco_rules::shoe::Shoe;
use banco_rules::{Bet, Settlement, settle};
use banco_wallet::CreditKind;

use crate::book;
use crate::command::WalletAck;
use crate::event::{BalanceReason, Event, FinishedRound, RoundTotals};
use crate::ledger::{Account, Entry, EntryKind};
use crate::phase::{Phase, VoidRecord};
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::wallet_book::{self, Owed, OwedOp, TxPurpose, WalletBook};

use super::{Handled, PendingSettlement, Round, Streak, Table, required, round_entry};

/// How a round ends, settled or voided (see [`Table::close_round`]).
pub(super) struct RoundEnd {
    /// `Settled` or `RoundVoided`.
    pub(super) told: Event,
    /// What the wallet is to credit for the round.
    pub(super) credits: Vec<OwedOp>,
    /// The round's `RoundFinished`.
    pub(super) finished: Event,
    pub(super) totals: RoundTotals,
    pub(super) phase: Phase,
    pub(super) reason: BalanceReason,
    /// The shoe after the round's hand, from [`Table::finished_hand`].
    pub(super) shoe: Option<Shoe>,
}

impl Table {
    /// What the player has staked on the round under way.
    fn in_play_of(&self, player: &str) -> i64 {
        self.round
            .as_ref()
            .filter(|_| self.phase.round_in_progress())
            .and_then(|r| r.book.of(player))
            .map_or(0, |s| s.values().sum())
    }

    pub(super) fn confirm(&mut self, asked: &RoundId, by: &str, now: u64) -> Handled {
        required("by", by)?;
        let action = "confirm the result";
        self.check_round_in_play(action, asked)?;
        let phase = self.phase;
        let (Phase::Result, Some(round)) = (phase, self.round.as_ref()) else {
            return Err(Refusal::NotNow { action, phase });
        };
        let settled = self.settle_round(round)?;
        let winner = round.coup.result().map(|r| r.winner());
        let (entries, house_net) = settlement_entries(&round.id, &settled);
        let credits = self.settlement_credits(round, &settled);
        let shoe = self.finished_hand()?;
        self.ledger.post_all(entries)?;
        // Nothing below can fail.
        self.settled_rounds += 1;
        let n = self.settled_rounds;
        let result = round.coup.result();
        for (player, stakes) in round.book.players() {
            let state = self.players.entry(player.clone()).or_default();
            let mine = settled.get(player).map_or(&[][..], Vec::as_slice);
            state.history.settled(&round.id, mine, result);
            state.last_bets = stakes.clone();
            for (&kind, &stake) in stakes {
                if let Some(i) = book::main_chance(kind) {
                    let s = &mut state.streaks[i];
                    let count = if s.last_round + 1 == n {
                        s.count + 1
                    } else {
                        1
                    };
                    *s = Streak {
                        last_round: n,
                        count,
                        stake,
                    };
                }
            }
        }
        let told = Event::Settled {
            round_id: round.id.clone(),
            players: settled.clone(),
            house_net,
            at: now,
        };
        let totals = RoundTotals {
            staked: settled.values().flatten().map(|s| s.stake).sum(),
            returned: settled.values().flatten().map(|s| s.returned).sum(),
        };
        let finished = self.finished(round, None, settled, Some(by), now);
        if let Some(winner) = winner {
            self.scoreboard.push(winner);
        }
        let end = RoundEnd {
            told,
            credits,
            finished,
            totals,
            phase: Phase::Settled,
            reason: BalanceReason::Settlement,
            shoe,
        };
        Ok(self.close_round(end, now))
    }

    /// Ends the round, settled or voided: owes the wallet its credits, keeps what it moved
    /// and tells, in order, its outcome, what is owed, its record, the balances now pending
    /// and the end of the shoe's hand.
    pub(super) fn close_round(&mut self, end: RoundEnd, now: u64) -> Vec<Event> {
        let owed = owe_all(&mut self.wallet, end.credits);
        let owed_event = Event::WalletOwed { owed: owed.clone() };
        let mut events = vec![end.told, owed_event, end.finished];
        if let Some(round) = self.round.as_mut() {
            round.totals = Some(end.totals);
        }
        self.phase = end.phase;
        // Told once the round is over, so that nothing reads as still in play.
        events.extend(self.pending_events(&owed, end.reason));
        events.extend(self.finish_hand(end.shoe, now));
        events
    }

    /// Every player's settlements of the round, as [`Command::ConfirmResult`] would pay
    /// them now. Refused unless the coup is complete.
    fn settle_round(&self, round: &Round) -> Result<BTreeMap<String, Vec<Settlement>>, Refusal> {
        let Some(result) = round.coup.result() else {
            return Err(Refusal::NotNow {
                action: "confirm the result",
                phase: self.phase,
            });
        };
        let paytable = &self.config.policy.paytable;
        let mut settled = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            settled.insert(player.clone(), settle(&bets, &result, paytable)?);
        }
        Ok(settled)
    }

    /// The credit that settles each bet of the round: its stake back and its winnings, or
    /// nothing for a lost bet (which still closes the bet at the wallet).
    fn settlement_credits(
        &self,
        round: &Round,
        settled: &BTreeMap<String, Vec<Settlement>>,
    ) -> Vec<OwedOp> {
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        settled
            .iter()
            .flat_map(|(player, list)| list.iter().map(move |s| (player, s)))
            .map(|(player, s)| {
                let debits = round
                    .debits
                    .get(&(player.clone(), s.kind))
                    .cloned()
                    .unwrap_or_default();
                OwedOp::Credit(wallet_book::credit(
                    wallet_book::settlement_id(&round.id, player, s.kind),
                    CreditKind::Settlement,
                    table,
                    currency,
                    &round.id,
                    player,
                    s.kind,
                    s.returned,
                    debits,
                ))
            })
            .collect()
    }

    /// What a `ConfirmResult` now would pay: the round's cards in dealing order and every
    /// player's settlements. `None` unless a result is showing. Changes nothing; the actor
    /// compares it with the rules authority's settlement before confirming.
    pub fn pending_settlement(&self) -> Option<Result<PendingSettlement, Refusal>> {
        let round = self
            .round
            .as_ref()
            .filter(|_| self.phase == Phase::Result)?;
        let cards = round.cards.iter().map(|c| c.card).collect();
        Some(self.settle_round(round).map(|settled| (cards, settled)))
    }

    /// The wallet told of a change of the player's balance made elsewhere.
    pub(super) fn wallet_changed(
        &mut self,
        player: &str,
        balance: i64,
        delta: i64,
        version: Option<u64>,
    ) -> Handled {
        required("player", player)?;
        let before = self.wallet.balance(player);
        let shown = self.wallet.set_balance(player, balance, version);
        // Told an older balance than it shows, or the same: nothing to show.
        if before == Some(shown) {
            return Ok(Vec::new());
        }
        // The change of what this table last showed: the wallet's own delta holds
        // only if the table had heard of every change before it (a retried or
        // reordered notice, a change missed while away).
        let delta = before.map_or(delta, |before| shown - before);
        Ok(vec![self.balance_event(
            player,
            shown,
            delta,
            BalanceReason::Elsewhere,
        )])
    }

    /// Each player `owed` pays, told their balance with what is now pending for them
    /// (credited when the wallet acknowledges it).
    pub(super) fn pending_events(&self, owed: &[Owed], reason: BalanceReason) -> Vec<Event> {
        let players: BTreeSet<&str> = owed.iter().map(|o| o.op.player()).collect();
        players
            .into_iter()
            .filter_map(|player| {
                let balance = self.wallet.balance(player)?;
                Some(self.balance_event(player, balance, 0, reason))
            })
            .collect()
    }

    /// Refuses a croupier command naming another round than the current one.
    pub(super) fn check_round_in_play(
        &self,
        action: &'static str,
        asked: &RoundId,
    ) -> Result<(), Refusal> {
        let current = self.round.as_ref().map(|r| &r.id);
        if current == Some(asked) {
            Ok(())
        } else {
            Err(Refusal::WrongRound {
                action,
                asked: asked.clone(),
                current: current.cloned(),
            })
        }
    }

    pub(super) fn finished(
        &self,
        round: &Round,
        void: Option<VoidRecord>,
        settlements: BTreeMap<String, Vec<Settlement>>,
        confirmed_by: Option<&str>,
        now: u64,
    ) -> Event {
        Event::RoundFinished(Box::new(FinishedRound {
            round_id: round.id.clone(),
            table: self.config.table_id.clone(),
            shoe: round.shoe,
            hand: round.hand,
            betting_opened_at: round.opened_at,
            betting_closed_at: round.closed_at,
            cards: round.cards.clone(),
            corrections: round.corrections.clone(),
            void,
            result: round.coup.result(),
            bets: round.book.players().clone(),
            settlements,
            entries: self.ledger.round_entries().to_vec(),
            finished_at: now,
            opened_by: Some(round.opened_by.clone()),
            confirmed_by: confirmed_by.map(str::to_owned),
            cut_card: round.cut_card,
            revealed: None,
            shoe_opening: round.shoe_opening.clone(),
            placements: round.placements.clone(),
        }))
    }

    /// The [`Event::BalanceChanged`] of a change of `delta` already posted, with the
    /// player's stakes on the round under way after the command.
    pub(super) fn balance_event(
        &self,
        player: &str,
        balance: i64,
        delta: i64,
        reason: BalanceReason,
    ) -> Event {
        Event::BalanceChanged {
            player: player.to_owned(),
            balance,
            delta,
            in_play: self.in_play_of(player),
            pending: self.wallet.owed_to(player),
            reason,
        }
    }

    /// The wallet acknowledged owed movements: each is done; the players hear of their
    /// balance once (the newest the wallet told).
    pub(super) fn wallet_acked(&mut self, acks: &[WalletAck]) -> Vec<Event> {
        // Per player: the balance shown before, the credits' sum, why.
        let mut changes: BTreeMap<String, (Option<i64>, i64, BalanceReason)> = BTreeMap::new();
        let mut done = Vec::new();
        for ack in acks {
            let Some(owed) = self.wallet.acknowledged(ack.number) else {
                continue;
            };
            done.push(ack.number);
            let reason = match &owed.op {
                OwedOp::Cancel(_) => BalanceReason::Cancelled,
                OwedOp::Credit(c) => match TxPurpose::of(c.tx.as_str()) {
                    Some(TxPurpose::VoidRefund) => BalanceReason::VoidRefund,
                    _ if c.kind == CreditKind::Settlement => BalanceReason::Settlement,
                    _ => BalanceReason::Clear,
                },
            };
            let player = owed.op.player().to_owned();
            let change = changes
                .entry(player.clone())
                .or_insert_with(|| (self.wallet.balance(&player), 0, reason));
            // A cancel undoes a debit the player was never shown as taken (its request was
            // refused): it changes nothing the table told, whatever the wallet had done; the
            // balance the wallet answers is the truth either way.
            if let OwedOp::Credit(credit) = &owed.op {
                change.1 += credit.amount;
            }
            change.2 = reason;
            if let Some(balance) = ack.balance {
                self.wallet.set_balance(&player, balance, ack.version);
            }
        }
        if done.is_empty() {
            return Vec::new();
        }
        let mut events = vec![Event::WalletAcked { numbers: done }];
        for (player, (before, delta, reason)) in changes {
            let shown = self.wallet.balance(&player);
            let quiet = reason == BalanceReason::Cancelled && shown == before;
            if let Some(balance) = shown.filter(|_| !quiet) {
                events.push(self.balance_event(&player, balance, delta, reason));
            }
        }
        events
    }
}

/// The ledger entries that settle a round, and the house's net gain on it.
fn settlement_entries(
    round_id: &RoundId,
    settled: &BTreeMap<String, Vec<Settlement>>,
) -> (Vec<Entry>, i64) {
    let mut entries = Vec::new();
    let mut house_net = 0i64;
    for (player, settlements) in settled {
        let to = Account::Player(player.clone());
        for s in settlements {
            let tx = wallet_book::settlement_id(round_id, player, s.kind);
            let entry = |what: &str, kind, accounts, amount| {
                let key = format!("{what}:{round_id}:{player}:{}", s.kind);
                let paid = matches!(kind, EntryKind::Payout).then(|| tx.clone());
                round_entry(key, kind, accounts, amount, round_id, paid)
            };
            if s.returned > 0 {
                let accounts = (Account::InPlay, to.clone());
                entries.push(entry("return", EntryKind::Payout, accounts, s.stake));
            } else {
                let accounts = (Account::InPlay, Account::House);
                entries.push(entry("loss", EntryKind::Loss, accounts, s.stake));
                house_net += s.stake;
            }
            if s.winnings > 0 {
                let accounts = (Account::House, to.clone());
                entries.push(entry("win", EntryKind::Payout, accounts, s.winnings));
                house_net -= s.winnings;
            }
        }
    }
    (entries, house_net)
}

/// Owes the wallet each of `ops` (the actor sends them), numbered.
pub(super) fn owe_all(wallet: &mut WalletBook, ops: Vec<OwedOp>) -> Vec<Owed> {
    ops.into_iter().map(|op| wallet.owe(op)).collect()
}
