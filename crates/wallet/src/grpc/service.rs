//! The WalletService handlers: each checks the caller's role, converts the request, asks
//! the store, and converts the answer back; a refusal is the reply's `refusal`, an invalid
//! request or an outage a status (one [`From<WalletError>`] for `Status`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use banco_auth::Role;
use banco_serving::{RequestMetrics, code_label, require_role};
use banco_wire::convert::ms_of_timestamp;
use banco_wire::pb::wallet_service_server::WalletService;
use banco_wire::{ConversionError, pb};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::convert::{self, movement_reply};
use crate::api::{
    Cancel, Cash, Cashier as _, Credit, Debit, LimitChange, Receipt, Wallet as _, WalletError,
};
use crate::store::{Clock, MovementFilter, Page, Store, StoreError};

/// Every role the interceptor lets through; each handler then admits its own.
pub const ALLOWED_ROLES: [Role; 3] = [Role::Service, Role::Cashier, Role::Auditor];

const TABLES: &[Role] = &[Role::Service];
const CASHIER: &[Role] = &[Role::Cashier];

/// The most debits one DebitMany carries (what one transaction of the store decides).
const MAX_DEBITS: usize = 1024;

/// How long a DebitMany waits for the store's commit: the caller's own deadline ends the
/// call sooner; the debits of a commit that comes later still stand, and a retry is
/// answered with them.
const DEBIT_MANY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The changes a watcher may fall behind by before it is told it missed some.
const WATCH_BUFFER: usize = 256;

impl From<WalletError> for Status {
    fn from(error: WalletError) -> Status {
        match error {
            WalletError::Invalid(why) => Status::invalid_argument(why),
            WalletError::Unavailable(why) => Status::unavailable(why),
            // Only where a reply has no `refusal`: nothing moved.
            refused => Status::failed_precondition(refused.to_string()),
        }
    }
}

fn invalid(error: ConversionError) -> Status {
    Status::invalid_argument(error.to_string())
}

fn store_failed(error: StoreError) -> Status {
    match error {
        StoreError::Corrupt(_) => Status::data_loss(error.to_string()),
        StoreError::UnknownPage { .. } => Status::invalid_argument(format!("page_token: {error}")),
        other => Status::unavailable(format!("the wallet's database failed: {other}")),
    }
}

/// The WalletService implementation over banco's own store.
#[derive(Clone, Debug)]
pub struct WalletServer {
    store: Store,
    /// The wallet's time for self-limits: the same clock as the store's.
    clock: Arc<dyn Clock>,
    metrics: Option<RequestMetrics>,
    /// Turns true when the server stops, ending every WatchBalances stream (a graceful stop
    /// waits for the calls in progress, and a watch never ends by itself).
    stopping: watch::Receiver<bool>,
}

impl WalletServer {
    pub fn new(store: Store, clock: Arc<dyn Clock>, stopping: watch::Receiver<bool>) -> Self {
        WalletServer {
            store,
            clock,
            metrics: None,
            stopping,
        }
    }

    /// Counts every request into `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: RequestMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn count(&self, rpc: &'static str, label: &'static str, started: Instant) {
        if let Some(metrics) = &self.metrics {
            metrics.observe(rpc, label, started.elapsed());
        }
    }

    /// Answers a call whose reply has no refusal, counted by its code.
    async fn plain<T>(
        &self,
        rpc: &'static str,
        answer: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        let started = Instant::now();
        let result = answer.await;
        let label = match &result {
            Ok(_) => "ok",
            Err(status) => code_label(status.code()),
        };
        self.count(rpc, label, started);
        result.map(Response::new)
    }

    /// Answers a movement: a receipt, a refusal in the reply, or a status; counted by its
    /// result (as the store counts movements: `ok`, `replayed`, or the refusal).
    async fn movement(
        &self,
        rpc: &'static str,
        answer: impl Future<Output = Result<Result<Receipt, WalletError>, Status>>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        let started = Instant::now();
        let (label, result) = match answer.await {
            Ok(Ok(receipt)) => (
                if receipt.replayed { "replayed" } else { "ok" },
                Ok(movement_reply(receipt)),
            ),
            Ok(Err(error)) => {
                let label = refusal_label(&error);
                match convert::refusal(&error) {
                    Some(refusal) => (
                        label,
                        Ok(pb::MovementReply {
                            receipt: None,
                            refusal: Some(refusal),
                        }),
                    ),
                    None => (label, Err(Status::from(error))),
                }
            }
            Err(status) => (code_label(status.code()), Err(status)),
        };
        self.count(rpc, label, started);
        result.map(Response::new)
    }
}

/// The metric label of a refusal, as the store labels its movements.
fn refusal_label(error: &WalletError) -> &'static str {
    crate::store::result_label(&Err(error.clone()))
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchBalancesReply, Status>> + Send>>;

#[tonic::async_trait]
impl WalletService for WalletServer {
    async fn balance(
        &self,
        request: Request<pb::BalanceRequest>,
    ) -> Result<Response<pb::Account>, Status> {
        self.plain("balance", async {
            require_role(&request, &[Role::Service, Role::Cashier])?;
            let r = request.into_inner();
            let view = self.store.account(&r.player_id, &r.currency).await?;
            Ok(pb::Account::from(view))
        })
        .await
    }

    async fn debit(
        &self,
        request: Request<pb::DebitRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.movement("debit", async {
            require_role(&request, TABLES)?;
            let debit = Debit::try_from(request.into_inner()).map_err(invalid)?;
            Ok(self.store.debit(&debit).await)
        })
        .await
    }

    async fn debit_many(
        &self,
        request: Request<pb::DebitManyRequest>,
    ) -> Result<Response<pb::DebitManyReply>, Status> {
        self.plain("debit_many", async {
            require_role(&request, TABLES)?;
            let debits = request.into_inner().debits;
            if debits.len() > MAX_DEBITS {
                return Err(Status::invalid_argument(format!(
                    "debits: {} of them, at most {MAX_DEBITS} in one call",
                    debits.len()
                )));
            }
            // All checked before any is decided: a bad one moves nothing of the others.
            let debits = debits
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    let field = format!("debits[{i}]");
                    let debit = Debit::try_from(d).map_err(|e| invalid(e.within(&field)))?;
                    crate::store::check_debit(&debit)
                        .map_err(|e| Status::invalid_argument(format!("{field}: {e}")))?;
                    Ok(debit)
                })
                .collect::<Result<Vec<_>, Status>>()?;
            let answers = self.store.debit_many(&debits, DEBIT_MANY_WAIT).await;
            Ok(pb::DebitManyReply {
                answers: answers.into_iter().map(convert::debit_answer).collect(),
            })
        })
        .await
    }

    async fn credit(
        &self,
        request: Request<pb::CreditRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.movement("credit", async {
            require_role(&request, TABLES)?;
            let credit = Credit::try_from(request.into_inner()).map_err(invalid)?;
            Ok(self.store.credit(&credit).await)
        })
        .await
    }

    async fn cancel(
        &self,
        request: Request<pb::CancelRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.movement("cancel", async {
            require_role(&request, TABLES)?;
            let cancel = Cancel::try_from(request.into_inner()).map_err(invalid)?;
            Ok(self.store.cancel(&cancel).await)
        })
        .await
    }

    async fn set_self_limit(
        &self,
        request: Request<pb::WalletSelfLimitRequest>,
    ) -> Result<Response<pb::SelfLimit>, Status> {
        self.plain("set_self_limit", async {
            require_role(&request, TABLES)?;
            let r = request.into_inner();
            let max_bet = match r.max_bet_minor {
                0 => None,
                m if m > 0 => Some(m),
                m => {
                    return Err(invalid(ConversionError::invalid(
                        "max_bet_minor",
                        m.to_string(),
                        "a limit is more than zero (0 removes it)",
                    )));
                }
            };
            let limit = self
                .store
                .set_self_limit(&LimitChange {
                    player: r.player_id,
                    currency: r.currency,
                    max_bet,
                    now_ms: self.clock.now_ms(),
                })
                .await?;
            Ok(pb::SelfLimit::from(limit))
        })
        .await
    }

    async fn deposit(
        &self,
        request: Request<pb::CashRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.movement("deposit", async {
            require_role(&request, CASHIER)?;
            let cash = Cash::try_from(request.into_inner()).map_err(invalid)?;
            Ok(self.store.deposit(&cash).await)
        })
        .await
    }

    async fn withdraw(
        &self,
        request: Request<pb::CashRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.movement("withdraw", async {
            require_role(&request, CASHIER)?;
            let cash = Cash::try_from(request.into_inner()).map_err(invalid)?;
            Ok(self.store.withdraw(&cash).await)
        })
        .await
    }

    async fn block(
        &self,
        request: Request<pb::BlockRequest>,
    ) -> Result<Response<pb::Account>, Status> {
        self.plain("block", self.set_blocked(request, true)).await
    }

    async fn unblock(
        &self,
        request: Request<pb::BlockRequest>,
    ) -> Result<Response<pb::Account>, Status> {
        self.plain("unblock", self.set_blocked(request, false))
            .await
    }

    async fn statement(
        &self,
        request: Request<pb::StatementRequest>,
    ) -> Result<Response<pb::StatementReply>, Status> {
        self.plain("statement", async {
            require_role(&request, &[Role::Cashier, Role::Auditor])?;
            let r = request.into_inner();
            // A player or currency that cannot be an account is refused naming it,
            // rather than listed as an empty statement.
            self.store.account(&r.player_id, &r.currency).await?;
            let size = convert::page_size("page_size", r.page_size).map_err(invalid)?;
            let before = convert::page_token("page_token", &r.page_token).map_err(invalid)?;
            let page = self
                .store
                .statement(&r.player_id, &r.currency, before, size)
                .await
                .map_err(store_failed)?;
            let (movements, next_page_token) = page_out(page);
            Ok(pb::StatementReply {
                movements,
                next_page_token,
            })
        })
        .await
    }

    async fn movements(
        &self,
        request: Request<pb::MovementsRequest>,
    ) -> Result<Response<pb::MovementsReply>, Status> {
        self.plain("movements", async {
            require_role(&request, &[Role::Auditor])?;
            let r = request.into_inner();
            let filter = movement_filter(&r).map_err(invalid)?;
            let size = convert::page_size("page_size", r.page_size).map_err(invalid)?;
            let page = self
                .store
                .movements(&filter, size)
                .await
                .map_err(store_failed)?;
            let (movements, next_page_token) = page_out(page);
            Ok(pb::MovementsReply {
                movements,
                next_page_token,
            })
        })
        .await
    }

    async fn table_rounds(
        &self,
        request: Request<pb::TableRoundsRequest>,
    ) -> Result<Response<pb::TableRoundsReply>, Status> {
        self.plain("table_rounds", async {
            require_role(&request, TABLES)?;
            let r = request.into_inner();
            if r.table_id.is_empty() {
                return Err(invalid(ConversionError::missing("table_id")));
            }
            let newest = self
                .store
                .newest_round_of_table(&r.table_id)
                .await
                .map_err(store_failed)?;
            Ok(pb::TableRoundsReply {
                newest_round_id: newest.unwrap_or_default(),
            })
        })
        .await
    }

    type WatchBalancesStream = WatchStream;

    async fn watch_balances(
        &self,
        request: Request<pb::WatchBalancesRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        self.plain("watch_balances", async {
            require_role(&request, TABLES)?;
            let changes = self
                .store
                .changes()
                .ok_or_else(|| Status::unimplemented("this wallet tells no balance changes"))?;
            Ok(Box::pin(watch_stream(changes, self.stopping.clone())) as WatchStream)
        })
        .await
    }
}

impl WalletServer {
    async fn set_blocked(
        &self,
        request: Request<pb::BlockRequest>,
        blocked: bool,
    ) -> Result<pb::Account, Status> {
        require_role(&request, CASHIER)?;
        let r = request.into_inner();
        let view = self
            .store
            .set_blocked(&r.player_id, &r.currency, blocked)
            .await?;
        Ok(pb::Account::from(view))
    }
}

/// The filter of a Movements request, its fields named when they are wrong.
fn movement_filter(r: &pb::MovementsRequest) -> Result<MovementFilter, ConversionError> {
    let from_ms = r
        .from
        .as_ref()
        .map(|t| ms_of_timestamp("from", t))
        .transpose()?;
    let to_ms =
        r.to.as_ref()
            .map(|t| ms_of_timestamp("to", t))
            .transpose()?;
    if let (Some(from), Some(to)) = (from_ms, to_ms)
        && to < from
    {
        return Err(ConversionError::invalid(
            "to",
            to.to_string(),
            format!("before `from` ({from})"),
        ));
    }
    let table = match (r.table_id.as_str(), r.cashier_only) {
        ("", false) => None,
        ("", true) => Some(String::new()),
        (table, false) => Some(table.to_owned()),
        (table, true) => {
            return Err(ConversionError::invalid(
                "cashier_only",
                "true",
                format!("the cashier's movements have no table, and table_id is {table:?}"),
            ));
        }
    };
    Ok(MovementFilter {
        from_ms,
        to_ms,
        table,
        after: convert::page_token("page_token", &r.page_token)?,
    })
}

fn page_out(page: Page) -> (Vec<pb::Movement>, String) {
    (
        page.movements.into_iter().map(pb::Movement::from).collect(),
        page.next.map(|seq| seq.to_string()).unwrap_or_default(),
    )
}

/// The changes of `changes` as WatchBalances replies, until the watcher goes or the
/// server stops (then UNAVAILABLE, so the watcher knows to watch again elsewhere or
/// later).
fn watch_stream(
    mut changes: broadcast::Receiver<crate::api::Changes>,
    mut stopping: watch::Receiver<bool>,
) -> ReceiverStream<Result<pb::WatchBalancesReply, Status>> {
    use pb::watch_balances_reply::Event;
    let (tx, rx) = mpsc::channel(WATCH_BUFFER);
    tokio::spawn(async move {
        loop {
            let events: Vec<Event> = tokio::select! {
                () = stopped(&mut stopping) => {
                    let _ = tx.send(Err(Status::unavailable("the wallet is stopping"))).await;
                    return;
                }
                () = tx.closed() => return,
                changes = changes.recv() => match changes {
                    Ok(changes) => changes.iter().map(|c| Event::Change(c.clone().into())).collect(),
                    // At least this many changes: a message is a commit's changes.
                    Err(broadcast::error::RecvError::Lagged(missed)) => vec![Event::Missed(missed)],
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            for event in events {
                let reply = pb::WatchBalancesReply { event: Some(event) };
                if tx.send(Ok(reply)).await.is_err() {
                    return;
                }
            }
        }
    });
    ReceiverStream::new(rx)
}

/// Once the server stops (or is gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}
