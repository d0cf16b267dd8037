//! What the table has asked of the players' wallet and not yet heard back: the wallet
//! outbox, kept in the table's own state so that the journal which rebuilds the table
//! rebuilds it too, exactly.
//!
//! A bet request becomes debits ([`PendingRequest`]), journaled before any is sent; the
//! bet is accepted only once the wallet has taken every one of them, and refused (its
//! debits cancelled) otherwise. Credits (a settlement, a refund of cleared bets or of a void
//! round) and cancels are made when their command is applied, and stay [`Owed`] until the
//! wallet acknowledges them: the actor sends them in the order they were made, again and
//! again after a failure or a restart (the wallet answers a repeated transaction id with its
//! first answer, so nothing moves twice), and journals each acknowledgement.
//!
//! Transaction ids are derived from what the journal replays (round, the bet request's
//! number in the round, player, position; see [`DebitNumbering`]): never from a client's
//! own text.

use std::collections::BTreeMap;

use banco_records::hex::to_hex;
use banco_rules::BetKind;
use banco_wallet::{Cancel, Credit, CreditKind, Debit, TxId};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::book::Raise;
use crate::round_id::RoundId;

/// A bet request whose debits are out at the wallet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRequest {
    pub player: String,
    pub key: String,
    pub round_id: RoundId,
    /// What each position gets once accepted, after raises.
    pub bets: Vec<(BetKind, i64)>,
    pub raised: Vec<Raise>,
    /// One per position of `bets`, in the same order.
    pub debits: Vec<Debit>,
    /// The request's fingerprint, to tell a retry from a reused key.
    pub fingerprint: String,
    /// When the request reached the table.
    pub at: u64,
}

/// A movement the table has made and the wallet has not acknowledged yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OwedOp {
    Credit(Credit),
    Cancel(Cancel),
}

impl OwedOp {
    pub fn tx(&self) -> &TxId {
        match self {
            OwedOp::Credit(c) => &c.tx,
            OwedOp::Cancel(c) => &c.tx,
        }
    }

    pub fn player(&self) -> &str {
        match self {
            OwedOp::Credit(c) => &c.player,
            OwedOp::Cancel(c) => &c.player,
        }
    }

    /// What the player gets back by it.
    pub fn amount(&self) -> i64 {
        match self {
            OwedOp::Credit(c) => c.amount,
            OwedOp::Cancel(c) => c.amount,
        }
    }
}

/// One owed movement with its place in the order they were made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owed {
    /// 1, 2, 3, … per table, in the order the movements were made.
    pub number: u64,
    pub op: OwedOp,
}

/// The wallet outbox of one table. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalletBook {
    pending: BTreeMap<(String, String), PendingRequest>,
    owed: BTreeMap<u64, Owed>,
    last_number: u64,
    /// The newest of what the wallet said each player had available, from its answers,
    /// with the account's version.
    balances: BTreeMap<String, (i64, Option<u64>)>,
}

impl WalletBook {
    pub fn pending(&self, player: &str, key: &str) -> Option<&PendingRequest> {
        self.pending.get(&(player.to_owned(), key.to_owned()))
    }

    /// Every request still waiting for the wallet, in (player, key) order.
    pub fn pending_requests(&self) -> impl Iterator<Item = &PendingRequest> {
        self.pending.values()
    }

    /// Stakes the player has waiting at the wallet on `round_id`, by position: counted
    /// against the limits of a next request, so that two requests in flight together cannot
    /// pass a limit that each alone keeps.
    pub fn pending_stakes(&self, player: &str, round_id: &RoundId) -> BTreeMap<BetKind, i64> {
        let mut stakes = BTreeMap::new();
        for request in self
            .pending
            .range((player.to_owned(), String::new())..)
            .take_while(|((p, _), _)| p == player)
            .map(|(_, r)| r)
            .filter(|r| r.round_id == *round_id)
        {
            for &(kind, amount) in &request.bets {
                *stakes.entry(kind).or_insert(0) += amount;
            }
        }
        stakes
    }

    pub(crate) fn add_pending(&mut self, request: PendingRequest) {
        self.pending
            .insert((request.player.clone(), request.key.clone()), request);
    }

    pub(crate) fn take_pending(&mut self, player: &str, key: &str) -> Option<PendingRequest> {
        self.pending.remove(&(player.to_owned(), key.to_owned()))
    }

    /// Queues `op`; its number.
    pub(crate) fn owe(&mut self, op: OwedOp) -> Owed {
        self.last_number += 1;
        let owed = Owed {
            number: self.last_number,
            op,
        };
        self.owed.insert(owed.number, owed.clone());
        owed
    }

    /// The wallet acknowledged `number`; the movement, unless it was acknowledged before.
    pub(crate) fn acknowledged(&mut self, number: u64) -> Option<Owed> {
        self.owed.remove(&number)
    }

    /// Every owed movement, in the order they were made.
    pub fn owed(&self) -> impl Iterator<Item = &Owed> {
        self.owed.values()
    }

    /// What the table still owes `player` (credits and cancels not yet acknowledged): shown
    /// to the player as pending, e.g. a payout while the wallet is down.
    pub fn owed_to(&self, player: &str) -> i64 {
        self.owed
            .values()
            .filter(|o| o.op.player() == player)
            .map(|o| o.op.amount())
            .sum()
    }

    /// Keeps `balance` unless the wallet told a newer one before ([`supersedes`]):
    /// answers to one player's requests (a bet's debits, a payout's credit, a change at
    /// another table) reach the table in any order. The balance shown after.
    pub(crate) fn set_balance(&mut self, player: &str, balance: i64, version: Option<u64>) -> i64 {
        match self.balances.get(player) {
            Some(&(shown, known)) if !supersedes(version, known) => shown,
            _ => {
                self.balances.insert(player.to_owned(), (balance, version));
                balance
            }
        }
    }

    /// The player's available balance as the wallet last told it, if it has.
    pub fn balance(&self, player: &str) -> Option<i64> {
        self.balances.get(player).map(|(balance, _)| *balance)
    }
}

/// Whether a balance the wallet told with `told` may replace one told with `known`: not
/// when both are numbered and `told` is the older. A wallet that does not number its
/// answers (an operator's seamless wallet) has the last one heard taken as the newest.
pub(crate) fn supersedes(told: Option<u64>, known: Option<u64>) -> bool {
    !matches!((told, known), (Some(told), Some(known)) if told < known)
}

/// What a table's transaction id is for, by the word it starts with (which a hashed id
/// keeps too): the reading of the ids this module makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxPurpose {
    Debit,
    Settlement,
    ClearRefund,
    VoidRefund,
    Cancel,
}

impl TxPurpose {
    pub fn of(tx: &str) -> Option<TxPurpose> {
        let (word, _) = tx.split_once(':')?;
        Some(match word {
            DEBIT => TxPurpose::Debit,
            SETTLEMENT => TxPurpose::Settlement,
            CLEAR_REFUND => TxPurpose::ClearRefund,
            VOID_REFUND => TxPurpose::VoidRefund,
            CANCEL => TxPurpose::Cancel,
            _ => return None,
        })
    }
}

const DEBIT: &str = "debit";
const SETTLEMENT: &str = "credit";
const CLEAR_REFUND: &str = "refund";
const VOID_REFUND: &str = "void";
const CANCEL: &str = "cancel";

/// How a table numbers the debits of a bet request in their ids. The journal's format
/// says which: a journal replays the ids it was written with, since the wallet knows the
/// movements by them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebitNumbering {
    /// Format 1: by the player's requests on the round
    /// (`debit:<round>:<player>:<n>:<position>`).
    ByPlayer,
    /// Format 2 on: by the round's requests, in the order they reached the table
    /// (`debit:<round>:<n, 6 digits>:<player>:<position>`). A wallet keeps its movements
    /// in the order of their ids; numbered by player, the debits of one commit land all
    /// over the round's stretch of that order, each changing a page of its own, where in
    /// arrival order they follow one another.
    InRound,
}

impl DebitNumbering {
    pub const fn of_journal_format(format: u32) -> DebitNumbering {
        if format >= 2 {
            DebitNumbering::InRound
        } else {
            DebitNumbering::ByPlayer
        }
    }
}

/// Which of the round's bet requests a debit is of: the player's `n`th
/// ([`DebitNumbering::ByPlayer`]) or the round's ([`DebitNumbering::InRound`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestNumber {
    OfPlayer(u32),
    OfRound(u32),
}

/// The id of the debit of `kind` in the bet request `n` of the round.
pub fn debit_id(round: &RoundId, player: &str, n: RequestNumber, kind: BetKind) -> TxId {
    match n {
        RequestNumber::OfPlayer(n) => tx_id(DEBIT, round, player, Some(n), kind),
        RequestNumber::OfRound(n) => {
            // Zero-padded so that the ids' order is the requests' (a round of more than a
            // million requests still has unique ids, in another order).
            readable_or_hashed(
                DEBIT,
                format!("{DEBIT}:{round}:{n:06}:{player}:{}", kind.name()),
            )
        }
    }
}

/// The id of the credit that settles the player's bets on `kind` in the round.
pub fn settlement_id(round: &RoundId, player: &str, kind: BetKind) -> TxId {
    tx_id(SETTLEMENT, round, player, None, kind)
}

/// The id of the refund of the player's stake on `kind` by their `n`th clear of the round.
pub fn clear_refund_id(round: &RoundId, player: &str, n: u32, kind: BetKind) -> TxId {
    tx_id(CLEAR_REFUND, round, player, Some(n), kind)
}

/// The id of the refund of the player's stake on `kind` when the round was voided.
pub fn void_refund_id(round: &RoundId, player: &str, kind: BetKind) -> TxId {
    tx_id(VOID_REFUND, round, player, None, kind)
}

/// The id of the cancel of `debit`.
pub fn cancel_id(debit: &TxId) -> TxId {
    readable_or_hashed(CANCEL, format!("{CANCEL}:{debit}"))
}

/// The position a cancel's debit was on, read from the cancel's id; `None` for a hashed id.
pub fn cancelled_position(cancel: &str) -> Option<BetKind> {
    let debit = cancel.strip_prefix(CANCEL)?.strip_prefix(':')?;
    let (word, rest) = debit.split_once(':')?;
    if word != DEBIT {
        return None;
    }
    BetKind::parse(rest.rsplit(':').next()?).ok()
}

fn tx_id(what: &str, round: &RoundId, player: &str, n: Option<u32>, kind: BetKind) -> TxId {
    let n = n.map(|n| format!(":{n}")).unwrap_or_default();
    readable_or_hashed(what, format!("{what}:{round}:{player}{n}:{}", kind.name()))
}

/// `id` itself if it is a transaction id, else [`hashed`]. Player ids are token subjects
/// (`[A-Za-z0-9._@-]`, at most 64) and table ids at most 16 characters, so every id this
/// module makes fits; should one not, it stays unique and readable in part.
fn readable_or_hashed(what: &str, id: String) -> TxId {
    TxId::new(id.clone()).unwrap_or_else(|_| hashed(what, &id))
}

/// `<what>:<first 32 hex digits of the id's SHA-256>`.
fn hashed(what: &str, id: &str) -> TxId {
    let digest = Sha256::digest(id.as_bytes());
    let hex = to_hex(&digest[..16]);
    // `what` is one of this module's words, the rest hex digits: always an id.
    TxId::new(format!("{what}:{hex}")).unwrap_or_else(|e| unreachable!("{e}"))
}

/// The debit of one position of a request.
#[allow(clippy::too_many_arguments)]
pub(crate) fn debit(
    table: &str,
    currency: &str,
    round: &RoundId,
    player: &str,
    n: RequestNumber,
    kind: BetKind,
    amount: i64,
    position_total: i64,
) -> Debit {
    Debit {
        tx: debit_id(round, player, n, kind),
        player: player.to_owned(),
        currency: currency.to_owned(),
        amount,
        table: table.to_owned(),
        round: round.to_string(),
        bet: kind.name().to_owned(),
        position_total,
    }
}

/// The credit of `amount` (0 for a lost bet) to `player` for `kind`, settling `debits`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn credit(
    tx: TxId,
    kind: CreditKind,
    table: &str,
    currency: &str,
    round: &RoundId,
    player: &str,
    bet: BetKind,
    amount: i64,
    debits: Vec<TxId>,
) -> Credit {
    Credit {
        tx,
        player: player.to_owned(),
        currency: currency.to_owned(),
        amount,
        kind,
        table: table.to_owned(),
        round: round.to_string(),
        bet: bet.name().to_owned(),
        debits,
    }
}

/// The cancel of `debit`.
pub(crate) fn cancel(debit: &Debit) -> Cancel {
    debit.cancel_as(cancel_id(&debit.tx))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    use RequestNumber::{OfPlayer, OfRound};

    #[test]
    fn ids_name_the_round_the_player_and_the_position() {
        let round = RoundId::new("T01", 3, 42);
        assert_eq!(
            debit_id(&round, "alice", OfPlayer(2), BetKind::PlayerPair).as_str(),
            "debit:T01-S0003-H042:alice:2:player_pair"
        );
        assert_eq!(
            debit_id(&round, "alice", OfRound(17), BetKind::PlayerPair).as_str(),
            "debit:T01-S0003-H042:000017:alice:player_pair"
        );
        assert_eq!(
            settlement_id(&round, "alice", BetKind::Banker).as_str(),
            "credit:T01-S0003-H042:alice:banker"
        );
        assert_eq!(
            cancel_id(&debit_id(&round, "alice", OfPlayer(1), BetKind::Tie)).as_str(),
            "cancel:debit:T01-S0003-H042:alice:1:tie"
        );
        assert_eq!(
            cancel_id(&debit_id(&round, "alice", OfRound(3), BetKind::Tie)).as_str(),
            "cancel:debit:T01-S0003-H042:000003:alice:tie"
        );
    }

    /// Numbered in the round, the debits' ids sort as their requests came, whoever made
    /// them: what keeps a wallet's index of ids from being changed all over at each commit.
    #[test]
    fn debits_numbered_in_the_round_sort_in_their_order() {
        let round = RoundId::new("T01", 1, 7);
        let players = ["zoe", "alice", "mallory", "bob", "alice", "carol"];
        let ids: Vec<TxId> = (1..=999_999)
            .step_by(9_973)
            .zip(players.iter().cycle())
            .map(|(n, player)| debit_id(&round, player, OfRound(n), BetKind::Banker))
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0].as_str() < w[1].as_str()),
            "{ids:?}"
        );
    }

    #[test]
    fn the_longest_ids_fit() {
        let round = RoundId::new("ABCDEFGHIJKLMNOP", 9999, 999);
        let player = "p".repeat(64);
        for (n, other) in [
            (OfPlayer(999), OfPlayer(998)),
            (OfRound(999_999), OfRound(999_998)),
        ] {
            let debit = debit_id(&round, &player, n, BetKind::PerfectPair);
            assert!(
                debit
                    .as_str()
                    .starts_with("debit:ABCDEFGHIJKLMNOP-S9999-H999:"),
                "{debit}"
            );
            let cancel = cancel_id(&debit);
            // Readable, not hashed: its position reads back.
            assert_eq!(
                cancelled_position(cancel.as_str()),
                Some(BetKind::PerfectPair),
                "{cancel}"
            );
            assert_ne!(
                cancel_id(&debit_id(&round, &player, other, BetKind::PerfectPair)),
                cancel
            );
        }
    }

    /// Every id this module makes reads back as what it is for, hashed ones too; a
    /// cancel's position reads back from a readable id only.
    #[test]
    fn ids_read_back_as_their_purpose() {
        let long = "p".repeat(64);
        for (round, player) in [
            (RoundId::new("T01", 3, 42), "alice"),
            (RoundId::new("ABCDEFGHIJKLMNOP", 9999, 999), long.as_str()),
        ] {
            let kind = BetKind::PerfectPair;
            for n in [OfPlayer(7), OfRound(7)] {
                let debit = debit_id(&round, player, n, kind);
                for (tx, purpose) in [
                    (debit.clone(), TxPurpose::Debit),
                    (settlement_id(&round, player, kind), TxPurpose::Settlement),
                    (
                        clear_refund_id(&round, player, 2, kind),
                        TxPurpose::ClearRefund,
                    ),
                    (void_refund_id(&round, player, kind), TxPurpose::VoidRefund),
                    (cancel_id(&debit), TxPurpose::Cancel),
                ] {
                    assert_eq!(TxPurpose::of(tx.as_str()), Some(purpose), "{tx}");
                }
            }
        }
        let round = RoundId::new("T01", 3, 42);
        for n in [OfPlayer(1), OfRound(1)] {
            let cancel = cancel_id(&debit_id(&round, "alice", n, BetKind::Tie));
            assert_eq!(cancelled_position(cancel.as_str()), Some(BetKind::Tie));
        }
        assert_eq!(cancelled_position("cancel:0123456789abcdef"), None);
        assert_eq!(TxPurpose::of("dep-1"), None);
    }

    /// Of two numbered balances the older never replaces the newer; unnumbered, the last
    /// told is kept.
    #[test]
    fn the_newest_balance_told_is_kept() {
        let mut book = WalletBook::default();
        assert_eq!(book.set_balance("alice", 1_000, Some(5)), 1_000);
        assert_eq!(book.set_balance("alice", 900, Some(4)), 1_000);
        assert_eq!(book.set_balance("alice", 900, Some(5)), 900);
        assert_eq!(book.set_balance("alice", 1_200, Some(6)), 1_200);
        assert_eq!(book.set_balance("bob", 10, None), 10);
        assert_eq!(book.set_balance("bob", 5, None), 5);
        assert_eq!(book.balance("alice"), Some(1_200));
    }

    #[test]
    fn pending_stakes_add_up_per_round_and_player() {
        let round = RoundId::new("T01", 1, 1);
        let mut book = WalletBook::default();
        for (player, key, amount) in [
            ("alice", "k1", 500),
            ("alice", "k2", 700),
            ("bob", "k1", 100),
        ] {
            book.add_pending(PendingRequest {
                player: player.to_owned(),
                key: key.to_owned(),
                round_id: round.clone(),
                bets: vec![(BetKind::Banker, amount)],
                raised: Vec::new(),
                debits: Vec::new(),
                fingerprint: String::new(),
                at: 0,
            });
        }
        assert_eq!(book.pending_stakes("alice", &round)[&BetKind::Banker], 1200);
        assert_eq!(book.pending_stakes("bob", &round)[&BetKind::Banker], 100);
        assert!(book.pending_stakes("al", &round).is_empty());
        assert!(book.take_pending("alice", "k1").is_some());
        assert_eq!(book.pending_stakes("alice", &round)[&BetKind::Banker], 700);
    }
}
