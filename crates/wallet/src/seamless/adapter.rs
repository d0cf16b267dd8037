//! [`SeamlessWallet`]: the [`Wallet`] trait over the seamless protocol, to an operator's own
//! wallet. Each call is one movement with one transaction id; each HTTP attempt at it has a
//! fresh request id, and every attempt after the first says `retransmission`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::client::{Fault, HttpClient};
use super::endpoint::Endpoint;
use super::protocol::{
    Answer, BalanceRequest, CancelRequest, CreditRequest, DebitRequest, Envelope, Movement,
    Operation, Status, now_ms,
};
use super::signature::SeamlessSecret;
use crate::api::{
    AccountView, BoxFuture, Cancel, Changes, Credit, Debit, LimitChange, Receipt, SelfLimit,
    Wallet, WalletError,
};

/// How long banco waits for the operator, and how it retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeamlessConfig {
    /// A debit (or a balance) with no valid answer by then is answered
    /// [`WalletError::Unavailable`]: the table then cancels the debit.
    pub debit_limit: Duration,
    /// The same for credits and cancels; `None`: they are retried until the operator
    /// decides (the money is owed to the player).
    pub settle_limit: Option<Duration>,
    /// One HTTP attempt (never longer than what is left of the call's limit).
    pub attempt_timeout: Duration,
    /// The wait before the first retry; it doubles at each retry, up to `backoff_max`,
    /// each wait drawn between half of it and all of it so that tables spread out.
    pub backoff_first: Duration,
    pub backoff_max: Duration,
}

impl Default for SeamlessConfig {
    fn default() -> SeamlessConfig {
        SeamlessConfig {
            debit_limit: Duration::from_secs(3),
            settle_limit: None,
            attempt_timeout: Duration::from_secs(10),
            backoff_first: Duration::from_millis(50),
            backoff_max: Duration::from_secs(2),
        }
    }
}

/// An operator's wallet. Self-limits are banco's, not the operator's: they live in the
/// `local` wallet (banco's store), which a debit's `position_total` is checked against
/// before the operator is asked.
pub struct SeamlessWallet {
    client: HttpClient,
    secret: SeamlessSecret,
    local: Arc<dyn Wallet>,
    config: SeamlessConfig,
}

impl fmt::Debug for SeamlessWallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeamlessWallet")
            .field("endpoint", self.client.endpoint())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SeamlessWallet {
    pub fn new(
        endpoint: Endpoint,
        secret: SeamlessSecret,
        local: Arc<dyn Wallet>,
        config: SeamlessConfig,
    ) -> SeamlessWallet {
        SeamlessWallet {
            client: HttpClient::new(endpoint),
            secret,
            local,
            config,
        }
    }

    /// Sends the request `body` builds (from each attempt's envelope and whether it is a
    /// retransmission) until an answer is the operator's decision on `operation`, or
    /// `limit` has passed: then `Unavailable`, naming the last fault.
    async fn call<F>(
        &self,
        operation: Operation,
        what: &str,
        currency: &str,
        limit: Option<Duration>,
        body: F,
    ) -> Result<Answer, WalletError>
    where
        F: Fn(Envelope, bool) -> Result<Vec<u8>, serde_json::Error>,
    {
        let started = Instant::now();
        let deadline = limit.map(|limit| started + limit);
        let mut backoff = self.config.backoff_first;
        let mut attempt = 0_u32;
        // What the error names: the last attempt's fault, but for a timeout of an attempt
        // the limit cut short, which says less than the fault before it.
        let mut telling: Option<Fault> = None;
        loop {
            attempt = attempt.saturating_add(1);
            let request_id = banco_auth::client::fresh_id()
                .map_err(|e| WalletError::Unavailable(format!("no request id: {e}")))?;
            let envelope = Envelope {
                operation,
                request_id: request_id.clone(),
                timestamp_ms: now_ms(),
            };
            let body = Bytes::from(body(envelope, attempt > 1).map_err(|e| {
                WalletError::Invalid(format!("{what} cannot be written as JSON: {e}"))
            })?);
            let signature = self.secret.sign(&body);
            let timeout = match deadline {
                Some(deadline) => self
                    .config
                    .attempt_timeout
                    .min(deadline.saturating_duration_since(Instant::now())),
                None => self.config.attempt_timeout,
            };
            let exchange = self.client.post(operation, body, Some(&signature));
            let fault = match tokio::time::timeout(timeout, exchange).await {
                Err(_) => Fault::Timeout(timeout.as_millis()),
                Ok(Err(fault)) => fault,
                Ok(Ok(exchange)) => match exchange.answer(&self.secret, &request_id) {
                    Err(fault) => fault,
                    Ok(answer) => match answer.check(operation, currency) {
                        Ok(()) => return Ok(answer),
                        Err(why) => Fault::NotADecision(why),
                    },
                },
            };
            tracing::warn!(
                operation = operation.name(),
                what,
                request_id,
                attempt,
                %fault,
                url = self.client.endpoint().url(operation),
                "seamless wallet: no valid answer"
            );
            let cut_short =
                matches!(fault, Fault::Timeout(_)) && timeout < self.config.attempt_timeout;
            if !cut_short || telling.is_none() {
                telling = Some(fault);
            }
            let wait = jittered(backoff);
            backoff = (backoff * 2).min(self.config.backoff_max);
            let gave_up = || {
                let last = telling
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                WalletError::Unavailable(format!(
                    "the operator's wallet gave no valid answer to {what} within {} ms \
                     ({attempt} attempts; the last: {last})",
                    limit.unwrap_or_default().as_millis()
                ))
            };
            if let Some(deadline) = deadline
                && Instant::now() + wait >= deadline
            {
                return Err(gave_up());
            }
            tokio::time::sleep(wait).await;
            // A sleep that overran the limit (a busy machine) leaves no time for another
            // attempt, which would only send a request it could not wait for.
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(gave_up());
            }
        }
    }

    async fn balance(&self, player: &str, currency: &str) -> Result<AccountView, WalletError> {
        let answer = self
            .call(
                Operation::Balance,
                &format!("the balance of {player}"),
                currency,
                Some(self.config.debit_limit),
                |envelope, _| {
                    serde_json::to_vec(&BalanceRequest {
                        envelope,
                        player_id: player.to_owned(),
                        currency: currency.to_owned(),
                    })
                },
            )
            .await?;
        let view = |blocked| AccountView {
            player: player.to_owned(),
            currency: currency.to_owned(),
            balance: answer.balance_minor.unwrap_or_default(),
            blocked,
            self_limit: SelfLimit::default(),
            // The protocol's answers carry no order: the last one heard is the newest.
            version: None,
        };
        match answer.status {
            Status::Ok => Ok(view(false)),
            Status::AccountBlocked => Ok(view(true)),
            Status::InvalidSession => Err(WalletError::InvalidSession(
                answer.message.unwrap_or_default(),
            )),
            _ => Err(WalletError::Invalid(answer.message.unwrap_or_default())),
        }
    }

    async fn debit_checked(&self, debit: &Debit) -> Result<Receipt, WalletError> {
        let limits = self.local.account(&debit.player, &debit.currency).await?;
        if let Some(limit) = limits.self_limit.max_bet
            && debit.position_total > limit
        {
            return Err(WalletError::SelfLimit {
                limit,
                asked: debit.position_total,
            });
        }
        let answer = self
            .call(
                Operation::Debit,
                &format!("debit {}", debit.tx),
                &debit.currency,
                Some(self.config.debit_limit),
                |envelope, again| serde_json::to_vec(&DebitRequest::new(debit, envelope, again)),
            )
            .await?;
        answer.decision(&Movement {
            tx: &debit.tx,
            amount: debit.amount,
            position_total: debit.position_total,
            debit: &debit.tx,
        })
    }

    async fn credit_sent(&self, credit: &Credit) -> Result<Receipt, WalletError> {
        let answer = self
            .call(
                Operation::Credit,
                &format!("credit {}", credit.tx),
                &credit.currency,
                self.config.settle_limit,
                |envelope, again| serde_json::to_vec(&CreditRequest::new(credit, envelope, again)),
            )
            .await?;
        // With no debit named, the answer is about the credit's own id.
        let first = credit.debits.first().unwrap_or(&credit.tx);
        answer.decision(&Movement {
            tx: &credit.tx,
            amount: credit.amount,
            position_total: credit.amount,
            debit: first,
        })
    }

    async fn cancel_sent(&self, cancel: &Cancel) -> Result<Receipt, WalletError> {
        let answer = self
            .call(
                Operation::Cancel,
                &format!("cancel {} of debit {}", cancel.tx, cancel.debit),
                &cancel.currency,
                self.config.settle_limit,
                |envelope, again| serde_json::to_vec(&CancelRequest::new(cancel, envelope, again)),
            )
            .await?;
        if answer.status == Status::BetDoesNotExist {
            // The operator never took the debit and remembers the cancel: nothing to give
            // back, and the debit will be refused if it arrives.
            return Ok(Receipt {
                tx: cancel.tx.clone(),
                balance: answer.balance_minor.unwrap_or_default(),
                currency: cancel.currency.clone(),
                replayed: answer.replayed,
                version: None,
            });
        }
        answer.decision(&Movement {
            tx: &cancel.tx,
            amount: cancel.amount,
            position_total: cancel.amount,
            debit: &cancel.debit,
        })
    }
}

/// A wait between half of `backoff` and all of it.
fn jittered(backoff: Duration) -> Duration {
    let mut byte = [0u8; 1];
    // Without randomness the wait is the longest: still a backoff.
    let fraction = match getrandom::fill(&mut byte) {
        Ok(()) => 0.5 + f64::from(byte[0]) / 512.0,
        Err(_) => 1.0,
    };
    backoff.mul_f64(fraction)
}

impl Wallet for SeamlessWallet {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        Box::pin(async move {
            let (operator, local) = tokio::join!(
                self.balance(player, currency),
                self.local.account(player, currency)
            );
            Ok(AccountView {
                self_limit: local?.self_limit,
                ..operator?
            })
        })
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.debit_checked(debit))
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.credit_sent(credit))
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(self.cancel_sent(cancel))
    }

    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        self.local.set_self_limit(change)
    }

    /// An operator's wallet tells nobody of its changes.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<Changes>> {
        None
    }
}
