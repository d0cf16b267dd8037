//! A WalletService in front of a real `banco wallet`, for the fault tests: it forwards
//! every call unchanged (the caller's token too), and can be told to act at one exact
//! instant of one call — before the wallet sees a Credit, or just after the wallet has
//! taken a Debit and before its answer is back — such as killing the broadcaster there.
//! Killing a process "between a debit and the bet's journal record" cannot be timed from
//! outside; here it is exact. The wallet behind it can be replaced (restarted on another
//! port) while the broadcaster keeps its connection to the proxy.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banco_wire::pb;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use banco_wire::pb::wallet_service_server::{WalletService, WalletServiceServer};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

/// The calls a trap may be set on: what a table sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Debit,
    Credit,
    Cancel,
}

/// When, in the trapped call, the action runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Before the wallet sees the call: it moves nothing.
    Before,
    /// After the wallet has answered, before the answer goes back: it is lost.
    After,
}

type Action = Box<dyn FnOnce() + Send>;

struct Trap {
    call: Call,
    moment: Moment,
    action: Action,
}

#[derive(Default)]
struct State {
    upstream: Option<Channel>,
    trap: Option<Trap>,
    /// Calls of each kind that reached the wallet.
    forwarded: Vec<Call>,
}

type Shared = Arc<Mutex<State>>;

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The proxy, serving on loopback from [`WalletProxy::start`] until dropped.
pub struct WalletProxy {
    addr: SocketAddr,
    state: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl WalletProxy {
    /// Serves on a free loopback port, forwarding to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> WalletProxy {
        let state = Shared::default();
        let proxy = Forward {
            state: Arc::clone(&state),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the wallet proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let server = tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(WalletServiceServer::new(proxy))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
            if let Err(e) = served {
                eprintln!("wallet proxy: {e}");
            }
        });
        let proxy = WalletProxy {
            addr,
            state,
            server,
        };
        proxy.set_upstream(upstream);
        proxy
    }

    /// `grpc://127.0.0.1:port`, as `--wallet` takes it.
    pub fn wallet_arg(&self) -> String {
        format!("grpc://{}", self.addr)
    }

    /// From now on, calls go to `upstream` (a wallet restarted elsewhere).
    pub fn set_upstream(&self, upstream: &str) {
        let channel = Endpoint::from_shared(upstream.to_owned())
            .expect("an upstream URL")
            .connect_lazy();
        lock(&self.state).upstream = Some(channel);
    }

    /// At the next `call`, runs `action` at `moment`, and answers UNAVAILABLE (the caller
    /// is meant to be gone by then). Once.
    pub fn trap(&self, call: Call, moment: Moment, action: impl FnOnce() + Send + 'static) {
        lock(&self.state).trap = Some(Trap {
            call,
            moment,
            action: Box::new(action),
        });
    }

    /// At `moment` of the next `call`, SIGKILLs process `pid` (`what` names it if that
    /// fails).
    pub fn kill_at(&self, call: Call, moment: Moment, pid: u32, what: &'static str) {
        self.trap(call, moment, move || {
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            assert!(
                matches!(killed, Ok(status) if status.success()),
                "could not kill the {what}: {killed:?}"
            );
        });
    }

    /// Whether the trap set has gone off.
    pub fn sprung(&self) -> bool {
        lock(&self.state).trap.is_none()
    }

    /// Waits up to `limit` for the trap to go off; whether it did.
    pub async fn sprung_within(&self, limit: Duration) -> bool {
        crate::poll(
            limit,
            Duration::from_millis(10),
            async || self.sprung(),
            |s| *s,
        )
        .await
    }

    /// How many calls of `call` reached the wallet.
    pub fn forwarded(&self, call: Call) -> usize {
        lock(&self.state)
            .forwarded
            .iter()
            .filter(|c| **c == call)
            .count()
    }
}

impl std::fmt::Debug for WalletProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalletProxy")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for WalletProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct Forward {
    state: Shared,
}

impl Forward {
    /// The wallet, and the caller's request as the wallet is to receive it.
    fn upstream<T>(
        &self,
        request: Request<T>,
    ) -> Result<(WalletServiceClient<Channel>, Request<T>), Status> {
        let channel = lock(&self.state)
            .upstream
            .clone()
            .ok_or_else(|| Status::unavailable("wallet proxy: no wallet behind it"))?;
        let (metadata, _, message) = request.into_parts();
        let mut forwarded = Request::new(message);
        if let Some(token) = metadata.get("authorization") {
            forwarded
                .metadata_mut()
                .insert("authorization", token.clone());
        }
        Ok((WalletServiceClient::new(channel), forwarded))
    }

    /// The trap's action, if it is set on `call` at `moment`.
    fn spring(&self, call: Call, moment: Moment) -> Option<Action> {
        let mut state = lock(&self.state);
        let armed = state
            .trap
            .as_ref()
            .is_some_and(|t| t.call == call && t.moment == moment);
        if armed {
            state.trap.take().map(|t| t.action)
        } else {
            None
        }
    }

    /// A movement call, before it is forwarded: an error if the trap goes off here.
    fn before(&self, call: Call) -> Result<(), Status> {
        match self.spring(call, Moment::Before) {
            Some(action) => {
                action();
                Err(Status::unavailable(
                    "wallet proxy: trapped before the wallet",
                ))
            }
            None => Ok(()),
        }
    }

    /// A movement call, once the wallet has answered: the answer lost if the trap goes
    /// off here.
    fn after<T>(&self, call: Call, answer: Result<T, Status>) -> Result<T, Status> {
        lock(&self.state).forwarded.push(call);
        match self.spring(call, Moment::After) {
            Some(action) => {
                action();
                Err(Status::unavailable("wallet proxy: the answer was lost"))
            }
            None => answer,
        }
    }
}

type BalanceStream =
    Pin<Box<dyn futures::Stream<Item = Result<pb::WatchBalancesReply, Status>> + Send>>;

#[tonic::async_trait]
impl WalletService for Forward {
    async fn balance(
        &self,
        r: Request<pb::BalanceRequest>,
    ) -> Result<Response<pb::Account>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.balance(r).await
    }

    async fn debit(
        &self,
        r: Request<pb::DebitRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.before(Call::Debit)?;
        let (mut c, r) = self.upstream(r)?;
        let answer = c.debit(r).await;
        self.after(Call::Debit, answer)
    }

    /// Trapped as a Debit: the table's debits go this way.
    async fn debit_many(
        &self,
        r: Request<pb::DebitManyRequest>,
    ) -> Result<Response<pb::DebitManyReply>, Status> {
        self.before(Call::Debit)?;
        let (mut c, r) = self.upstream(r)?;
        let answer = c.debit_many(r).await;
        self.after(Call::Debit, answer)
    }

    async fn credit(
        &self,
        r: Request<pb::CreditRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.before(Call::Credit)?;
        let (mut c, r) = self.upstream(r)?;
        let answer = c.credit(r).await;
        self.after(Call::Credit, answer)
    }

    async fn cancel(
        &self,
        r: Request<pb::CancelRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        self.before(Call::Cancel)?;
        let (mut c, r) = self.upstream(r)?;
        let answer = c.cancel(r).await;
        self.after(Call::Cancel, answer)
    }

    async fn set_self_limit(
        &self,
        r: Request<pb::WalletSelfLimitRequest>,
    ) -> Result<Response<pb::SelfLimit>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.set_self_limit(r).await
    }

    async fn deposit(
        &self,
        r: Request<pb::CashRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.deposit(r).await
    }

    async fn withdraw(
        &self,
        r: Request<pb::CashRequest>,
    ) -> Result<Response<pb::MovementReply>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.withdraw(r).await
    }

    async fn block(&self, r: Request<pb::BlockRequest>) -> Result<Response<pb::Account>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.block(r).await
    }

    async fn unblock(&self, r: Request<pb::BlockRequest>) -> Result<Response<pb::Account>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.unblock(r).await
    }

    async fn statement(
        &self,
        r: Request<pb::StatementRequest>,
    ) -> Result<Response<pb::StatementReply>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.statement(r).await
    }

    async fn movements(
        &self,
        r: Request<pb::MovementsRequest>,
    ) -> Result<Response<pb::MovementsReply>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.movements(r).await
    }

    async fn table_rounds(
        &self,
        r: Request<pb::TableRoundsRequest>,
    ) -> Result<Response<pb::TableRoundsReply>, Status> {
        let (mut c, r) = self.upstream(r)?;
        c.table_rounds(r).await
    }

    type WatchBalancesStream = BalanceStream;

    async fn watch_balances(
        &self,
        r: Request<pb::WatchBalancesRequest>,
    ) -> Result<Response<BalanceStream>, Status> {
        let (mut c, r) = self.upstream(r)?;
        let stream = c.watch_balances(r).await?.into_inner();
        Ok(Response::new(Box::pin(stream)))
    }
}
