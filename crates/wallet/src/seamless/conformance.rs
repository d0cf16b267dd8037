//! `banco wallet conformance`: the checks an operator's implementation of the protocol must
//! pass before tables spend through it, run against its URL with a test player's account.
//! Every movement a check makes is given back by a later one, so a run that passes leaves
//! the test player's balance as it found it (the last check says so).

use std::time::Duration;

use banco_rules::Money;
use bytes::Bytes;
use tokio::time::Instant;

use super::client::HttpClient;
use super::endpoint::Endpoint;
use super::protocol::{
    Answer, BalanceRequest, CancelRequest, CreditRequest, DebitRequest, Envelope, Operation,
    Status, TIMESTAMP_WINDOW_MS, now_ms,
};
use super::signature::SeamlessSecret;
use crate::api::{Cancel, Credit, CreditKind, Debit, TxId, TxIdError};

/// What the test player must hold for the checks: they stake €1.00 at a time and refuse
/// to run a check that could leave the account short.
pub const MIN_TEST_BALANCE: i64 = 1_000;

/// Each debit's amount.
const STAKE: i64 = 100;

/// How long one answer may take before a check gives up on it (the time limit itself is
/// checked apart, so a slow but correct operator is told both).
const WAIT: Duration = Duration::from_secs(10);

/// A temporary error or a 5xx is tried again, as the tables would, this many times.
const ATTEMPTS: u32 = 3;

#[derive(Clone, Debug)]
pub struct Options {
    /// The test player the operator has set up, with at least [`MIN_TEST_BALANCE`].
    pub player: String,
    pub currency: String,
    /// Every answer must come within it: the tables' limit for a debit.
    pub limit: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            player: "banco-conformance".to_owned(),
            currency: "EUR".to_owned(),
            limit: Duration::from_secs(3),
        }
    }
}

/// One check's outcome, and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub seen: String,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.checks.iter().filter(|c| c.passed).count()
    }

    pub fn failed(&self) -> usize {
        self.checks.len() - self.passed()
    }

    fn record(&mut self, name: &'static str, result: Result<String, String>) {
        let passed = result.is_ok();
        let seen = result.unwrap_or_else(|why| why);
        self.checks.push(Check { name, passed, seen });
    }
}

/// Runs every check against `endpoint`, in order; see the module.
pub async fn run(endpoint: Endpoint, secret: SeamlessSecret, options: &Options) -> Report {
    let mut report = Report::default();
    let run = match banco_auth::client::fresh_id() {
        Ok(id) => id,
        Err(error) => {
            report.record("setup", Err(format!("no random run id: {error}")));
            return report;
        }
    };
    let ids = match Ids::new(&run) {
        Ok(ids) => ids,
        Err(error) => {
            report.record("setup", Err(format!("transaction ids: {error}")));
            return report;
        }
    };
    let mut probe = Probe {
        client: HttpClient::new(endpoint),
        secret,
        options,
        round: format!("conformance-{run}"),
        answers: 0,
        faults: Vec::new(),
        slowest: None,
    };
    checks(&mut probe, &ids, &mut report).await;
    report.record("answers signed", probe.signed());
    report.record("answers in time", probe.in_time());
    report
}

/// The transaction ids of one run: its own, so that runs never meet.
struct Ids {
    debit: TxId,
    credit: TxId,
    settled_cancel: TxId,
    cancelled: TxId,
    cancel: TxId,
    early: TxId,
    early_cancel: TxId,
    early_cleanup: TxId,
    unknown: TxId,
    unknown_credit: TxId,
    too_much: TxId,
    too_much_cleanup: TxId,
    unsigned: TxId,
    stale: TxId,
}

impl Ids {
    fn new(run: &str) -> Result<Ids, TxIdError> {
        let id = |what: &str| TxId::new(format!("conformance-{run}-{what}"));
        Ok(Ids {
            debit: id("debit")?,
            credit: id("credit")?,
            settled_cancel: id("settled-cancel")?,
            cancelled: id("cancelled")?,
            cancel: id("cancel")?,
            early: id("early")?,
            early_cancel: id("early-cancel")?,
            early_cleanup: id("early-cleanup")?,
            unknown: id("unknown")?,
            unknown_credit: id("unknown-credit")?,
            too_much: id("too-much")?,
            too_much_cleanup: id("too-much-cleanup")?,
            unsigned: id("unsigned")?,
            stale: id("stale")?,
        })
    }
}

async fn checks(probe: &mut Probe<'_>, ids: &Ids, report: &mut Report) {
    let start = probe.balance().await;
    report.record(
        "balance",
        start.clone().and_then(|balance| {
            if balance >= MIN_TEST_BALANCE {
                Ok(format!(
                    "OK, {} for {}",
                    probe.money(balance),
                    probe.options.player
                ))
            } else {
                Err(format!(
                    "{} has {}; the checks need at least {}",
                    probe.options.player,
                    probe.money(balance),
                    probe.money(MIN_TEST_BALANCE)
                ))
            }
        }),
    );
    let Ok(start) = start else {
        report.record(
            "movements",
            Err("not checked: no balance to start from".to_owned()),
        );
        return;
    };
    // What the balance should be; set again from the operator's after a check that
    // failed, so that one fault is reported once.
    let mut expected = start;

    // A debit, the same debit again, the same id for another amount.
    let debit = probe.debit_of(&ids.debit, STAKE);
    let first = probe.debit(&debit).await;
    let debited = probe.ok(&first, expected - STAKE, false);
    let debited_ok = debited.is_ok();
    report.record("debit", debited);
    expected = probe.settle(expected - STAKE, debited_ok).await;
    if debited_ok {
        let again = probe.debit(&debit).await;
        let result = probe
            .ok(&again, expected, true)
            .and(probe.unmoved(expected, "the same debit again").await);
        report.record("debit again: same answer, nothing moved", result);
        let other = Debit {
            amount: 2 * STAKE,
            position_total: 2 * STAKE,
            ..debit.clone()
        };
        let conflict = probe.debit(&other).await;
        let result = probe
            .status(&conflict, Status::DuplicateTransaction)
            .and(probe.unmoved(expected, "the id for another amount").await);
        report.record("same id, other amount: refused", result);
        expected = probe.balance().await.unwrap_or(expected);

        // The credit that settles it (its stake back: a push), twice.
        let credit = probe.credit_of(&ids.credit, &ids.debit, STAKE);
        let credited = probe.credit(&credit).await;
        let result = probe.ok(&credited, expected + STAKE, false);
        let credited_ok = result.is_ok();
        report.record("credit settles", result);
        expected = probe.settle(expected + STAKE, credited_ok).await;
        let again = probe.credit(&credit).await;
        let result = probe
            .ok(&again, expected, true)
            .and(probe.unmoved(expected, "the same credit again").await);
        report.record("credit again: paid once", result);

        let cancel = debit.cancel_as(ids.settled_cancel.clone());
        let refused = probe.cancel(&cancel).await;
        let result = probe.status(&refused, Status::BetAlreadySettled).and(
            probe
                .unmoved(expected, "the cancel of a settled debit")
                .await,
        );
        report.record("cancel of a settled debit: refused", result);
        expected = probe.balance().await.unwrap_or(expected);
    } else {
        for name in [
            "debit again: same answer, nothing moved",
            "same id, other amount: refused",
            "credit settles",
            "credit again: paid once",
            "cancel of a settled debit: refused",
        ] {
            report.record(name, Err("not checked: the debit was not taken".to_owned()));
        }
    }

    // A debit taken, then cancelled: the stake comes back.
    let debit = probe.debit_of(&ids.cancelled, STAKE);
    let taken = probe.debit(&debit).await;
    let result = match probe.ok(&taken, expected - STAKE, false) {
        Err(why) => Err(format!("the debit before the cancel: {why}")),
        Ok(_) => {
            let cancel = debit.cancel_as(ids.cancel.clone());
            let cancelled = probe.cancel(&cancel).await;
            probe.ok(&cancelled, expected, false)
        }
    };
    let passed = result.is_ok();
    report.record("cancel after debit", result);
    expected = probe.settle(expected, passed).await;

    // A cancel first: remembered, so the debit that comes after it is refused.
    let debit = probe.debit_of(&ids.early, STAKE);
    let cancel = debit.cancel_as(ids.early_cancel.clone());
    let cancelled = probe.cancel(&cancel).await;
    let result = match probe.decided(&cancelled) {
        Ok(answer) if matches!(answer.status, Status::Ok | Status::BetDoesNotExist) => {
            let late = probe.debit(&debit).await;
            match probe.decided(&late) {
                Ok(answer) if answer.status == Status::BetCancelled => probe
                    .unmoved(expected, "the cancelled debit")
                    .await
                    .map(|_| {
                        "the cancel was answered, the debit after it BET_CANCELLED".to_owned()
                    }),
                Ok(answer) => {
                    let taken = answer.status == Status::Ok;
                    let seen = probe.describe(&late);
                    if taken {
                        // Given back, so the test player keeps its money.
                        let cleanup = debit.cancel_as(ids.early_cleanup.clone());
                        let _ = probe.cancel(&cleanup).await;
                    }
                    Err(format!(
                        "the debit after its cancel was answered {seen}; it must be refused \
                         with BET_CANCELLED (a cancel that comes first is remembered)"
                    ))
                }
                Err(why) => Err(format!("the debit after its cancel: {why}")),
            }
        }
        Ok(_) => Err(format!(
            "the cancel of a debit never taken was answered {}; expected OK or \
             BET_DOES_NOT_EXIST",
            probe.describe(&cancelled)
        )),
        Err(why) => Err(format!("the cancel: {why}")),
    };
    let passed = result.is_ok();
    report.record("cancel before debit, then the debit refused", result);
    expected = probe.settle(expected, passed).await;

    // A credit of a debit that never was.
    let credit = probe.credit_of(&ids.unknown_credit, &ids.unknown, STAKE);
    let refused = probe.credit(&credit).await;
    let result = probe.status(&refused, Status::BetDoesNotExist).and(
        probe
            .unmoved(expected, "the credit of an unknown debit")
            .await,
    );
    let passed = result.is_ok();
    report.record("credit of an unknown debit: BET_DOES_NOT_EXIST", result);
    expected = probe.settle(expected, passed).await;

    // More than the player has.
    let too_much = probe.debit_of(&ids.too_much, expected + 1);
    let refused = probe.debit(&too_much).await;
    let result = match probe.status(&refused, Status::InsufficientFunds) {
        Ok(seen) => probe
            .unmoved(expected, "the refused debit")
            .await
            .map(|_| seen),
        Err(why) => {
            if probe
                .decided(&refused)
                .is_ok_and(|a| a.status == Status::Ok)
            {
                let cleanup = too_much.cancel_as(ids.too_much_cleanup.clone());
                let _ = probe.cancel(&cleanup).await;
            }
            Err(why)
        }
    };
    let passed = result.is_ok();
    report.record("insufficient funds", result);
    expected = probe.settle(expected, passed).await;

    // Requests that are not banco's: signed with another key, not signed, or old.
    let debit = probe.debit_of(&ids.unsigned, STAKE);
    let mut seen = Vec::new();
    let mut faults = Vec::new();
    for (what, signature) in [
        ("a wrong signature", Sign::Wrong),
        ("no signature", Sign::Not),
    ] {
        let reply = probe
            .send_once(Operation::Debit, now_ms(), signature, |envelope| {
                serde_json::to_vec(&DebitRequest::new(&debit, envelope, false))
            })
            .await;
        match probe.refused_signature(&reply) {
            Ok(()) => seen.push(format!("{what}: HTTP 401 INVALID_SIGNATURE")),
            Err(why) => faults.push(format!("{what}: {why}")),
        }
    }
    let result = if faults.is_empty() {
        probe
            .unmoved(expected, "the unsigned debits")
            .await
            .map(|_| seen.join("; "))
    } else {
        Err(faults.join("; "))
    };
    let passed = result.is_ok();
    report.record("wrong signature refused", result);
    expected = probe.settle(expected, passed).await;

    let debit = probe.debit_of(&ids.stale, STAKE);
    let old = now_ms().saturating_sub(2 * TIMESTAMP_WINDOW_MS);
    let reply = probe
        .send_once(Operation::Debit, old, Sign::Right, |envelope| {
            serde_json::to_vec(&DebitRequest::new(&debit, envelope, false))
        })
        .await;
    let result = match probe.refused_signature(&reply) {
        Ok(()) => probe
            .unmoved(expected, "the old debit")
            .await
            .map(|_| "HTTP 401 INVALID_SIGNATURE for a request 10 minutes old".to_owned()),
        Err(why) => Err(format!(
            "a correctly signed request 10 minutes old was answered {why}; it must be refused \
             (timestamp_ms more than 5 minutes away)"
        )),
    };
    let passed = result.is_ok();
    report.record("old request refused", result);
    expected = probe.settle(expected, passed).await;

    let end = probe.balance().await;
    report.record(
        "balance at the end",
        match end {
            Ok(balance) if balance == start => {
                Ok(format!("{}, as at the start", probe.money(balance)))
            }
            Ok(balance) => Err(format!(
                "{}, was {} at the start ({} expected from the answers)",
                probe.money(balance),
                probe.money(start),
                probe.money(expected)
            )),
            Err(why) => Err(why),
        },
    );
}

/// How a request is signed.
#[derive(Clone, Copy, Debug)]
enum Sign {
    Right,
    Wrong,
    Not,
}

/// One answer as a check saw it.
#[derive(Clone, Debug)]
enum Reply {
    /// An answer in the protocol's JSON, for this request (signed or not: that is
    /// counted apart).
    Answer { http_status: u16, answer: Answer },
    /// Anything else, said for people.
    Not(String),
}

struct Probe<'a> {
    client: HttpClient,
    secret: SeamlessSecret,
    options: &'a Options,
    round: String,
    answers: usize,
    /// Answers that were not signed right, or named another request.
    faults: Vec<String>,
    slowest: Option<(Duration, Operation)>,
}

impl Probe<'_> {
    fn money(&self, minor: i64) -> String {
        Money::new(minor, &self.options.currency).to_string()
    }

    fn debit_of(&self, tx: &TxId, amount: i64) -> Debit {
        Debit {
            tx: tx.clone(),
            player: self.options.player.clone(),
            currency: self.options.currency.clone(),
            amount,
            table: "CONFORMANCE".to_owned(),
            round: self.round.clone(),
            bet: "banker".to_owned(),
            position_total: amount,
        }
    }

    fn credit_of(&self, tx: &TxId, debit: &TxId, amount: i64) -> Credit {
        Credit {
            tx: tx.clone(),
            player: self.options.player.clone(),
            currency: self.options.currency.clone(),
            amount,
            kind: CreditKind::Settlement,
            table: "CONFORMANCE".to_owned(),
            round: self.round.clone(),
            bet: "banker".to_owned(),
            debits: vec![debit.clone()],
        }
    }

    /// Sends one request once, signed as `sign` says.
    async fn send_once<F>(
        &mut self,
        operation: Operation,
        timestamp_ms: u64,
        sign: Sign,
        body: F,
    ) -> Reply
    where
        F: FnOnce(Envelope) -> Result<Vec<u8>, serde_json::Error>,
    {
        self.attempt(
            operation,
            timestamp_ms,
            sign,
            |envelope, _| body(envelope),
            false,
        )
        .await
    }

    async fn attempt<F>(
        &mut self,
        operation: Operation,
        timestamp_ms: u64,
        sign: Sign,
        body: F,
        retransmission: bool,
    ) -> Reply
    where
        F: FnOnce(Envelope, bool) -> Result<Vec<u8>, serde_json::Error>,
    {
        let request_id = match banco_auth::client::fresh_id() {
            Ok(id) => id,
            Err(error) => return Reply::Not(format!("no request id: {error}")),
        };
        let envelope = Envelope {
            operation,
            request_id: request_id.clone(),
            timestamp_ms,
        };
        let body = match body(envelope, retransmission) {
            Ok(body) => Bytes::from(body),
            Err(error) => return Reply::Not(format!("the request: {error}")),
        };
        let signature = match sign {
            Sign::Right => Some(self.secret.sign(&body)),
            // Well-formed, but no HMAC of this body under the shared secret.
            Sign::Wrong => Some(format!("sha256={}", "0".repeat(64))),
            Sign::Not => None,
        };
        let started = Instant::now();
        let exchange = tokio::time::timeout(
            WAIT,
            self.client.post(operation, body, signature.as_deref()),
        )
        .await;
        let took = started.elapsed();
        if self.slowest.is_none_or(|(slowest, _)| took > slowest) {
            self.slowest = Some((took, operation));
        }
        let exchange = match exchange {
            Err(_) => return Reply::Not(format!("no answer within {} s", WAIT.as_secs())),
            Ok(Err(fault)) => return Reply::Not(fault.to_string()),
            Ok(Ok(exchange)) => exchange,
        };
        let http_status = exchange.http_status;
        let Ok(answer) = serde_json::from_slice::<Answer>(&exchange.body) else {
            return Reply::Not(format!(
                "HTTP {http_status}, a body that is not the protocol's JSON: {}",
                String::from_utf8_lossy(&exchange.body[..exchange.body.len().min(120)])
            ));
        };
        self.answers += 1;
        let name = operation.name();
        if let Err(error) = self
            .secret
            .verify(&exchange.body, exchange.signature.as_deref())
        {
            self.faults.push(format!("{name}: {error}"));
        }
        if answer.request_id != request_id {
            self.faults.push(format!(
                "{name}: the answer names request `{}`, not `{request_id}`",
                answer.request_id
            ));
        }
        Reply::Answer {
            http_status,
            answer,
        }
    }

    /// Sends a movement as banco does: signed, tried again (fresh request id,
    /// `retransmission`) after a temporary error.
    async fn call<F>(&mut self, operation: Operation, body: F) -> Reply
    where
        F: Fn(Envelope, bool) -> Result<Vec<u8>, serde_json::Error>,
    {
        let mut reply = Reply::Not(String::new());
        for attempt in 0..ATTEMPTS {
            reply = self
                .attempt(operation, now_ms(), Sign::Right, &body, attempt > 0)
                .await;
            let temporary = match &reply {
                Reply::Answer {
                    http_status,
                    answer,
                } => *http_status >= 500 || answer.status == Status::TemporaryError,
                Reply::Not(_) => true,
            };
            if !temporary {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        reply
    }

    async fn debit(&mut self, debit: &Debit) -> Reply {
        self.call(Operation::Debit, |envelope, again| {
            serde_json::to_vec(&DebitRequest::new(debit, envelope, again))
        })
        .await
    }

    async fn credit(&mut self, credit: &Credit) -> Reply {
        self.call(Operation::Credit, |envelope, again| {
            serde_json::to_vec(&CreditRequest::new(credit, envelope, again))
        })
        .await
    }

    async fn cancel(&mut self, cancel: &Cancel) -> Reply {
        self.call(Operation::Cancel, |envelope, again| {
            serde_json::to_vec(&CancelRequest::new(cancel, envelope, again))
        })
        .await
    }

    /// The test player's balance, as `/balance` says it.
    async fn balance(&mut self) -> Result<i64, String> {
        let (player, currency) = (self.options.player.clone(), self.options.currency.clone());
        let reply = self
            .call(Operation::Balance, |envelope, _| {
                serde_json::to_vec(&BalanceRequest {
                    envelope,
                    player_id: player.clone(),
                    currency: currency.clone(),
                })
            })
            .await;
        let answer = self.decided(&reply)?;
        match (answer.status, answer.balance_minor) {
            (Status::Ok, Some(balance)) if answer.currency.as_deref() == Some(&currency) => {
                Ok(balance)
            }
            (Status::Ok, Some(_)) => Err(format!(
                "the balance answer's currency is {:?}, not {currency}",
                answer.currency
            )),
            _ => Err(format!(
                "the balance of {player} was answered {}",
                self.describe(&reply)
            )),
        }
    }

    /// The answer, if the reply is one.
    fn decided<'r>(&self, reply: &'r Reply) -> Result<&'r Answer, String> {
        match reply {
            Reply::Answer { answer, .. } => Ok(answer),
            Reply::Not(why) => Err(why.clone()),
        }
    }

    fn describe(&self, reply: &Reply) -> String {
        match reply {
            Reply::Not(why) => why.clone(),
            Reply::Answer {
                http_status,
                answer,
            } => {
                let mut text = answer.status.as_str().to_owned();
                if let Some(balance) = answer.balance_minor {
                    text.push_str(&format!(", balance {}", self.money(balance)));
                }
                if answer.replayed {
                    text.push_str(", replayed");
                }
                if *http_status != answer.status.http_status().as_u16() {
                    text.push_str(&format!(" (HTTP {http_status})"));
                }
                if let Some(message) = &answer.message {
                    text.push_str(&format!(": {message}"));
                }
                text
            }
        }
    }

    /// `OK` with `balance` and `replayed` as expected.
    fn ok(&self, reply: &Reply, balance: i64, replayed: bool) -> Result<String, String> {
        let answer = self.decided(reply)?;
        let seen = self.describe(reply);
        if answer.status != Status::Ok {
            return Err(format!("{seen}; expected OK"));
        }
        if answer.balance_minor != Some(balance) {
            return Err(format!("{seen}; expected balance {}", self.money(balance)));
        }
        if answer.replayed != replayed {
            return Err(format!(
                "{seen}; expected replayed: {replayed} (it says whether the id was answered \
                 before)"
            ));
        }
        Ok(seen)
    }

    fn status(&self, reply: &Reply, status: Status) -> Result<String, String> {
        let answer = self.decided(reply)?;
        let seen = self.describe(reply);
        if answer.status == status {
            Ok(seen)
        } else {
            Err(format!("{seen}; expected {}", status.as_str()))
        }
    }

    fn refused_signature(&self, reply: &Reply) -> Result<(), String> {
        match reply {
            Reply::Answer {
                http_status: 401,
                answer,
            } if answer.status == Status::InvalidSignature => Ok(()),
            other => Err(format!(
                "{}; expected HTTP 401 INVALID_SIGNATURE",
                self.describe(other)
            )),
        }
    }

    /// The balance is still `expected`.
    async fn unmoved(&mut self, expected: i64, after: &str) -> Result<String, String> {
        match self.balance().await {
            Ok(balance) if balance == expected => {
                Ok(format!("nothing moved: balance {}", self.money(balance)))
            }
            Ok(balance) => Err(format!(
                "after {after} the balance is {}, expected {}",
                self.money(balance),
                self.money(expected)
            )),
            Err(why) => Err(why),
        }
    }

    /// The balance the next check starts from: `expected` after a check that passed, the
    /// operator's own after one that failed.
    async fn settle(&mut self, expected: i64, passed: bool) -> i64 {
        if passed {
            expected
        } else {
            self.balance().await.unwrap_or(expected)
        }
    }

    fn signed(&self) -> Result<String, String> {
        match self.faults.as_slice() {
            [] if self.answers > 0 => Ok(format!(
                "each of {} answers signed with the shared secret and naming its request",
                self.answers
            )),
            [] => Err("no answer came".to_owned()),
            [first, ..] => Err(format!(
                "{} of {} answers not signed right or not naming their request; the first: \
                 {first}",
                self.faults.len(),
                self.answers
            )),
        }
    }

    fn in_time(&self) -> Result<String, String> {
        let limit = self.options.limit;
        match self.slowest.filter(|_| self.answers > 0) {
            None => Err("no answer came".to_owned()),
            Some((took, operation)) if took <= limit => Ok(format!(
                "the slowest in {} ms ({}), the limit is {} ms",
                took.as_millis(),
                operation.name(),
                limit.as_millis()
            )),
            Some((took, operation)) => Err(format!(
                "a {} took {} ms; the tables give up on a debit after {} ms and cancel it",
                operation.name(),
                took.as_millis(),
                limit.as_millis()
            )),
        }
    }
}
