//! The matching itself, without I/O: archived rounds on one side, the wallet's movements on
//! the other, a [`Report`] of totals and differences out.
//!
//! Money is matched per round, player and position (a player may bet on one position in
//! several requests; one settlement credit closes them all):
//! - the stake the wallet holds there is the round's debits less its cancels and its clear
//!   refunds (`refund:` credits), by the change each made to the balance (a cancel that came
//!   before its debit moved nothing, and that debit was refused, so it is not listed); it
//!   must be the archived bets' stake, and nothing where the archive has no bet;
//! - the return is the settlement credit (`credit:`), or in a voided round the void credit
//!   (`void:`); it must be what the archive says was returned (0 for a lost bet: that
//!   credit still closes the bet) or refunded;
//! - each movement's change of balance must be its amount (a debit takes it, a credit
//!   gives it, a cancel gives it back or, coming first, nothing).
//!
//! A round the archive does not have is *in play* when it comes after its table's newest
//! archived round (round ids order by shoe and hand): still being played, or finished and
//! on its way through the table's outbox, which delivers in order. Its movements are listed
//! apart and left out of the totals. A missing round before that newest one can no longer
//! arrive: a difference.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use banco_rules::BetKind;
use banco_table::RoundId;
use banco_table::wallet_book::{
    TxPurpose, cancel_id, cancelled_position, settlement_id, void_refund_id,
};
use banco_wallet::store::{Kind, Movement};
use serde::Serialize;

/// One archived round, as far as money goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArchivedRound {
    pub(crate) round_id: String,
    pub(crate) table_id: String,
    pub(crate) voided: bool,
    pub(crate) bets: Vec<ArchivedBet>,
}

/// One archived bet: its stake, and what it got back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArchivedBet {
    pub(crate) player: String,
    /// The position's snake-case name, as the wallet's movements carry it.
    pub(crate) position: String,
    pub(crate) stake: i64,
    /// The settlement's return (stake and winnings, the stake on a push, 0 on a loss).
    pub(crate) returned: i64,
    /// The stake refunded by a void.
    pub(crate) refunded: i64,
}

/// What the reader learnt of rounds that the movements name and the selected rounds lack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outside {
    /// Archived, but not selected (finished on another day): their movements belong to
    /// that day's reconciliation and are left out here.
    pub(crate) archived: BTreeSet<String>,
    /// Each table's newest archived round, of any day.
    pub(crate) newest: BTreeMap<String, String>,
}

/// Money of one table (or of all), minor units.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Totals {
    pub(crate) rounds: u64,
    pub(crate) bets: u64,
    pub(crate) movements: u64,
    /// Taken by debits.
    pub(crate) debits: i64,
    /// Given by credits: settlements, void refunds, clear refunds.
    pub(crate) credits: i64,
    /// Given back by cancels.
    pub(crate) cancels: i64,
    /// The archive's stakes.
    pub(crate) stakes: i64,
    /// The archive's returns and void refunds.
    pub(crate) returns: i64,
    /// stakes − returns: what the house kept, by the archive.
    pub(crate) house_result: i64,
    /// debits − cancels − credits: what the house kept, by the wallet.
    pub(crate) wallet_result: i64,
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.rounds += other.rounds;
        self.bets += other.bets;
        self.movements += other.movements;
        self.debits += other.debits;
        self.credits += other.credits;
        self.cancels += other.cancels;
        self.stakes += other.stakes;
        self.returns += other.returns;
        self.house_result += other.house_result;
        self.wallet_result += other.wallet_result;
    }

    fn movement(&mut self, m: &Movement) {
        self.movements += 1;
        match m.kind {
            Kind::Debit => self.debits -= m.delta,
            Kind::Credit => self.credits += m.delta,
            Kind::Cancel => self.cancels += m.delta,
            Kind::Deposit | Kind::Withdrawal => {}
        }
        self.wallet_result -= m.delta;
    }
}

/// What kind of difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DifferenceKind {
    /// The wallet holds a stake on a position where the archive has no bet.
    DebitWithoutBet,
    /// Money went back on a position where no debit took it (a cancel or a clear refund
    /// of nothing).
    RefundWithoutDebit,
    /// An archived bet's stake is not what the wallet holds for it.
    StakeDiffers,
    /// A settlement or void credit where the archive has no such return.
    CreditWithoutSettlement,
    /// A return's credit is not the archive's amount.
    ReturnDiffers,
    /// A settlement or void the archive has, whose credit the wallet has not (yet).
    CreditPending,
    /// Movements of a round the archive does not have, though it has later rounds of the
    /// table.
    RoundNotArchived,
    /// A movement whose change of balance is not its amount.
    MovementAltered,
}

impl DifferenceKind {
    pub(crate) fn words(self) -> &'static str {
        match self {
            DifferenceKind::DebitWithoutBet => "debit with no bet",
            DifferenceKind::RefundWithoutDebit => "refund with no debit",
            DifferenceKind::StakeDiffers => "stake differs",
            DifferenceKind::CreditWithoutSettlement => "credit with no settlement",
            DifferenceKind::ReturnDiffers => "return differs",
            DifferenceKind::CreditPending => "credit still pending",
            DifferenceKind::RoundNotArchived => "round not archived",
            DifferenceKind::MovementAltered => "movement altered",
        }
    }
}

/// One difference: where, which movements, and both amounts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Difference {
    pub(crate) kind: DifferenceKind,
    pub(crate) table: String,
    pub(crate) round: String,
    pub(crate) player: String,
    pub(crate) position: String,
    /// The movements at fault, space-separated (a pending credit: the id it will have).
    pub(crate) tx: String,
    /// What the wallet has (a movement altered: the balance change it made).
    pub(crate) wallet_minor: i64,
    /// What it should be by the archive (a movement altered: the movement's amount).
    pub(crate) expected_minor: i64,
}

/// A round not archived yet, and its movements so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct InPlay {
    pub(crate) table: String,
    pub(crate) round: String,
    pub(crate) movements: u64,
    pub(crate) debits: i64,
    pub(crate) credits: i64,
    pub(crate) cancels: i64,
}

/// The outcome of a reconciliation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Report {
    pub(crate) total: Totals,
    pub(crate) tables: BTreeMap<String, Totals>,
    pub(crate) differences: Vec<Difference>,
    pub(crate) not_archived_yet: Vec<InPlay>,
}

/// The rounds the table movements name that `rounds` lacks, each with its table.
pub(crate) fn unknown_rounds(
    rounds: &[ArchivedRound],
    movements: &[Movement],
) -> BTreeMap<String, String> {
    let known: BTreeSet<&str> = rounds.iter().map(|r| r.round_id.as_str()).collect();
    movements
        .iter()
        .filter(|m| is_table_movement(m) && !known.contains(m.round.as_str()))
        .map(|m| (m.round.clone(), m.table.clone()))
        .collect()
}

/// The movements of a period's reconciliation, out of `movements` read with a margin around
/// it: those of the period's `rounds` (a stake taken before the day began, a credit made
/// after it ended), and the others made within `[from, to)`.
pub(crate) fn of_period(
    rounds: &[ArchivedRound],
    movements: Vec<Movement>,
    (from, to): (u64, u64),
) -> Vec<Movement> {
    let selected: BTreeSet<&str> = rounds.iter().map(|r| r.round_id.as_str()).collect();
    movements
        .into_iter()
        .filter(|m| selected.contains(m.round.as_str()) || (from..to).contains(&m.at_ms))
        .collect()
}

/// Whether `round` comes after `newest` (its table's newest archived round, if any): a
/// round in play or on its way to the archive.
pub(crate) fn in_play(round: &str, newest: Option<&str>) -> bool {
    newest.is_none_or(|newest| play_order(round, newest) == Ordering::Greater)
}

/// Rounds of one table in play order: by shoe, then hand (`T01-S0003-H042`), numerically
/// so that hand 1000 comes after hand 999; ids of another form by their text.
pub(crate) fn play_order(a: &str, b: &str) -> Ordering {
    match (shoe_and_hand(a), shoe_and_hand(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

fn shoe_and_hand(round: &str) -> Option<(&str, u32, u32)> {
    let (rest, hand) = round.rsplit_once("-H")?;
    let (table, shoe) = rest.rsplit_once("-S")?;
    Some((table, shoe.parse().ok()?, hand.parse().ok()?))
}

/// A table's debit, credit or cancel (not the cashier's).
fn is_table_movement(m: &Movement) -> bool {
    !m.table.is_empty() && matches!(m.kind, Kind::Debit | Kind::Credit | Kind::Cancel)
}

/// Which return a credit is, by the word its id starts with (a credit not made by a
/// table's own ids counts as a settlement, and so as a difference where none is due).
fn credited(m: &Movement) -> TxPurpose {
    match TxPurpose::of(m.tx.as_str()) {
        Some(p @ (TxPurpose::VoidRefund | TxPurpose::ClearRefund)) => p,
        _ => TxPurpose::Settlement,
    }
}

/// The wallet's side of one position of one player in one round.
#[derive(Default)]
struct Held<'a> {
    /// Debits less cancels and clear refunds.
    staked: i64,
    stake_txs: Vec<&'a str>,
    returns: Vec<(&'a Movement, TxPurpose)>,
    /// Every movement, and what the house kept by them.
    all_txs: Vec<&'a str>,
    kept: i64,
}

/// The archive's side of one position.
#[derive(Default)]
struct Bets {
    count: u64,
    stake: i64,
    returned: i64,
    refunded: i64,
}

type Key = (String, String);

/// Matches `rounds` (the selected archived rounds) with `movements` (the wallet's, of the
/// same selection); `outside` says what became of rounds the movements name and `rounds`
/// lacks (see [`unknown_rounds`]).
pub(crate) fn reconcile(
    rounds: &[ArchivedRound],
    movements: &[Movement],
    outside: &Outside,
) -> Report {
    let mut by_round: BTreeMap<&str, Vec<&Movement>> = BTreeMap::new();
    for m in movements.iter().filter(|m| is_table_movement(m)) {
        if !outside.archived.contains(&m.round) {
            by_round.entry(m.round.as_str()).or_default().push(m);
        }
    }
    let archived: BTreeMap<&str, &ArchivedRound> =
        rounds.iter().map(|r| (r.round_id.as_str(), r)).collect();
    let mut order: Vec<(&str, &str)> = rounds
        .iter()
        .map(|r| (r.table_id.as_str(), r.round_id.as_str()))
        .chain(
            by_round
                .iter()
                .filter(|(round, _)| !archived.contains_key(*round))
                .filter_map(|(round, list)| list.first().map(|m| (m.table.as_str(), *round))),
        )
        .collect();
    order.sort_by(|a, b| a.0.cmp(b.0).then_with(|| play_order(a.1, b.1)));
    order.dedup();

    let mut report = Report::default();
    for (table, round) in order {
        let moved = by_round.get(round).map(Vec::as_slice).unwrap_or_default();
        let archived = archived.get(round).copied();
        if archived.is_none() && in_play(round, outside.newest.get(table).map(String::as_str)) {
            report
                .not_archived_yet
                .push(in_play_round(table, round, moved));
            continue;
        }
        let totals = report.tables.entry(table.to_owned()).or_default();
        totals.rounds += u64::from(archived.is_some());
        for m in moved {
            totals.movement(m);
            if let Some(d) = altered(m) {
                report.differences.push(d);
            }
        }
        match archived {
            Some(archived) => {
                let bets = archive_side(archived, totals);
                match_round(
                    archived,
                    &bets,
                    &wallet_side(moved),
                    &mut report.differences,
                );
            }
            None => {
                for ((player, position), held) in wallet_side(moved) {
                    report.differences.push(Difference {
                        kind: DifferenceKind::RoundNotArchived,
                        table: table.to_owned(),
                        round: round.to_owned(),
                        player,
                        position,
                        tx: held.all_txs.join(" "),
                        wallet_minor: held.kept,
                        expected_minor: 0,
                    });
                }
            }
        }
    }
    for totals in report.tables.values_mut() {
        totals.house_result = totals.stakes - totals.returns;
    }
    for totals in report.tables.values() {
        report.total.add(totals);
    }
    report
}

fn in_play_round(table: &str, round: &str, moved: &[&Movement]) -> InPlay {
    let mut totals = Totals::default();
    for m in moved {
        totals.movement(m);
    }
    InPlay {
        table: table.to_owned(),
        round: round.to_owned(),
        movements: totals.movements,
        debits: totals.debits,
        credits: totals.credits,
        cancels: totals.cancels,
    }
}

/// The difference a movement makes on its own: a change of balance that is not its amount.
fn altered(m: &Movement) -> Option<Difference> {
    let consistent = match m.kind {
        Kind::Debit => m.delta == -m.amount,
        Kind::Credit => m.delta == m.amount,
        Kind::Cancel => m.delta == m.amount || m.delta == 0,
        Kind::Deposit | Kind::Withdrawal => true,
    };
    (!consistent).then(|| Difference {
        kind: DifferenceKind::MovementAltered,
        table: m.table.clone(),
        round: m.round.clone(),
        player: m.player.clone(),
        position: m.bet.clone(),
        tx: m.tx.to_string(),
        wallet_minor: m.delta,
        expected_minor: m.amount,
    })
}

/// The archived bets by player and position, added to `totals`.
fn archive_side(round: &ArchivedRound, totals: &mut Totals) -> BTreeMap<Key, Bets> {
    let mut bets: BTreeMap<Key, Bets> = BTreeMap::new();
    for bet in &round.bets {
        let at = bets
            .entry((bet.player.clone(), bet.position.clone()))
            .or_default();
        at.count += 1;
        at.stake += bet.stake;
        at.returned += bet.returned;
        at.refunded += bet.refunded;
        totals.bets += 1;
        totals.stakes += bet.stake;
        totals.returns += bet.returned + bet.refunded;
    }
    bets
}

/// The round's movements by player and position.
fn wallet_side<'a>(moved: &[&'a Movement]) -> BTreeMap<Key, Held<'a>> {
    // A cancel names no position; its debit's id does. Cancel ids are derived from debit
    // ids (hashed when too long), so each is found from the debits of the round, or read
    // from its own text for a debit that never arrived.
    let debit_of_cancel: BTreeMap<String, &str> = moved
        .iter()
        .filter(|m| m.kind == Kind::Debit)
        .map(|m| (cancel_id(&m.tx).to_string(), m.bet.as_str()))
        .collect();
    let mut held: BTreeMap<Key, Held<'a>> = BTreeMap::new();
    for &m in moved {
        let position = match m.kind {
            Kind::Cancel => debit_of_cancel.get(m.tx.as_str()).map_or_else(
                || cancelled_position_name(m.tx.as_str()),
                |p| (*p).to_owned(),
            ),
            _ => m.bet.clone(),
        };
        let at = held.entry((m.player.clone(), position)).or_default();
        at.all_txs.push(m.tx.as_str());
        at.kept -= m.delta;
        match (m.kind, credited(m)) {
            (Kind::Debit, _) | (Kind::Cancel, _) | (Kind::Credit, TxPurpose::ClearRefund) => {
                at.staked -= m.delta;
                at.stake_txs.push(m.tx.as_str());
            }
            (Kind::Credit, returned) => at.returns.push((m, returned)),
            (Kind::Deposit | Kind::Withdrawal, _) => {}
        }
    }
    held
}

/// The position of a cancel whose debit never arrived, from its id; `?` if it cannot be
/// told (a hashed id).
fn cancelled_position_name(cancel: &str) -> String {
    cancelled_position(cancel).map_or_else(|| "?".to_owned(), |kind| kind.name().to_owned())
}

fn match_round(
    round: &ArchivedRound,
    bets: &BTreeMap<Key, Bets>,
    held: &BTreeMap<Key, Held<'_>>,
    differences: &mut Vec<Difference>,
) {
    let keys: BTreeSet<&Key> = bets.keys().chain(held.keys()).collect();
    let none = Held::default();
    for key in keys {
        let (player, position) = key;
        let difference = |kind, tx: String, wallet_minor, expected_minor| Difference {
            kind,
            table: round.table_id.clone(),
            round: round.round_id.clone(),
            player: player.clone(),
            position: position.clone(),
            tx: if tx.is_empty() { "-".to_owned() } else { tx },
            wallet_minor,
            expected_minor,
        };
        let at = held.get(key).unwrap_or(&none);
        let stake_txs = at.stake_txs.join(" ");
        let Some(bet) = bets.get(key) else {
            match at.staked.cmp(&0) {
                Ordering::Greater => differences.push(difference(
                    DifferenceKind::DebitWithoutBet,
                    stake_txs,
                    at.staked,
                    0,
                )),
                Ordering::Less => differences.push(difference(
                    DifferenceKind::RefundWithoutDebit,
                    stake_txs,
                    at.staked,
                    0,
                )),
                Ordering::Equal => {}
            }
            for (m, _) in &at.returns {
                differences.push(difference(
                    DifferenceKind::CreditWithoutSettlement,
                    m.tx.to_string(),
                    m.delta,
                    0,
                ));
            }
            continue;
        };
        if at.staked != bet.stake {
            differences.push(difference(
                DifferenceKind::StakeDiffers,
                stake_txs,
                at.staked,
                bet.stake,
            ));
        }
        let (due, expected) = if round.voided {
            (TxPurpose::VoidRefund, bet.refunded)
        } else {
            (TxPurpose::Settlement, bet.returned)
        };
        let (matching, other): (Vec<_>, Vec<_>) =
            at.returns.iter().partition(|(_, kind)| *kind == due);
        for (m, _) in other {
            differences.push(difference(
                DifferenceKind::CreditWithoutSettlement,
                m.tx.to_string(),
                m.delta,
                0,
            ));
        }
        if matching.is_empty() {
            if due == TxPurpose::VoidRefund && expected == 0 {
                continue;
            }
            differences.push(difference(
                DifferenceKind::CreditPending,
                return_id(round, player, position, due),
                0,
                expected,
            ));
            continue;
        }
        let credited: i64 = matching.iter().map(|(m, _)| m.delta).sum();
        if credited != expected {
            let txs: Vec<&str> = matching.iter().map(|(m, _)| m.tx.as_str()).collect();
            differences.push(difference(
                DifferenceKind::ReturnDiffers,
                txs.join(" "),
                credited,
                expected,
            ));
        }
    }
}

/// The id the table gives the credit of this return.
fn return_id(round: &ArchivedRound, player: &str, position: &str, due: TxPurpose) -> String {
    let Ok(kind) = BetKind::parse(position) else {
        return String::new();
    };
    let round = RoundId::from(round.round_id.as_str());
    match due {
        TxPurpose::VoidRefund => void_refund_id(&round, player, kind).to_string(),
        _ => settlement_id(&round, player, kind).to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use banco_wallet::TxId;
    use banco_wallet::store::{Kind, Movement};

    use super::*;

    const R1: &str = "T01-S0001-H001";
    const R2: &str = "T01-S0001-H002";

    /// A table movement of T01 as the store lists it.
    fn moved(kind: Kind, tx: &str, player: &str, bet: &str, amount: i64, delta: i64) -> Movement {
        let round = tx.split(':').nth(1).unwrap_or(R1);
        let round = if round.starts_with("T01-") { round } else { R1 };
        Movement {
            seq: 0,
            tx: TxId::new(tx).unwrap(),
            kind,
            player: player.to_owned(),
            currency: "EUR".to_owned(),
            amount,
            delta,
            balance: 0,
            table: "T01".to_owned(),
            round: round.to_owned(),
            bet: bet.to_owned(),
            at_ms: 0,
        }
    }

    fn debit(round: &str, player: &str, n: u32, bet: &str, amount: i64) -> Movement {
        let tx = format!("debit:{round}:{player}:{n}:{bet}");
        let mut m = moved(Kind::Debit, &tx, player, bet, amount, -amount);
        m.round = round.to_owned();
        m
    }

    fn credit(
        what: &str,
        round: &str,
        player: &str,
        n: Option<u32>,
        bet: &str,
        amount: i64,
    ) -> Movement {
        let n = n.map(|n| format!(":{n}")).unwrap_or_default();
        let tx = format!("{what}:{round}:{player}{n}:{bet}");
        let mut m = moved(Kind::Credit, &tx, player, bet, amount, amount);
        m.round = round.to_owned();
        m
    }

    fn cancel(of: &Movement, delta: i64) -> Movement {
        let tx = format!("cancel:{}", of.tx);
        let mut m = moved(Kind::Cancel, &tx, &of.player, "", of.amount, delta);
        m.round = of.round.clone();
        m
    }

    fn bet(player: &str, position: &str, stake: i64, returned: i64) -> ArchivedBet {
        ArchivedBet {
            player: player.to_owned(),
            position: position.to_owned(),
            stake,
            returned,
            refunded: 0,
        }
    }

    fn round(id: &str, bets: Vec<ArchivedBet>) -> ArchivedRound {
        ArchivedRound {
            round_id: id.to_owned(),
            table_id: "T01".to_owned(),
            voided: false,
            bets,
        }
    }

    /// alice wins 10.00 on player, loses 5.00 on banker; bob pushes 20.00 on banker.
    fn clean() -> (Vec<ArchivedRound>, Vec<Movement>) {
        let rounds = vec![round(
            R1,
            vec![
                bet("alice", "player", 1_000, 2_000),
                bet("alice", "banker", 500, 0),
                bet("bob", "banker", 2_000, 2_000),
            ],
        )];
        let movements = vec![
            debit(R1, "alice", 1, "player", 1_000),
            debit(R1, "alice", 1, "banker", 500),
            debit(R1, "bob", 1, "banker", 2_000),
            credit("credit", R1, "alice", None, "player", 2_000),
            credit("credit", R1, "alice", None, "banker", 0),
            credit("credit", R1, "bob", None, "banker", 2_000),
        ];
        (rounds, movements)
    }

    fn kinds(report: &Report) -> Vec<DifferenceKind> {
        report.differences.iter().map(|d| d.kind).collect()
    }

    #[test]
    fn a_clean_round_has_no_difference_and_both_sides_agree() {
        let (rounds, movements) = clean();
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(report.differences, []);
        let t = &report.tables["T01"];
        assert_eq!(
            (
                t.rounds,
                t.bets,
                t.movements,
                t.debits,
                t.credits,
                t.cancels
            ),
            (1, 3, 6, 3_500, 4_000, 0)
        );
        assert_eq!((t.stakes, t.returns), (3_500, 4_000));
        assert_eq!((t.house_result, t.wallet_result), (-500, -500));
        assert_eq!(report.total, *t);
    }

    #[test]
    fn a_debit_with_no_bet_is_named_with_its_id() {
        let (rounds, mut movements) = clean();
        movements.push(debit(R1, "carol", 1, "tie", 300));
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(
            report.differences,
            [Difference {
                kind: DifferenceKind::DebitWithoutBet,
                table: "T01".to_owned(),
                round: R1.to_owned(),
                player: "carol".to_owned(),
                position: "tie".to_owned(),
                tx: format!("debit:{R1}:carol:1:tie"),
                wallet_minor: 300,
                expected_minor: 0,
            }]
        );
        assert_eq!(report.total.wallet_result - report.total.house_result, 300);
    }

    #[test]
    fn a_stake_that_differs_and_a_bet_with_no_debit() {
        let (rounds, mut movements) = clean();
        movements.retain(|m| m.tx.as_str() != format!("debit:{R1}:bob:1:banker"));
        movements[0] = debit(R1, "alice", 1, "player", 900);
        let report = reconcile(&rounds, &movements, &Outside::default());
        let got: Vec<_> = report
            .differences
            .iter()
            .map(|d| (d.kind, d.player.as_str(), d.wallet_minor, d.expected_minor))
            .collect();
        assert_eq!(
            got,
            [
                (DifferenceKind::StakeDiffers, "alice", 900, 1_000),
                (DifferenceKind::StakeDiffers, "bob", 0, 2_000),
            ]
        );
        assert_eq!(report.differences[1].tx, "-");
    }

    #[test]
    fn a_return_that_differs_a_credit_with_no_settlement_and_one_pending() {
        let (rounds, mut movements) = clean();
        // alice's win credited 19.00, bob's push never, and dave credited for nothing.
        movements[3] = credit("credit", R1, "alice", None, "player", 1_900);
        movements.remove(5);
        movements.push(credit("credit", R1, "dave", None, "banker", 4_000));
        let report = reconcile(&rounds, &movements, &Outside::default());
        let got: Vec<_> = report
            .differences
            .iter()
            .map(|d| (d.kind, d.tx.as_str(), d.wallet_minor, d.expected_minor))
            .collect();
        let alice = format!("credit:{R1}:alice:player");
        let bob = format!("credit:{R1}:bob:banker");
        let dave = format!("credit:{R1}:dave:banker");
        assert_eq!(
            got,
            [
                (DifferenceKind::ReturnDiffers, alice.as_str(), 1_900, 2_000),
                (DifferenceKind::CreditPending, bob.as_str(), 0, 2_000),
                (
                    DifferenceKind::CreditWithoutSettlement,
                    dave.as_str(),
                    4_000,
                    0
                ),
            ]
        );
    }

    #[test]
    fn a_lost_bet_whose_closing_credit_is_missing_is_pending() {
        let (rounds, mut movements) = clean();
        movements.remove(4);
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(kinds(&report), [DifferenceKind::CreditPending]);
        assert_eq!(
            report.differences[0].tx,
            format!("credit:{R1}:alice:banker")
        );
        assert_eq!(report.differences[0].expected_minor, 0);
    }

    #[test]
    fn a_position_cleared_then_bet_again_holds_the_second_stake() {
        let rounds = vec![round(R1, vec![bet("alice", "player", 300, 600)])];
        let movements = vec![
            debit(R1, "alice", 1, "player", 500),
            credit("refund", R1, "alice", Some(1), "player", 500),
            debit(R1, "alice", 2, "player", 300),
            credit("credit", R1, "alice", None, "player", 600),
        ];
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(report.differences, []);
        let t = &report.total;
        assert_eq!(
            (t.debits, t.credits, t.stakes, t.returns),
            (800, 1_100, 300, 600)
        );
        assert_eq!(t.wallet_result, t.house_result);
    }

    #[test]
    fn a_clear_refund_of_more_than_was_taken_is_a_difference() {
        let rounds = vec![round(R1, Vec::new())];
        let movements = vec![
            debit(R1, "alice", 1, "player", 500),
            credit("refund", R1, "alice", Some(1), "player", 700),
        ];
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(kinds(&report), [DifferenceKind::RefundWithoutDebit]);
        assert_eq!(report.differences[0].wallet_minor, -200);
    }

    #[test]
    fn a_refused_requests_cancels_leave_nothing_staked() {
        // banker taken, then cancelled; tie refused by the wallet (not listed), its cancel
        // a receipt moving nothing.
        let rounds = vec![round(R1, vec![bet("alice", "player", 1_000, 0)])];
        let banker = debit(R1, "alice", 2, "banker", 500);
        let tie = debit(R1, "alice", 2, "tie", 9_000);
        let movements = vec![
            debit(R1, "alice", 1, "player", 1_000),
            banker.clone(),
            cancel(&banker, 500),
            cancel(&tie, 0),
            credit("credit", R1, "alice", None, "player", 0),
        ];
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(report.differences, []);
        let t = &report.total;
        assert_eq!((t.debits, t.cancels, t.credits), (1_500, 500, 0));
        assert_eq!(t.wallet_result, 1_000);
        assert_eq!(t.house_result, 1_000);
    }

    #[test]
    fn a_cancel_that_arrived_before_its_debit_moved_nothing_and_the_debit_was_refused() {
        let rounds = vec![round(R1, Vec::new())];
        let late = debit(R1, "alice", 1, "banker", 500);
        let report = reconcile(&rounds, &[cancel(&late, 0)], &Outside::default());
        assert_eq!(report.differences, []);
        // Had the late debit been taken all the same, its stake would be held for nothing.
        let report = reconcile(&rounds, &[cancel(&late, 0), late], &Outside::default());
        assert_eq!(kinds(&report), [DifferenceKind::DebitWithoutBet]);
    }

    #[test]
    fn a_void_refunds_each_stake_with_its_void_credit() {
        let mut voided = round(R2, vec![bet("alice", "banker", 700, 0)]);
        voided.voided = true;
        voided.bets[0].refunded = 700;
        let movements = vec![
            debit(R2, "alice", 1, "banker", 700),
            credit("void", R2, "alice", None, "banker", 700),
        ];
        let report = reconcile(&[voided.clone()], &movements, &Outside::default());
        assert_eq!(report.differences, []);
        assert_eq!(report.total.returns, 700);
        // A settlement credit in a voided round is no return of it, and the void's is owed.
        let movements = vec![
            debit(R2, "alice", 1, "banker", 700),
            credit("credit", R2, "alice", None, "banker", 700),
        ];
        let report = reconcile(&[voided], &movements, &Outside::default());
        assert_eq!(
            kinds(&report),
            [
                DifferenceKind::CreditWithoutSettlement,
                DifferenceKind::CreditPending
            ]
        );
        assert_eq!(report.differences[1].tx, format!("void:{R2}:alice:banker"));
    }

    #[test]
    fn a_movement_whose_change_is_not_its_amount_is_altered() {
        let (rounds, mut movements) = clean();
        // Its amount edited, its change of balance not.
        movements[5].amount = 2_500;
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(kinds(&report), [DifferenceKind::MovementAltered]);
        let d = &report.differences[0];
        assert_eq!((d.wallet_minor, d.expected_minor), (2_000, 2_500));
        assert_eq!(d.tx, format!("credit:{R1}:bob:banker"));
    }

    #[test]
    fn a_round_after_the_newest_archived_is_in_play_one_before_is_missing() {
        let (rounds, mut movements) = clean();
        movements.push(debit(R2, "alice", 1, "banker", 400));
        let outside = Outside {
            archived: BTreeSet::new(),
            newest: BTreeMap::from([("T01".to_owned(), R1.to_owned())]),
        };
        assert_eq!(
            unknown_rounds(&rounds, &movements),
            BTreeMap::from([(R2.to_owned(), "T01".to_owned())])
        );
        let report = reconcile(&rounds, &movements, &outside);
        assert_eq!(report.differences, []);
        assert_eq!(report.not_archived_yet.len(), 1);
        assert_eq!(report.not_archived_yet[0].debits, 400);
        assert_eq!(report.total.debits, 3_500);

        let outside = Outside {
            archived: BTreeSet::new(),
            newest: BTreeMap::from([("T01".to_owned(), "T01-S0002-H001".to_owned())]),
        };
        let report = reconcile(&rounds, &movements, &outside);
        assert_eq!(kinds(&report), [DifferenceKind::RoundNotArchived]);
        assert_eq!(
            report.differences[0].tx,
            format!("debit:{R2}:alice:1:banker")
        );
        assert_eq!(report.differences[0].wallet_minor, 400);
        assert_eq!(report.not_archived_yet, []);
    }

    #[test]
    fn movements_of_a_round_archived_on_another_day_are_left_out() {
        let (rounds, mut movements) = clean();
        movements.push(debit(R2, "alice", 1, "banker", 400));
        let outside = Outside {
            archived: BTreeSet::from([R2.to_owned()]),
            newest: BTreeMap::from([("T01".to_owned(), R2.to_owned())]),
        };
        let report = reconcile(&rounds, &movements, &outside);
        assert_eq!(report.differences, []);
        assert_eq!(report.not_archived_yet, []);
        assert_eq!(report.total.movements, 6);
    }

    #[test]
    fn a_days_movements_are_its_rounds_and_what_was_made_that_day() {
        let (rounds, _) = clean();
        let at = |mut m: Movement, at_ms| {
            m.at_ms = at_ms;
            m
        };
        let movements = vec![
            // R1's stake, the evening before; R2's debit, before and within the day.
            at(debit(R1, "alice", 1, "player", 1_000), 50),
            at(debit(R2, "alice", 1, "player", 1_000), 50),
            at(debit(R2, "bob", 1, "player", 1_000), 100),
            at(debit(R2, "carol", 1, "player", 1_000), 200),
        ];
        let got: Vec<String> = of_period(&rounds, movements, (100, 200))
            .into_iter()
            .map(|m| m.player)
            .collect();
        assert_eq!(got, ["alice", "bob"]);
    }

    #[test]
    fn rounds_order_by_shoe_and_hand_as_numbers() {
        assert!(in_play("T01-S0001-H1000", Some("T01-S0001-H999")));
        assert!(in_play("T01-S0002-H001", Some("T01-S0001-H080")));
        assert!(!in_play("T01-S0001-H079", Some("T01-S0001-H080")));
        assert!(!in_play("T01-S0001-H080", Some("T01-S0001-H080")));
        assert!(in_play("T01-S0001-H001", None));
    }

    #[test]
    fn the_cashiers_movements_are_not_the_tables() {
        let (rounds, mut movements) = clean();
        let mut deposit = moved(Kind::Deposit, "desk-1", "alice", "", 10_000, 10_000);
        deposit.table.clear();
        deposit.round.clear();
        movements.push(deposit);
        let report = reconcile(&rounds, &movements, &Outside::default());
        assert_eq!(report.differences, []);
        assert_eq!(report.total.movements, 6);
    }
}
