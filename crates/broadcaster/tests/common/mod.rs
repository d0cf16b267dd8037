//! The harness of the broadcaster's tests: a live table `T01` behind a real socket on
//! 127.0.0.1:0, and the croupier's and players' calls.
#![allow(dead_code, unreachable_pub)]

pub(crate) use std::sync::Arc;
pub(crate) use std::time::{Duration, SystemTime};

pub(crate) use banco_auth::keys::signing_key_from_seed;
pub(crate) use banco_auth::{BearerToken, Issuer, Role};
pub(crate) use banco_broadcaster::{FanoutLimits, HostedTable, ServeOptions, WelcomeCredit, serve};
pub(crate) use banco_rules::shoe::ShoeConfig;
pub(crate) use banco_table::actor::{ActorConfig, ActorTask, Clock, LocalRules, MemorySink, spawn};
pub(crate) use banco_table::{Pacing, TableConfig};
pub(crate) use banco_wallet::MemoryWallet;
pub(crate) use banco_wire::pb;
pub(crate) use banco_wire::pb::player_service_client::PlayerServiceClient;
pub(crate) use banco_wire::pb::table_service_client::TableServiceClient;
pub(crate) use tokio::net::TcpListener;
pub(crate) use tokio::sync::oneshot;
#[allow(unused_imports)]
pub(crate) use tonic::Code;
pub(crate) use tonic::codegen::InterceptedService;
pub(crate) use tonic::transport::{Channel, Endpoint};

pub(crate) type Croupier = TableServiceClient<InterceptedService<Channel, BearerToken>>;
pub(crate) type Player = PlayerServiceClient<InterceptedService<Channel, BearerToken>>;

pub(crate) const WELCOME: i64 = 10_000;

pub(crate) struct Harness {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) channel: Channel,
    pub(crate) issuer: Issuer,
    stop: Option<oneshot::Sender<()>>,
    /// The server, until it stops.
    pub(crate) served: Option<tokio::task::JoinHandle<Result<(), banco_broadcaster::ServeError>>>,
    task: Option<ActorTask>,
    _dir: tempfile::TempDir,
}

/// A server identity for `localhost` and the CA a client trusts it by.
pub(crate) fn localhost_tls() -> (banco_broadcaster::ServerTls, banco_auth::ClientTls) {
    let (ca, server) = banco_testkit::self_signed_localhost();
    let client = banco_auth::ClientTls::from_ca_pem(ca.as_bytes())
        .unwrap()
        .with_domain("localhost");
    (server, client)
}

impl Harness {
    /// One live table `T01` with a 1-deck shoe, and a welcome credit.
    pub(crate) async fn start() -> Harness {
        Harness::start_with(FanoutLimits::default()).await
    }

    /// [`Harness::start`] with the fan-out hub's limits given.
    pub(crate) async fn start_with(fanout: FanoutLimits) -> Harness {
        Harness::start_configured(fanout, TableConfig::new("T01", Pacing::Live)).await
    }

    /// [`Harness::start`] with the fan-out limits and the table's configuration given.
    pub(crate) async fn start_configured(fanout: FanoutLimits, config: TableConfig) -> Harness {
        Harness::start_full(fanout, config, None, |_| {}).await
    }

    /// [`Harness::start`] with the page's and gRPC-Web's options given.
    pub(crate) async fn start_web(web: banco_broadcaster::WebOptions) -> Harness {
        Harness::start_full(
            FanoutLimits::default(),
            TableConfig::new("T01", Pacing::Live),
            None,
            |options| options.web = web,
        )
        .await
    }

    /// [`Harness::start`], served over TLS with [`localhost_tls`].
    pub(crate) async fn start_tls() -> Harness {
        let tls = localhost_tls();
        Harness::start_full(
            FanoutLimits::default(),
            TableConfig::new("T01", Pacing::Live),
            Some(tls),
            |_| {},
        )
        .await
    }

    async fn start_full(
        fanout: FanoutLimits,
        config: TableConfig,
        tls: Option<(banco_broadcaster::ServerTls, banco_auth::ClientTls)>,
        configure: impl FnOnce(&mut ServeOptions),
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let wallet = Arc::new(MemoryWallet::new());
        let mut actor = ActorConfig::in_dir(config.clone(), dir.path());
        actor.wallet = wallet.clone();
        let (handle, task) = spawn(
            actor,
            Arc::new(LocalRules),
            Arc::new(MemorySink::new()),
            Clock::system(),
        )
        .await
        .unwrap();
        let issuer = Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap();
        let shoe = ShoeConfig {
            decks: 1,
            ..ShoeConfig::default()
        };
        let mut options = ServeOptions::new(
            Arc::new(issuer.verifier()),
            vec![HostedTable::new(handle, config, shoe)],
        );
        options.welcome = Some(WelcomeCredit {
            amount: WELCOME,
            cashier: wallet,
        });
        options.fanout = fanout;
        let (server_tls, client_tls) = tls.unzip();
        options.tls = server_tls;
        configure(&mut options);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(serve(listener, options, async {
            let _ = stopped.await;
        }));
        let endpoint = match client_tls {
            None => Endpoint::from_shared(format!("http://{addr}")).unwrap(),
            Some(tls) => Endpoint::from_shared(format!("https://{addr}"))
                .unwrap()
                .tls_config(tls.config())
                .unwrap(),
        };
        let channel = endpoint.connect().await.unwrap();
        Harness {
            addr,
            channel,
            issuer,
            stop: Some(stop),
            served: Some(served),
            task: Some(task),
            _dir: dir,
        }
    }

    pub(crate) fn token(&self, sub: &str, role: Role) -> BearerToken {
        let token = self
            .issuer
            .issue(sub, role, Duration::from_secs(600), SystemTime::now())
            .unwrap();
        BearerToken::new(&token).unwrap()
    }

    pub(crate) fn address(&self) -> std::net::SocketAddr {
        self.addr
    }

    pub(crate) fn croupier(&self) -> Croupier {
        TableServiceClient::with_interceptor(
            self.channel.clone(),
            self.token("anna", Role::Croupier),
        )
    }

    pub(crate) fn player(&self, name: &str) -> Player {
        PlayerServiceClient::with_interceptor(self.channel.clone(), self.token(name, Role::Player))
    }

    /// Tells the server to stop (it returns once its connections have drained).
    pub(crate) fn stop_serving(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub(crate) async fn stop(mut self) {
        self.stop_serving();
        if let Some(task) = self.task.take() {
            task.shutdown().await;
        }
    }
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub(crate) fn id() -> String {
    format!(
        "cmd-{}",
        NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

pub(crate) fn t01() -> String {
    "T01".to_owned()
}

/// T01's state, then each change of it, as the croupier's console watches them.
pub(crate) async fn watch_t01(c: &mut Croupier) -> tonic::Streaming<pb::TableState> {
    c.watch_table(pb::WatchTableRequest { table_id: t01() })
        .await
        .unwrap()
        .into_inner()
}

pub(crate) async fn open_shoe(c: &mut Croupier) -> pb::CommandReply {
    let request = pb::OpenShoeRequest {
        table_id: t01(),
        command_id: id(),
        config: None,
    };
    c.open_shoe(request).await.unwrap().into_inner()
}

pub(crate) async fn burn(c: &mut Croupier, card: &str) -> pb::CommandReply {
    let request = pb::BurnRequest {
        table_id: t01(),
        command_id: id(),
        exposed_card: card.to_owned(),
        source: pb::CardSource::Scanner.into(),
    };
    c.burn(request).await.unwrap().into_inner()
}

pub(crate) async fn open_betting(c: &mut Croupier) -> pb::CommandReply {
    let request = pb::OpenBettingRequest {
        table_id: t01(),
        command_id: id(),
        duration_ms: 0,
    };
    c.open_betting(request).await.unwrap().into_inner()
}

pub(crate) async fn close_betting(c: &mut Croupier) -> pb::CommandReply {
    let request = pb::CloseBettingRequest {
        table_id: t01(),
        command_id: id(),
    };
    c.close_betting(request).await.unwrap().into_inner()
}

pub(crate) async fn deal(c: &mut Croupier, card: &str) -> pb::CommandReply {
    let request = pb::DealCardRequest {
        table_id: t01(),
        command_id: id(),
        card: card.to_owned(),
        source: pb::CardSource::Scanner.into(),
    };
    c.deal_card(request).await.unwrap().into_inner()
}

pub(crate) async fn confirm(c: &mut Croupier, round_id: &str) -> pb::CommandReply {
    let request = pb::ConfirmResultRequest {
        table_id: t01(),
        command_id: id(),
        round_id: round_id.to_owned(),
    };
    c.confirm_result(request).await.unwrap().into_inner()
}

pub(crate) fn bet(kind: pb::BetKind, stake: i64) -> pb::Bet {
    pb::Bet {
        kind: kind.into(),
        stake_minor: stake,
    }
}

pub(crate) async fn place(
    p: &mut Player,
    round_id: &str,
    bets: Vec<pb::Bet>,
    key: &str,
) -> pb::PlaceBetsResponse {
    let request = pb::PlaceBetsRequest {
        table_id: t01(),
        round_id: round_id.to_owned(),
        bets,
        idempotency_key: key.to_owned(),
    };
    p.place_bets(request).await.unwrap().into_inner()
}

pub(crate) fn state(reply: &pb::CommandReply) -> &pb::TableState {
    reply.state.as_ref().unwrap()
}

pub(crate) fn refusal_code(reply: &pb::CommandReply) -> pb::RefusalCode {
    reply.refusal.as_ref().unwrap().code()
}

pub(crate) fn decision_refusal(decision: &pb::BetDecision) -> &pb::Refusal {
    match decision.decision.as_ref().unwrap() {
        pb::bet_decision::Decision::Refusal(r) => r,
        pb::bet_decision::Decision::Accepted(a) => panic!("accepted: {a:?}"),
    }
}

/// A shoe in play (burn AS: the 1-deck shoe's only ace of spades is seen) and betting
/// open; returns the round id.
pub(crate) async fn to_betting(c: &mut Croupier) -> String {
    let reply = open_shoe(c).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    assert_eq!(state(&reply).shoe_state(), pb::ShoeState::AwaitingBurn);
    let reply = burn(c, "AS").await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    let reply = open_betting(c).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    assert_eq!(state(&reply).phase(), pb::TablePhase::BettingOpen);
    state(&reply).round_id.clone()
}

/// Deals a natural (four cards, Player then Banker) and confirms it; opens the next round
/// and returns its id.
pub(crate) async fn natural(c: &mut Croupier, round_id: &str, cards: [&str; 4]) -> String {
    let reply = close_betting(c).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    for card in cards {
        let reply = deal(c, card).await;
        assert!(reply.refusal.is_none(), "{card}: {:?}", reply.refusal);
    }
    let reply = confirm(c, round_id).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    let reply = open_betting(c).await;
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
    state(&reply).round_id.clone()
}
