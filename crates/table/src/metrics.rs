//! What a table counts for Prometheus. [`TableMetricFamilies`] is registered once per
//! process (every table shares the metric names, told apart by a `table` label);
//! [`TableMetrics`] holds one table's handles, made when the table starts, so that the
//! actor, its journal thread and its outbox only add to atomics they already hold: no lock
//! and no allocation on an accepted bet. A refusal looks its reason up (a short read lock,
//! and a label string): refusals are not the hot path.

use std::sync::Arc;
use std::time::Duration;

use banco_rules::Winner;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::refusal::Refusal;

type Table = [(&'static str, String); 1];
type TableAnd = [(&'static str, String); 2];
type Histograms = Family<Table, Histogram, fn() -> Histogram>;

fn commit_seconds() -> Histogram {
    // 50 µs to about 1.6 s: an fsync on a good disk, up to a stalled one.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
}

fn debit_seconds() -> Histogram {
    // 250 µs to about 4 s: an embedded wallet's commit, up to the 3 s a seamless wallet's
    // debit is given by default.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

fn group_sizes() -> Histogram {
    // 1, 2, 4, … 256 (the default most records under one fsync).
    Histogram::new(exponential_buckets(1.0, 2.0, 9))
}

/// The metric families of every table in the process.
#[derive(Debug, Clone)]
pub struct TableMetricFamilies {
    rounds: Family<TableAnd, Counter>,
    bets_accepted: Family<Table, Counter>,
    bets_refused: Family<TableAnd, Counter>,
    cards_refused: Family<TableAnd, Counter>,
    commands: Family<TableAnd, Counter>,
    journal_records: Family<Table, Counter>,
    journal_bytes: Family<Table, Counter>,
    journal_commit: Histograms,
    journal_group: Histograms,
    outbox_depth: Family<Table, Gauge>,
    outbox_failures: Family<Table, Counter>,
    wallet_owed: Family<Table, Gauge>,
    wallet_failures: Family<Table, Counter>,
    wallet_debit: Histograms,
}

impl Default for TableMetricFamilies {
    fn default() -> TableMetricFamilies {
        TableMetricFamilies {
            rounds: Family::default(),
            bets_accepted: Family::default(),
            bets_refused: Family::default(),
            cards_refused: Family::default(),
            commands: Family::default(),
            journal_records: Family::default(),
            journal_bytes: Family::default(),
            journal_commit: Family::new_with_constructor(commit_seconds),
            journal_group: Family::new_with_constructor(group_sizes),
            outbox_depth: Family::default(),
            outbox_failures: Family::default(),
            wallet_owed: Family::default(),
            wallet_failures: Family::default(),
            wallet_debit: Family::new_with_constructor(debit_seconds),
        }
    }
}

impl TableMetricFamilies {
    /// New families, registered into `registry` under `banco_*`.
    pub fn register(registry: &mut Registry) -> TableMetricFamilies {
        let f = TableMetricFamilies::default();
        registry.register(
            "banco_rounds_finished",
            "Rounds finished, by outcome (banker, player, tie, void)",
            f.rounds.clone(),
        );
        registry.register(
            "banco_bets_accepted",
            "PlaceBets requests accepted (each with one or more stakes)",
            f.bets_accepted.clone(),
        );
        registry.register(
            "banco_bets_refused",
            "PlaceBets requests refused, by reason",
            f.bets_refused.clone(),
        );
        registry.register(
            "banco_cards_refused",
            "Cards refused, by reason (the validator's: misread, hand_complete, ...; or the table's)",
            f.cards_refused.clone(),
        );
        registry.register(
            "banco_commands",
            "Commands to the table actor (croupier, players and its own), by result",
            f.commands.clone(),
        );
        registry.register(
            "banco_journal_records",
            "Records written to the journal and fsynced",
            f.journal_records.clone(),
        );
        registry.register(
            "banco_journal_bytes",
            "Payload bytes written to the journal and fsynced",
            f.journal_bytes.clone(),
        );
        registry.register(
            "banco_journal_commit_seconds",
            "Time to write and fsync one group commit of the journal",
            f.journal_commit.clone(),
        );
        registry.register(
            "banco_journal_group_commit_records",
            "Records in one group commit (one fsync)",
            f.journal_group.clone(),
        );
        registry.register(
            "banco_outbox_depth",
            "Finished rounds waiting for the archive",
            f.outbox_depth.clone(),
        );
        registry.register(
            "banco_outbox_delivery_failures",
            "Deliveries to the archive that failed (each is retried)",
            f.outbox_failures.clone(),
        );
        registry.register(
            "banco_wallet_owed",
            "Credits and cancels the table owes the wallet and has not had acknowledged",
            f.wallet_owed.clone(),
        );
        registry.register(
            "banco_wallet_delivery_failures",
            "Calls to the wallet for owed movements that failed (each is retried)",
            f.wallet_failures.clone(),
        );
        registry.register(
            "banco_wallet_debit_seconds",
            "Time from the table sending a bet request's debits to the wallet to the wallet's answer (or the debit timeout), once per bet request",
            f.wallet_debit.clone(),
        );
        f
    }

    /// The handles of table `table_id`.
    pub fn for_table(&self, table_id: &str) -> TableMetrics {
        let table = || [("table", table_id.to_owned())];
        let with = |key: &'static str, value: &str| {
            [("table", table_id.to_owned()), (key, value.to_owned())]
        };
        let outcome = |name: &str| self.rounds.get_or_create_owned(&with("outcome", name));
        let result = |name: &str| self.commands.get_or_create_owned(&with("result", name));
        TableMetrics(Arc::new(Handles {
            table_id: table_id.to_owned(),
            banker: outcome("banker"),
            player: outcome("player"),
            tie: outcome("tie"),
            void: outcome("void"),
            bets_accepted: self.bets_accepted.get_or_create_owned(&table()),
            accepted: result("accepted"),
            refused: result("refused"),
            bets_refused: self.bets_refused.clone(),
            cards_refused: self.cards_refused.clone(),
            journal: JournalMetrics {
                records: self.journal_records.get_or_create_owned(&table()),
                bytes: self.journal_bytes.get_or_create_owned(&table()),
                commit: self.journal_commit.get_or_create_owned(&table()),
                group: self.journal_group.get_or_create_owned(&table()),
            },
            outbox_depth: self.outbox_depth.get_or_create_owned(&table()),
            outbox_failures: self.outbox_failures.get_or_create_owned(&table()),
            wallet_owed: self.wallet_owed.get_or_create_owned(&table()),
            wallet_failures: self.wallet_failures.get_or_create_owned(&table()),
            wallet_debit: self.wallet_debit.get_or_create_owned(&table()),
        }))
    }
}

/// One table's handles; cheap to clone. The default counts into families nobody reads
/// (tests, and a table served without a metrics endpoint).
#[derive(Debug, Clone)]
pub struct TableMetrics(Arc<Handles>);

impl Default for TableMetrics {
    fn default() -> TableMetrics {
        TableMetricFamilies::default().for_table("")
    }
}

#[derive(Debug)]
struct Handles {
    table_id: String,
    banker: Counter,
    player: Counter,
    tie: Counter,
    void: Counter,
    bets_accepted: Counter,
    accepted: Counter,
    refused: Counter,
    bets_refused: Family<TableAnd, Counter>,
    cards_refused: Family<TableAnd, Counter>,
    journal: JournalMetrics,
    outbox_depth: Gauge,
    outbox_failures: Counter,
    wallet_owed: Gauge,
    wallet_failures: Counter,
    wallet_debit: Histogram,
}

/// The journal committer's handles.
#[derive(Debug, Clone)]
pub struct JournalMetrics {
    records: Counter,
    bytes: Counter,
    commit: Histogram,
    group: Histogram,
}

impl JournalMetrics {
    /// One group commit: `records` records of `bytes` payload bytes, written and fsynced
    /// in `took`.
    pub(crate) fn committed(&self, records: usize, bytes: usize, took: Duration) {
        self.records.inc_by(records as u64);
        self.bytes.inc_by(bytes as u64);
        self.commit.observe(took.as_secs_f64());
        self.group.observe(records as f64);
    }
}

impl TableMetrics {
    pub(crate) fn journal(&self) -> JournalMetrics {
        self.0.journal.clone()
    }

    /// A command the actor applied (`true`) or refused.
    pub(crate) fn command(&self, accepted: bool) {
        if accepted {
            self.0.accepted.inc();
        } else {
            self.0.refused.inc();
        }
    }

    pub(crate) fn bet_accepted(&self) {
        self.0.bets_accepted.inc();
    }

    pub(crate) fn bet_refused(&self, refusal: &Refusal) {
        self.refused_by(&self.0.bets_refused, refusal);
    }

    /// A bet request the table took to the wallet and then refused: by the wallet's
    /// reason (`insufficient_funds`, `self_limit`, `unavailable`, …) or `betting_closed`.
    pub(crate) fn bet_refused_by_wallet(&self, why: &crate::event::BetRefusal) {
        use banco_wallet::WalletError as W;
        let reason = match why {
            crate::event::BetRefusal::BettingClosed { .. } => "betting_closed",
            crate::event::BetRefusal::Wallet { error } => match error {
                W::InsufficientFunds { .. } => "insufficient_funds",
                W::SelfLimit { .. } => "self_limit",
                W::AccountBlocked => "account_blocked",
                W::InvalidSession(_) => "invalid_session",
                W::Unavailable(_) => "wallet_unavailable",
                W::Conflict { .. } => "wallet_conflict",
                W::Cancelled { .. } => "cancelled",
                W::AlreadySettled { .. } | W::DebitDoesNotExist { .. } | W::Invalid(_) => {
                    "wallet_refused"
                }
            },
        };
        let labels = [
            ("table", self.0.table_id.clone()),
            ("reason", reason.to_owned()),
        ];
        self.0.bets_refused.get_or_create(&labels).inc();
    }

    pub(crate) fn wallet_owed(&self, movements: usize) {
        self.0
            .wallet_owed
            .set(i64::try_from(movements).unwrap_or(i64::MAX));
    }

    /// `requests` bet requests whose debits the wallet answered together, `took` after
    /// they were sent.
    pub(crate) fn debits_answered(&self, requests: usize, took: Duration) {
        for _ in 0..requests {
            self.0.wallet_debit.observe(took.as_secs_f64());
        }
    }

    pub(crate) fn wallet_failed(&self) {
        self.0.wallet_failures.inc();
    }

    pub(crate) fn card_refused(&self, refusal: &Refusal) {
        self.refused_by(&self.0.cards_refused, refusal);
    }

    fn refused_by(&self, family: &Family<TableAnd, Counter>, refusal: &Refusal) {
        let labels = [
            ("table", self.0.table_id.clone()),
            ("reason", reason_label(refusal)),
        ];
        family.get_or_create(&labels).inc();
    }

    /// A round made durable: won by `winner`, or void (`None`).
    pub(crate) fn round_finished(&self, winner: Option<Winner>) {
        match winner {
            Some(Winner::Banker) => self.0.banker.inc(),
            Some(Winner::Player) => self.0.player.inc(),
            Some(Winner::Tie) => self.0.tie.inc(),
            None => self.0.void.inc(),
        };
    }

    pub(crate) fn outbox_depth(&self, rounds: usize) {
        self.0
            .outbox_depth
            .set(i64::try_from(rounds).unwrap_or(i64::MAX));
    }

    pub(crate) fn outbox_failed(&self) {
        self.0.outbox_failures.inc();
    }
}

/// The label of a refusal: the validator's code for a card it refused, otherwise the
/// refusal's kind in snake case (`over_balance`, `betting_closed_at`, ...).
pub fn reason_label(refusal: &Refusal) -> String {
    if let Refusal::CardRefused { code, .. } = refusal {
        return code.to_string().replace(' ', "_");
    }
    // The variant's name leads its Debug form.
    let debug = format!("{refusal:?}");
    let name = debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or("refused");
    let mut label = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                label.push('_');
            }
            label.push(c.to_ascii_lowercase());
        } else {
            label.push(c);
        }
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::Phase;

    #[test]
    fn refusal_labels_are_the_variant_in_snake_case() {
        let none = Refusal::NoBets { player: "p".into() };
        assert_eq!(reason_label(&none), "no_bets");
        assert_eq!(reason_label(&Refusal::NothingToUndo), "nothing_to_undo");
        let closed = Refusal::BettingNotOpen { phase: Phase::Idle };
        assert_eq!(reason_label(&closed), "betting_not_open");
    }
}
