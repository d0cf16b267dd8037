//! What each request does to the accounts, decided in memory and in arrival order over
//! what the committer loaded for the batch (the accounts it touches, locked on PostgreSQL;
//! the earlier requests of the same ids; the marks of the debits it names). Nothing here
//! reads or writes the database: the committer writes what this returns, in one
//! transaction, or nothing.

use std::collections::{BTreeMap, HashMap};

use crate::api::{
    AccountView, BalanceChange, Cancel, Cash, Credit, CreditKind, Debit, LimitChange, Receipt,
    SelfLimit, TxId, WalletError,
};

/// A player's account as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AccountRow {
    pub(crate) player: String,
    pub(crate) currency: String,
    pub(crate) balance: i64,
    pub(crate) blocked: bool,
    /// The self-limit in force (as stored: a pending change may be due).
    pub(crate) max_bet: Option<i64>,
    /// A raise or removal waiting: the limit it sets and when (unix ms).
    pub(crate) pending: Option<(Option<i64>, u64)>,
    /// When the last raise or removal was asked, for the once-a-period rule.
    pub(crate) raise_asked_at: Option<u64>,
    /// [`AccountView::version`]: the number of movements made on the account.
    pub(crate) version: u64,
    /// Its newest movement, where its statement starts (none yet: `None`).
    pub(crate) last: Option<Link>,
}

/// A movement as another row points to it: one stored (by its number), or one this batch
/// writes (by its place in [`Writes::movements`], numbered by the database as written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Link {
    Stored(i64),
    Written(usize),
}

impl AccountRow {
    pub(crate) fn empty(player: &str, currency: &str) -> AccountRow {
        AccountRow {
            player: player.to_owned(),
            currency: currency.to_owned(),
            balance: 0,
            blocked: false,
            max_bet: None,
            pending: None,
            raise_asked_at: None,
            version: 0,
            last: None,
        }
    }

    /// The account at `now_ms`: a pending change whose time has come is in force.
    pub(crate) fn at(&self, now_ms: u64) -> AccountRow {
        let mut row = self.clone();
        if let Some((max_bet, at)) = row.pending
            && at <= now_ms
        {
            row.max_bet = max_bet;
            row.pending = None;
        }
        row
    }

    pub(crate) fn view(&self, now_ms: u64) -> AccountView {
        let row = self.at(now_ms);
        AccountView {
            self_limit: row.limit(),
            player: row.player,
            currency: row.currency,
            balance: row.balance,
            blocked: row.blocked,
            version: Some(row.version),
        }
    }

    fn limit(&self) -> SelfLimit {
        SelfLimit {
            max_bet: self.max_bet,
            pending: self.pending,
        }
    }
}

/// How self-limits may be loosened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitPolicy {
    /// A raise or removal takes effect this long after it is asked (default 24 h).
    pub cooling_off_ms: u64,
    /// At most one raise or removal is asked in this long (default 7 days).
    pub period_ms: u64,
}

impl Default for LimitPolicy {
    fn default() -> LimitPolicy {
        LimitPolicy {
            cooling_off_ms: 24 * 3_600_000,
            period_ms: 7 * 24 * 3_600_000,
        }
    }
}

/// What moved money, as the statement and the reconciliation list it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Debit,
    Credit,
    Cancel,
    Deposit,
    Withdrawal,
}

impl Kind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Debit => "debit",
            Kind::Credit => "credit",
            Kind::Cancel => "cancel",
            Kind::Deposit => "deposit",
            Kind::Withdrawal => "withdrawal",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Kind> {
        [
            Kind::Debit,
            Kind::Credit,
            Kind::Cancel,
            Kind::Deposit,
            Kind::Withdrawal,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// One decided request, as stored: the request (compared with any later one of the same
/// id) and its answer (given again to it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MovementRow {
    pub(crate) tx: TxId,
    pub(crate) kind: Kind,
    pub(crate) player: String,
    pub(crate) currency: String,
    pub(crate) amount: i64,
    pub(crate) table: String,
    pub(crate) round: String,
    pub(crate) bet: String,
    /// A debit's position total; 0 otherwise.
    pub(crate) position_total: i64,
    /// A credit's kind (`settlement`, `refund`); empty otherwise.
    pub(crate) credit_kind: String,
    /// The debits a credit settles (space-separated), the debit a cancel takes back.
    pub(crate) refs: String,
    /// Signed change of the player's balance (0 when refused).
    pub(crate) delta: i64,
    /// The balance after it; `None` when refused.
    pub(crate) balance: Option<i64>,
    /// The account's version after it; `None` when refused, or stored before versions.
    pub(crate) version: Option<u64>,
    /// The account's movement before it, so that a statement walks back from the newest
    /// without an index over every player's movements (which changed a page of its own
    /// for nearly every movement); `None` for the first, and when refused.
    pub(crate) prev: Option<Link>,
    pub(crate) refusal: Option<WalletError>,
    pub(crate) at_ms: i64,
}

impl MovementRow {
    fn answer(&self, replayed: bool) -> Result<Receipt, WalletError> {
        match (&self.refusal, self.balance) {
            (Some(refusal), _) => Err(refusal.clone()),
            (None, Some(balance)) => Ok(Receipt {
                tx: self.tx.clone(),
                balance,
                currency: self.currency.clone(),
                replayed,
                version: self.version,
            }),
            (None, None) => Err(WalletError::Unavailable(format!(
                "transaction {} is stored without its answer",
                self.tx
            ))),
        }
    }

    /// What differs between the request stored and `other`, for a Conflict: each field
    /// as the wire names it.
    fn differences(&self, other: &MovementRow) -> Option<String> {
        if self.kind != other.kind {
            return Some(format!(
                "it was a {}, this is a {}",
                self.kind.as_str(),
                other.kind.as_str()
            ));
        }
        let mut why = Vec::new();
        let mut text = |field: &str, old: &str, new: &str| {
            if old != new {
                why.push(format!("{field} `{new}`, was `{old}`"));
            }
        };
        text("player", &self.player, &other.player);
        text("currency", &self.currency, &other.currency);
        text("table", &self.table, &other.table);
        text("round", &self.round, &other.round);
        text("bet", &self.bet, &other.bet);
        text("kind", &self.credit_kind, &other.credit_kind);
        let refs = if self.kind == Kind::Cancel {
            "debit_tx"
        } else {
            "debits"
        };
        text(refs, &self.refs, &other.refs);
        let mut number = |field: &str, old: i64, new: i64| {
            if old != new {
                why.push(format!("{field} {new}, was {old}"));
            }
        };
        number("amount_minor", self.amount, other.amount);
        number(
            "position_total_minor",
            self.position_total,
            other.position_total,
        );
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// A debit's fate after it was taken, or before it arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    Cancelled,
    Settled,
}

impl Mark {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Mark::Cancelled => "cancelled",
            Mark::Settled => "settled",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Mark> {
        match text {
            "cancelled" => Some(Mark::Cancelled),
            "settled" => Some(Mark::Settled),
            _ => None,
        }
    }
}

/// One side of a movement: `player:<id>`, `bets:<table>` (what the table holds of stakes
/// and has paid out) or `cashier`. The postings of a movement sum to zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Posting {
    /// Its movement's place in [`Writes::movements`] (numbered by the database as written).
    pub(crate) movement: usize,
    pub(crate) account: String,
    pub(crate) currency: String,
    pub(crate) amount: i64,
}

/// Money in or out at the cashier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CashKind {
    Deposit,
    Withdrawal,
}

/// A request to the committer.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Debit(Debit),
    Credit(Credit),
    Cancel(Cancel),
    Cash(CashKind, Cash),
    SetLimit(LimitChange),
    SetBlocked {
        player: String,
        currency: String,
        blocked: bool,
    },
}

impl Op {
    /// The account it touches.
    pub(crate) fn account(&self) -> (&str, &str) {
        match self {
            Op::Debit(d) => (&d.player, &d.currency),
            Op::Credit(c) => (&c.player, &c.currency),
            Op::Cancel(c) => (&c.player, &c.currency),
            Op::Cash(_, c) => (&c.player, &c.currency),
            Op::SetLimit(l) => (&l.player, &l.currency),
            Op::SetBlocked {
                player, currency, ..
            } => (player, currency),
        }
    }

    /// Its own id, for movements.
    pub(crate) fn tx(&self) -> Option<&TxId> {
        match self {
            Op::Debit(d) => Some(&d.tx),
            Op::Credit(c) => Some(&c.tx),
            Op::Cancel(c) => Some(&c.tx),
            Op::Cash(_, c) => Some(&c.key),
            Op::SetLimit(_) | Op::SetBlocked { .. } => None,
        }
    }

    /// The debits whose rows and marks its decision needs (itself for a debit).
    pub(crate) fn debits(&self) -> Vec<&TxId> {
        match self {
            Op::Debit(d) => vec![&d.tx],
            Op::Credit(c) => c.debits.iter().collect(),
            Op::Cancel(c) => vec![&c.debit],
            _ => Vec::new(),
        }
    }

    /// Refuses what no state could make valid, naming the field; nothing is stored then.
    pub(crate) fn check(&self) -> Result<(), WalletError> {
        let (player, currency) = self.account();
        check_account(player, currency)?;
        let invalid = |m: String| Err(WalletError::Invalid(m));
        match self {
            Op::Debit(d) if d.amount <= 0 => invalid(format!(
                "amount_minor {}: a debit is more than zero",
                d.amount
            )),
            Op::Debit(d) if d.position_total < d.amount => invalid(format!(
                "position_total_minor {}: less than the debit's amount_minor {}",
                d.position_total, d.amount
            )),
            Op::Credit(c) if c.amount < 0 => invalid(format!(
                "amount_minor {}: a credit is zero or more",
                c.amount
            )),
            Op::Cancel(c) if c.amount <= 0 => invalid(format!(
                "amount_minor {}: a cancel gives back a debit's amount, more than zero",
                c.amount
            )),
            Op::Cash(kind, c) if c.amount <= 0 => invalid(format!(
                "amount_minor {}: a {} is more than zero",
                c.amount,
                match kind {
                    CashKind::Deposit => "deposit",
                    CashKind::Withdrawal => "withdrawal",
                }
            )),
            Op::SetLimit(LimitChange {
                max_bet: Some(max), ..
            }) if *max <= 0 => invalid(format!(
                "max_bet_minor {max}: a limit is more than zero (none removes it)"
            )),
            _ => Ok(()),
        }
    }
}

/// Refuses what cannot be an account, naming the field.
pub(crate) fn check_account(player: &str, currency: &str) -> Result<(), WalletError> {
    check_player(player)?;
    check_currency(currency)
}

fn check_player(player: &str) -> Result<(), WalletError> {
    if player.is_empty() {
        return Err(WalletError::Invalid("player: empty".to_owned()));
    }
    if player.len() > 128 || player.chars().any(char::is_control) {
        return Err(WalletError::Invalid(format!(
            "player `{}`: at most 128 characters, none of them control characters",
            player.escape_debug()
        )));
    }
    Ok(())
}

fn check_currency(currency: &str) -> Result<(), WalletError> {
    if currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(())
    } else {
        Err(WalletError::Invalid(format!(
            "currency `{}`: an ISO 4217 code of three capital letters (EUR)",
            currency.escape_debug()
        )))
    }
}

/// A decided request's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Receipt(Receipt),
    Limit(SelfLimit),
    Account(AccountView),
}

/// What the committer loaded for a batch, which the decisions then update.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) accounts: HashMap<(String, String), AccountRow>,
    /// Earlier requests of the batch's ids and of the debits it names.
    pub(crate) seen: HashMap<TxId, MovementRow>,
    pub(crate) marks: HashMap<TxId, Mark>,
}

/// What a batch writes.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    pub(crate) movements: Vec<MovementRow>,
    pub(crate) postings: Vec<Posting>,
    pub(crate) marks: BTreeMap<TxId, Mark>,
    /// Every account touched, as it is after the batch.
    pub(crate) accounts: BTreeMap<(String, String), AccountRow>,
    /// To publish once committed.
    pub(crate) changes: Vec<BalanceChange>,
}

/// Decides `ops` in order at `now_ms` over `loaded`; an answer for each.
pub(crate) fn decide(
    ops: &[Op],
    loaded: &mut Loaded,
    now_ms: u64,
    policy: LimitPolicy,
) -> (Vec<Result<Answer, WalletError>>, Writes) {
    let mut writes = Writes::default();
    let answers = ops
        .iter()
        .map(|op| {
            op.check()?;
            Decider {
                loaded: &mut *loaded,
                writes: &mut writes,
                now_ms,
                policy,
            }
            .decide(op)
        })
        .collect();
    (answers, writes)
}

struct Decider<'a> {
    loaded: &'a mut Loaded,
    writes: &'a mut Writes,
    now_ms: u64,
    policy: LimitPolicy,
}

impl Decider<'_> {
    fn account(&self, player: &str, currency: &str, now_ms: u64) -> AccountRow {
        let key = (player.to_owned(), currency.to_owned());
        self.loaded
            .accounts
            .get(&key)
            .map_or_else(|| AccountRow::empty(player, currency), |a| a.at(now_ms))
    }

    fn save_account(&mut self, row: AccountRow) {
        let key = (row.player.clone(), row.currency.clone());
        self.loaded.accounts.insert(key.clone(), row.clone());
        self.writes.accounts.insert(key, row);
    }

    fn mark(&mut self, debit: &TxId, mark: Mark) {
        self.loaded.marks.insert(debit.clone(), mark);
        self.writes.marks.insert(debit.clone(), mark);
    }

    fn decide(&mut self, op: &Op) -> Result<Answer, WalletError> {
        let now_ms = self.now_ms;
        match op {
            Op::SetLimit(l) => self.set_limit(&l.player, &l.currency, l.max_bet, l.now_ms),
            Op::SetBlocked {
                player,
                currency,
                blocked,
            } => {
                let mut row = self.account(player, currency, now_ms);
                row.blocked = *blocked;
                let view = row.view(now_ms);
                self.save_account(row);
                Ok(Answer::Account(view))
            }
            _ => self.movement(op).map(Answer::Receipt),
        }
    }

    /// A movement: the first answer again for a known id, else decided and stored.
    fn movement(&mut self, op: &Op) -> Result<Receipt, WalletError> {
        let Some(request) = request_row(op, self.now_ms) else {
            return Err(WalletError::Invalid("not a movement".to_owned()));
        };
        if let Some(seen) = self.loaded.seen.get(&request.tx) {
            return match seen.differences(&request) {
                None => seen.answer(true),
                Some(why) => Err(WalletError::Conflict {
                    tx: request.tx,
                    why,
                }),
            };
        }
        let mut row = self.account(&request.player, &request.currency, self.now_ms);
        let decided = match op {
            Op::Debit(debit) => self.debit(debit, &row),
            Op::Credit(credit) => self.credit(credit),
            Op::Cancel(cancel) => self.cancel(cancel),
            Op::Cash(CashKind::Withdrawal, c) if row.balance < c.amount => {
                Err(WalletError::InsufficientFunds {
                    needed: c.amount,
                    available: row.balance,
                })
            }
            Op::Cash(CashKind::Withdrawal, c) => Ok(-c.amount),
            Op::Cash(CashKind::Deposit, c) => Ok(c.amount),
            Op::SetLimit(_) | Op::SetBlocked { .. } => Ok(0),
        };
        let mut stored = request;
        match decided {
            Ok(delta) => {
                row.balance += delta;
                row.version += 1;
                stored.delta = delta;
                stored.balance = Some(row.balance);
                stored.version = Some(row.version);
                stored.prev = row.last;
                row.last = Some(Link::Written(self.writes.movements.len()));
                self.post(&stored);
                if delta != 0 {
                    self.writes.changes.push(BalanceChange {
                        player: stored.player.clone(),
                        currency: stored.currency.clone(),
                        balance: row.balance,
                        delta,
                        tx: stored.tx.clone(),
                        reason: stored.kind.as_str().to_owned(),
                        table: stored.table.clone(),
                    });
                }
                self.save_account(row);
            }
            // A refusal for a reason of the request itself (another player's debit) is
            // not remembered: it changes nothing, like any invalid request.
            Err(error @ WalletError::Invalid(_)) => return Err(error),
            Err(error) => stored.refusal = Some(error),
        }
        let answer = stored.answer(false);
        self.loaded.seen.insert(stored.tx.clone(), stored.clone());
        self.writes.movements.push(stored);
        answer
    }

    /// The postings of an accepted movement, summing to zero: the movement written next.
    fn post(&mut self, row: &MovementRow) {
        let movement = self.writes.movements.len();
        let player = format!("player:{}", row.player);
        let other = match row.kind {
            Kind::Debit | Kind::Credit | Kind::Cancel => format!("bets:{}", row.table),
            Kind::Deposit | Kind::Withdrawal => "cashier".to_owned(),
        };
        for (account, amount) in [(player, row.delta), (other, -row.delta)] {
            self.writes.postings.push(Posting {
                movement,
                account,
                currency: row.currency.clone(),
                amount,
            });
        }
    }

    fn debit(&mut self, debit: &Debit, row: &AccountRow) -> Result<i64, WalletError> {
        if self.loaded.marks.get(&debit.tx) == Some(&Mark::Cancelled) {
            return Err(WalletError::Cancelled {
                tx: debit.tx.clone(),
            });
        }
        if row.blocked {
            return Err(WalletError::AccountBlocked);
        }
        if let Some(limit) = row.max_bet
            && debit.position_total > limit
        {
            return Err(WalletError::SelfLimit {
                limit,
                asked: debit.position_total,
            });
        }
        if row.balance < debit.amount {
            return Err(WalletError::InsufficientFunds {
                needed: debit.amount,
                available: row.balance,
            });
        }
        Ok(-debit.amount)
    }

    /// The debit `tx` as taken from `player`'s `currency` account, if it was.
    fn taken(&self, tx: &TxId, player: &str, currency: &str) -> Result<Option<i64>, String> {
        let Some(debit) = self.loaded.seen.get(tx) else {
            return Ok(None);
        };
        if debit.kind != Kind::Debit {
            return Err(format!("`{tx}` is a {}, not a debit", debit.kind.as_str()));
        }
        if debit.player != player || debit.currency != currency {
            return Err(format!(
                "`{tx}` is a debit of {} in {}, not of {player} in {currency}",
                debit.player, debit.currency
            ));
        }
        Ok((debit.refusal.is_none()).then_some(debit.amount))
    }

    fn credit(&mut self, credit: &Credit) -> Result<i64, WalletError> {
        for tx in &credit.debits {
            let taken = self
                .taken(tx, &credit.player, &credit.currency)
                .map_err(|e| WalletError::Invalid(format!("debits: {e}")))?;
            if taken.is_none() || self.loaded.marks.get(tx) == Some(&Mark::Cancelled) {
                return Err(WalletError::DebitDoesNotExist { tx: tx.clone() });
            }
        }
        for tx in &credit.debits {
            self.mark(tx, Mark::Settled);
        }
        Ok(credit.amount)
    }

    fn cancel(&mut self, cancel: &Cancel) -> Result<i64, WalletError> {
        let mark = self.loaded.marks.get(&cancel.debit).copied();
        if mark == Some(Mark::Settled) {
            return Err(WalletError::AlreadySettled {
                tx: cancel.debit.clone(),
            });
        }
        let taken = self
            .taken(&cancel.debit, &cancel.player, &cancel.currency)
            .map_err(|e| WalletError::Invalid(format!("debit_tx: {e}")))?;
        if let Some(amount) = taken
            && amount != cancel.amount
        {
            return Err(WalletError::Invalid(format!(
                "amount_minor {}: debit {} took {amount}",
                cancel.amount, cancel.debit
            )));
        }
        self.mark(&cancel.debit, Mark::Cancelled);
        // Money goes back once, for a debit taken and not yet cancelled; a cancel that
        // comes first is remembered and moves nothing.
        Ok(match (taken, mark) {
            (Some(amount), None) => amount,
            _ => 0,
        })
    }

    fn set_limit(
        &mut self,
        player: &str,
        currency: &str,
        max_bet: Option<i64>,
        now_ms: u64,
    ) -> Result<Answer, WalletError> {
        let mut row = self.account(player, currency, now_ms);
        let tighter = match (max_bet, row.max_bet) {
            (Some(new), Some(old)) => new < old,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if tighter || max_bet == row.max_bet {
            // At once; a raise that waited is dropped, since the player now wants less.
            row.max_bet = max_bet;
            row.pending = None;
        } else {
            if let Some(asked) = row.raise_asked_at
                && now_ms < asked.saturating_add(self.policy.period_ms)
            {
                return Err(WalletError::Invalid(format!(
                    "max_bet_minor: a limit may be raised or removed once every {} h; the last \
                     was asked {} h ago, the next may be asked in {} h",
                    self.policy.period_ms / 3_600_000,
                    (now_ms - asked) / 3_600_000,
                    (asked + self.policy.period_ms - now_ms).div_ceil(3_600_000)
                )));
            }
            row.pending = Some((max_bet, now_ms.saturating_add(self.policy.cooling_off_ms)));
            row.raise_asked_at = Some(now_ms);
        }
        let limit = row.limit();
        self.save_account(row);
        Ok(Answer::Limit(limit))
    }
}

/// The request part of `op`'s row (its answer not yet set); `None` for what is not a
/// movement.
fn request_row(op: &Op, now_ms: u64) -> Option<MovementRow> {
    let at_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
    let base = |tx: &TxId, kind, player: &str, currency: &str, amount| MovementRow {
        tx: tx.clone(),
        kind,
        player: player.to_owned(),
        currency: currency.to_owned(),
        amount,
        table: String::new(),
        round: String::new(),
        bet: String::new(),
        position_total: 0,
        credit_kind: String::new(),
        refs: String::new(),
        delta: 0,
        balance: None,
        version: None,
        prev: None,
        refusal: None,
        at_ms,
    };
    Some(match op {
        Op::Debit(d) => MovementRow {
            table: d.table.clone(),
            round: d.round.clone(),
            bet: d.bet.clone(),
            position_total: d.position_total,
            ..base(&d.tx, Kind::Debit, &d.player, &d.currency, d.amount)
        },
        Op::Credit(c) => MovementRow {
            table: c.table.clone(),
            round: c.round.clone(),
            bet: c.bet.clone(),
            credit_kind: match c.kind {
                CreditKind::Settlement => "settlement",
                CreditKind::Refund => "refund",
            }
            .to_owned(),
            refs: c
                .debits
                .iter()
                .map(TxId::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            ..base(&c.tx, Kind::Credit, &c.player, &c.currency, c.amount)
        },
        Op::Cancel(c) => MovementRow {
            table: c.table.clone(),
            round: c.round.clone(),
            refs: c.debit.as_str().to_owned(),
            ..base(&c.tx, Kind::Cancel, &c.player, &c.currency, c.amount)
        },
        Op::Cash(kind, c) => {
            let kind = match kind {
                CashKind::Deposit => Kind::Deposit,
                CashKind::Withdrawal => Kind::Withdrawal,
            };
            base(&c.key, kind, &c.player, &c.currency, c.amount)
        }
        Op::SetLimit(_) | Op::SetBlocked { .. } => return None,
    })
}
