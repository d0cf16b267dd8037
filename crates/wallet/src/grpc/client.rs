//! [`GrpcWallet`]: a [`Wallet`] and [`Cashier`] over WalletService, for a broadcaster
//! (`--wallet grpc://…`) and `banco cashier`.
//!
//! A call's outcome is known only from an answer: a receipt, a refusal, or a status that
//! says nothing moved (an invalid request, a refused token). Anything else (a lost
//! connection, the per-call timeout, UNAVAILABLE, DEADLINE_EXCEEDED, a reset stream) is
//! [`WalletError::Unavailable`], which the caller sends again with the same id.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use banco_auth::{BearerToken, ClientTls};
use banco_wire::pb;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use super::convert::{answer_of, debit_answer_of};
use crate::api::{
    AccountView, BalanceChange, BoxFuture, Cancel, Cash, Cashier, Changes, Credit, Debit,
    LimitChange, Receipt, SelfLimit, TableRounds, Wallet, WalletError, debit_each, no_answer,
};
use crate::store::Movement;

type Client = WalletServiceClient<InterceptedService<Channel, BearerToken>>;

/// Why a [`GrpcWallet`] could not be set up; each names the URL or what it lacks.
#[derive(Debug, thiserror::Error)]
pub enum GrpcWalletError {
    #[error(
        "wallet URL `{0}`: expected grpc://HOST:PORT (plaintext, this machine only) or grpcs://HOST:PORT (TLS)"
    )]
    BadUrl(String),
    #[error(
        "wallet URL `{0}`: plaintext grpc:// only reaches this machine (127.0.0.1, ::1, localhost); use grpcs:// beyond it"
    )]
    PlaintextBeyondLoopback(String),
    #[error("wallet URL `{0}`: grpcs:// needs the CA that signed the wallet's certificate")]
    NeedsCa(String),
    #[error("wallet URL `{url}`: {error}")]
    Tls {
        url: String,
        error: tonic::transport::Error,
    },
}

/// How a [`GrpcWallet`] calls.
#[derive(Clone, Copy, Debug)]
pub struct GrpcWalletOptions {
    /// The longest a call may take before it is [`WalletError::Unavailable`].
    pub timeout: Duration,
}

impl Default for GrpcWalletOptions {
    fn default() -> GrpcWalletOptions {
        GrpcWalletOptions {
            timeout: Duration::from_secs(3),
        }
    }
}

/// A page of a statement or of a reconciliation's movements, and the token of the next
/// (`None`: the last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub movements: Vec<Movement>,
    pub next_page_token: Option<String>,
}

/// WalletService as a [`Wallet`] and a [`Cashier`]; cheap to clone.
#[derive(Clone)]
pub struct GrpcWallet {
    client: Client,
    url: String,
    options: GrpcWalletOptions,
    /// Started by the first [`Wallet::changes`]: WatchBalances, reconnecting.
    watch: Arc<OnceLock<Watcher>>,
    /// The wallet answered DebitMany UNIMPLEMENTED (an older `banco wallet`).
    no_debit_many: Arc<AtomicBool>,
}

impl fmt::Debug for GrpcWallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcWallet")
            .field("url", &self.url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The task that feeds the changes, stopped with the last clone of its wallet.
#[derive(Debug)]
struct Watcher {
    changes: broadcast::Sender<Changes>,
    task: JoinHandle<()>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The first and the longest wait before watching again after a watch ended.
const WATCH_RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

impl GrpcWallet {
    /// A wallet at `url`: `grpc://HOST:PORT` (plaintext, to this machine only) or
    /// `grpcs://HOST:PORT` (TLS trusting `tls`'s CA), each call carrying `token` (a
    /// `service` token for a table, `cashier` for the cashier). Connects on first use, so
    /// a wallet not up yet is [`WalletError::Unavailable`] until it is. Must be called
    /// within a Tokio runtime.
    pub fn connect(
        url: &str,
        tls: Option<&ClientTls>,
        token: BearerToken,
        options: GrpcWalletOptions,
    ) -> Result<GrpcWallet, GrpcWalletError> {
        let bad = || GrpcWalletError::BadUrl(url.to_owned());
        let (secure, rest) = if let Some(rest) = url.strip_prefix("grpcs://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("grpc://") {
            (false, rest)
        } else {
            return Err(bad());
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err(bad());
        }
        let scheme = if secure { "https" } else { "http" };
        let mut endpoint =
            Endpoint::from_shared(format!("{scheme}://{authority}")).map_err(|_| bad())?;
        let host = endpoint.uri().host().ok_or_else(bad)?.to_owned();
        if endpoint.uri().port_u16().is_none() {
            return Err(bad());
        }
        if secure {
            let tls = tls.ok_or_else(|| GrpcWalletError::NeedsCa(url.to_owned()))?;
            endpoint = endpoint
                .tls_config(tls.config())
                .map_err(|error| GrpcWalletError::Tls {
                    url: url.to_owned(),
                    error,
                })?;
        } else if !is_loopback(&host) {
            return Err(GrpcWalletError::PlaintextBeyondLoopback(url.to_owned()));
        }
        let channel = endpoint
            .connect_timeout(options.timeout)
            .tcp_nodelay(true)
            .connect_lazy();
        Ok(GrpcWallet {
            client: WalletServiceClient::with_interceptor(channel, token),
            url: url.to_owned(),
            options,
            watch: Arc::new(OnceLock::new()),
            no_debit_many: Arc::new(AtomicBool::new(false)),
        })
    }

    /// `message` as a request the server drops when the caller no longer waits.
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.options.timeout);
        request
    }

    /// One call, within the timeout; its reply, or why there is none.
    async fn call<Rep>(
        &self,
        call: impl Future<Output = Result<tonic::Response<Rep>, Status>>,
    ) -> Result<Rep, WalletError> {
        match self.answer(call).await? {
            Ok(reply) => Ok(reply),
            Err(status) => Err(status_error(&self.url, &status)),
        }
    }

    /// The reply or the status of `call`, or no answer within the timeout.
    async fn answer<Rep>(
        &self,
        call: impl Future<Output = Result<tonic::Response<Rep>, Status>>,
    ) -> Result<Result<Rep, Status>, WalletError> {
        match tokio::time::timeout(self.options.timeout, call).await {
            Ok(answer) => Ok(answer.map(tonic::Response::into_inner)),
            Err(_) => Err(WalletError::Unavailable(format!(
                "{}: no answer within {} ms",
                self.url,
                self.options.timeout.as_millis()
            ))),
        }
    }

    /// A movement's call: its receipt or its refusal.
    async fn movement(
        &self,
        call: impl Future<Output = Result<tonic::Response<pb::MovementReply>, Status>>,
    ) -> Result<Receipt, WalletError> {
        let reply = self.call(call).await?;
        answer_of(reply).map_err(|e| self.unreadable(&e))?
    }

    /// An answer this client cannot read: what it says is unknown, so it is treated as
    /// no answer (a retry with the same id gets it again).
    fn unreadable(&self, error: &banco_wire::ConversionError) -> WalletError {
        WalletError::Unavailable(format!("{}: unreadable answer: {error}", self.url))
    }

    /// Blocks (`true`) or unblocks the account; a `cashier` token.
    pub async fn set_blocked(
        &self,
        player: &str,
        currency: &str,
        blocked: bool,
    ) -> Result<AccountView, WalletError> {
        let request = pb::BlockRequest {
            player_id: player.to_owned(),
            currency: currency.to_owned(),
        };
        let mut client = self.client.clone();
        let request = self.request(request);
        let account = if blocked {
            self.call(client.block(request)).await?
        } else {
            self.call(client.unblock(request)).await?
        };
        AccountView::try_from(account).map_err(|e| self.unreadable(&e))
    }

    /// One page of the player's movements, newest first; a `cashier` or `auditor` token.
    pub async fn statement(
        &self,
        player: &str,
        currency: &str,
        page_size: u32,
        page_token: Option<&str>,
    ) -> Result<Statement, WalletError> {
        let request = pb::StatementRequest {
            player_id: player.to_owned(),
            currency: currency.to_owned(),
            page_size,
            page_token: page_token.unwrap_or_default().to_owned(),
        };
        let mut client = self.client.clone();
        let reply = self.call(client.statement(self.request(request))).await?;
        self.page(reply.movements, reply.next_page_token)
    }

    /// One page of every movement `request` selects (a period and/or a table), oldest
    /// first, what a reconciliation reads; an `auditor` token. `request.page_token`: the
    /// previous page's `next_page_token`.
    pub async fn movements(&self, request: pb::MovementsRequest) -> Result<Statement, WalletError> {
        let mut client = self.client.clone();
        let reply = self.call(client.movements(self.request(request))).await?;
        self.page(reply.movements, reply.next_page_token)
    }

    /// A reply's movements, read, and its next page.
    fn page(
        &self,
        movements: Vec<pb::Movement>,
        next_page_token: String,
    ) -> Result<Statement, WalletError> {
        let movements = movements
            .into_iter()
            .enumerate()
            .map(|(i, m)| Movement::try_from(m).map_err(|e| e.within(&format!("movements[{i}]"))))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.unreadable(&e))?;
        Ok(Statement {
            movements,
            next_page_token: Some(next_page_token).filter(|t| !t.is_empty()),
        })
    }

    fn watcher(&self) -> Option<&Watcher> {
        if let Some(watcher) = self.watch.get() {
            return Some(watcher);
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(self.watch.get_or_init(|| {
            let (changes, _) = broadcast::channel(4096);
            let task = runtime.spawn(watch(
                self.client.clone(),
                self.url.clone(),
                changes.clone(),
            ));
            Watcher { changes, task }
        }))
    }
}

/// WatchBalances into `changes`, watching again whenever a watch ends.
async fn watch(mut client: Client, url: String, changes: broadcast::Sender<Changes>) {
    use pb::watch_balances_reply::Event;
    let mut wait = WATCH_RETRY.0;
    loop {
        match client.watch_balances(pb::WatchBalancesRequest {}).await {
            Ok(stream) => {
                tracing::info!(wallet = %url, "watching balance changes");
                wait = WATCH_RETRY.0;
                let mut stream = stream.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(pb::WatchBalancesReply {
                            event: Some(Event::Change(change)),
                        })) => match BalanceChange::try_from(change) {
                            // No receiver now is no error: nobody shows a balance yet.
                            Ok(change) => drop(changes.send(Changes::from([change]))),
                            Err(e) => {
                                tracing::warn!(wallet = %url, "unreadable balance change: {e}")
                            }
                        },
                        Ok(Some(pb::WatchBalancesReply {
                            event: Some(Event::Missed(missed)),
                        })) => tracing::warn!(
                            wallet = %url,
                            missed,
                            "fell behind the wallet's balance changes"
                        ),
                        Ok(Some(pb::WatchBalancesReply { event: None })) => {}
                        Ok(None) => break,
                        Err(status) => {
                            tracing::warn!(wallet = %url, "balance changes: {}", status.message());
                            break;
                        }
                    }
                }
            }
            Err(status) => {
                tracing::warn!(wallet = %url, code = ?status.code(), "cannot watch balance changes: {}", status.message());
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(WATCH_RETRY.1);
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A status as the wallet's error: the codes that say nothing moved are the request's
/// fault; every other leaves the outcome unknown.
fn status_error(url: &str, status: &Status) -> WalletError {
    match status.code() {
        Code::InvalidArgument
        | Code::OutOfRange
        | Code::FailedPrecondition
        | Code::NotFound
        | Code::AlreadyExists
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::Unimplemented => WalletError::Invalid(format!(
            "{url}: {}: {}",
            banco_serving::code_label(status.code()),
            status.message()
        )),
        _ => WalletError::Unavailable(format!(
            "{url}: {}: {}",
            banco_serving::code_label(status.code()),
            status.message()
        )),
    }
}

impl Wallet for GrpcWallet {
    fn account<'a>(
        &'a self,
        player: &'a str,
        currency: &'a str,
    ) -> BoxFuture<'a, Result<AccountView, WalletError>> {
        Box::pin(async move {
            let request = pb::BalanceRequest {
                player_id: player.to_owned(),
                currency: currency.to_owned(),
            };
            let mut client = self.client.clone();
            let account = self.call(client.balance(self.request(request))).await?;
            AccountView::try_from(account).map_err(|e| self.unreadable(&e))
        })
    }

    fn debit<'a>(&'a self, debit: &'a Debit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move {
            let mut client = self.client.clone();
            let request = self.request(pb::DebitRequest::from(debit));
            self.movement(client.debit(request)).await
        })
    }

    /// One DebitMany call (one transaction of the wallet's store) for them all; each on its
    /// own against a wallet too old to have DebitMany.
    fn debit_many<'a>(
        &'a self,
        debits: &'a [Debit],
        timeout: Duration,
    ) -> BoxFuture<'a, Vec<Result<Receipt, WalletError>>> {
        Box::pin(async move {
            if self.no_debit_many.load(Ordering::Relaxed) {
                return debit_each(self, debits, timeout).await;
            }
            let timeout = timeout.min(self.options.timeout);
            let mut client = self.client.clone();
            let mut request = tonic::Request::new(pb::DebitManyRequest {
                debits: debits.iter().map(pb::DebitRequest::from).collect(),
            });
            request.set_timeout(timeout);
            let every = |error: WalletError| vec![Err(error); debits.len()];
            let reply = match tokio::time::timeout(timeout, client.debit_many(request)).await {
                Ok(Ok(reply)) => reply.into_inner(),
                Ok(Err(status)) if status.code() == Code::Unimplemented => {
                    tracing::info!(wallet = %self.url, "the wallet has no DebitMany: each debit goes on its own");
                    self.no_debit_many.store(true, Ordering::Relaxed);
                    return debit_each(self, debits, timeout).await;
                }
                Ok(Err(status)) => return every(status_error(&self.url, &status)),
                Err(_) => {
                    return debits.iter().map(|d| Err(no_answer(d, timeout))).collect();
                }
            };
            if reply.answers.len() != debits.len() {
                return every(WalletError::Unavailable(format!(
                    "{}: {} answers to {} debits",
                    self.url,
                    reply.answers.len(),
                    debits.len()
                )));
            }
            reply
                .answers
                .into_iter()
                .enumerate()
                .map(|(i, answer)| {
                    debit_answer_of(answer)
                        .map_err(|e| self.unreadable(&e.within(&format!("answers[{i}]"))))?
                })
                .collect()
        })
    }

    fn credit<'a>(&'a self, credit: &'a Credit) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move {
            let mut client = self.client.clone();
            let request = self.request(pb::CreditRequest::from(credit));
            self.movement(client.credit(request)).await
        })
    }

    fn cancel<'a>(&'a self, cancel: &'a Cancel) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move {
            let mut client = self.client.clone();
            let request = self.request(pb::CancelRequest::from(cancel));
            self.movement(client.cancel(request)).await
        })
    }

    /// The change's `now_ms` is not sent: the wallet's own clock decides when a raise takes effect, the
    /// same for every table.
    fn set_self_limit<'a>(
        &'a self,
        change: &'a LimitChange,
    ) -> BoxFuture<'a, Result<SelfLimit, WalletError>> {
        Box::pin(async move {
            let request = pb::WalletSelfLimitRequest {
                player_id: change.player.clone(),
                currency: change.currency.clone(),
                max_bet_minor: change.max_bet.unwrap_or(0),
            };
            let mut client = self.client.clone();
            let limit = self
                .call(client.set_self_limit(self.request(request)))
                .await?;
            SelfLimit::try_from(limit).map_err(|e| self.unreadable(&e))
        })
    }

    fn changes(&self) -> Option<broadcast::Receiver<Changes>> {
        self.watcher().map(|w| w.changes.subscribe())
    }

    fn table_rounds<'a>(
        &'a self,
        table: &'a str,
    ) -> BoxFuture<'a, Result<TableRounds, WalletError>> {
        Box::pin(async move {
            let request = pb::TableRoundsRequest {
                table_id: table.to_owned(),
            };
            let mut client = self.client.clone();
            match self
                .answer(client.table_rounds(self.request(request)))
                .await?
            {
                Ok(reply) => Ok(Some(reply.newest_round_id)
                    .filter(|round| !round.is_empty())
                    .into()),
                // A `banco wallet` from before the call.
                Err(status) if status.code() == tonic::Code::Unimplemented => {
                    Ok(TableRounds::CannotTell)
                }
                Err(status) => Err(status_error(&self.url, &status)),
            }
        })
    }
}

impl Cashier for GrpcWallet {
    fn deposit<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move {
            let mut client = self.client.clone();
            let request = self.request(pb::CashRequest::from(cash));
            self.movement(client.deposit(request)).await
        })
    }

    fn withdraw<'a>(&'a self, cash: &'a Cash) -> BoxFuture<'a, Result<Receipt, WalletError>> {
        Box::pin(async move {
            let mut client = self.client.clone();
            let request = self.request(pb::CashRequest::from(cash));
            self.movement(client.withdraw(request)).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn token() -> BearerToken {
        BearerToken::new("banco1.e30.AAAA").unwrap()
    }

    #[tokio::test]
    async fn wallet_urls_are_grpc_or_grpcs_and_plaintext_stays_on_this_machine() {
        let options = GrpcWalletOptions::default();
        for ok in [
            "grpc://127.0.0.1:7104",
            "grpc://localhost:7104/",
            "grpc://[::1]:7104",
        ] {
            assert!(
                GrpcWallet::connect(ok, None, token(), options).is_ok(),
                "{ok}"
            );
        }
        for (url, says) in [
            ("http://127.0.0.1:7104", "expected grpc://"),
            ("grpc://127.0.0.1", "expected grpc://"),
            ("grpc://127.0.0.1:7104/banco", "expected grpc://"),
            (
                "grpc://wallet.casino.example:7104",
                "only reaches this machine",
            ),
            ("grpcs://wallet.casino.example:7104", "needs the CA"),
        ] {
            let err = GrpcWallet::connect(url, None, token(), options).unwrap_err();
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn only_statuses_that_say_nothing_moved_are_decisions() {
        let invalid = status_error("u", &Status::invalid_argument("amount_minor"));
        assert!(matches!(invalid, WalletError::Invalid(m) if m.contains("amount_minor")));
        for code in [
            Code::Unavailable,
            Code::DeadlineExceeded,
            Code::Unknown,
            Code::Internal,
            Code::Cancelled,
        ] {
            assert!(
                status_error("u", &Status::new(code, "x")).is_transient(),
                "{code:?}"
            );
        }
    }
}
