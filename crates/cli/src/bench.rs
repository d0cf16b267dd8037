//! `banco bench`: how fast the services answer over real gRPC on loopback.
//!
//! - `validator`: RulesService in this process on `127.0.0.1:0`, with a fresh key and a
//!   service token, then `--requests` CheckCard calls from `--concurrency` clients.
//! - `bets`: a validator and a broadcaster (a real table actor journaling to a temporary
//!   folder) in this process, a shoe opened and betting open, then `--players` players each
//!   placing `--bets-per-player` bets, `--concurrency` requests in flight.
//!
//! Both print latency percentiles and throughput, and never judge a time; they do check
//! the answers (every card accepted; every bet accepted, the table's totals and every
//! balance exactly what was staked), so a fast wrong answer does not pass for a result.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail, ensure};
use banco_auth::keys::generate_signing_key;
use banco_auth::{BearerToken, Issuer, Role};
use banco_broadcaster::{HostedTable, OutboxFile};
use banco_rules::BetKind;
use banco_rules::shoe::ShoeConfig;
use banco_table::actor::{ActorConfig, Clock, RemoteRules, spawn};
use banco_table::{Pacing, TableConfig};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

type Authed = InterceptedService<Channel, BearerToken>;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum BenchCommand {
    /// CheckCard round trips to an in-process validator over gRPC loopback.
    Validator {
        /// Calls to time (after 200 warm-up calls).
        #[arg(long, default_value_t = 20_000)]
        requests: usize,
        /// Calls in flight at once, each from its own client task.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
    },
    /// PlaceBets acknowledgements from an in-process broadcaster (journal on a temp dir).
    Bets {
        /// Players, each with its own token.
        #[arg(long, default_value_t = 1_000)]
        players: usize,
        /// Bets each player places in the round (1 to 180: 500 on each position in turn,
        /// Player first, so no position goes over the table maximum).
        #[arg(long, default_value_t = 20)]
        bets_per_player: usize,
        /// PlaceBets requests in flight at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
    },
}

pub(crate) fn run(command: &BenchCommand) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    match *command {
        BenchCommand::Validator {
            requests,
            concurrency,
        } => runtime.block_on(bench_validator(requests, concurrency))?,
        BenchCommand::Bets {
            players,
            bets_per_player,
            concurrency,
        } => runtime.block_on(bench_bets(players, bets_per_player, concurrency))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A fresh signing key: its issuer, and a verifier for the services.
fn keys() -> anyhow::Result<Issuer> {
    let key = generate_signing_key().context("signing key")?;
    Issuer::new(key, "banco").context("issuer")
}

fn token(issuer: &Issuer, role: Role, sub: &str) -> anyhow::Result<BearerToken> {
    let text = issuer
        .issue(sub, role, Duration::from_secs(3600), SystemTime::now())
        .with_context(|| format!("token for {sub}"))?;
    BearerToken::new(&text).with_context(|| format!("token for {sub}"))
}

async fn connect(addr: SocketAddr) -> anyhow::Result<Channel> {
    Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await
        .with_context(|| format!("could not connect to {addr}"))
}

/// Starts the validator in this process; the sender stops it.
async fn start_validator(issuer: &Issuer) -> anyhow::Result<(SocketAddr, oneshot::Sender<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let options = banco_validator::ServeOptions {
        verifier: Arc::new(issuer.verifier()),
    };
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        if let Err(e) = banco_validator::serve(listener, options, async {
            let _ = stopped.await;
        })
        .await
        {
            eprintln!("banco bench: validator stopped: {e}");
        }
    });
    Ok((addr, stop))
}

/// p50, p90, p99 and max of some latencies, in microseconds.
fn percentiles(latencies: &mut [Duration]) -> String {
    latencies.sort_unstable();
    let at = |q: f64| {
        let n = latencies.len();
        if n == 0 {
            return 0.0;
        }
        let i = ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
        latencies[i].as_secs_f64() * 1e6
    };
    format!(
        "p50 {:.0} µs, p90 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    )
}

async fn bench_validator(requests: usize, concurrency: usize) -> anyhow::Result<()> {
    ensure!(requests > 0, "--requests must be at least 1");
    ensure!(concurrency > 0, "--concurrency must be at least 1");
    let issuer = keys()?;
    let (addr, stop) = start_validator(&issuer).await?;
    let channel = connect(addr).await?;
    let service = token(&issuer, Role::Service, "bench")?;
    // A shoe with a burn and two hands out, and a hand of two cards: a realistic question.
    let request = pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
            decks: 8,
            cards: ["7C", "KD", "2H", "9S", "QS", "4D", "AH", "8C", "TC", "3S"]
                .map(String::from)
                .to_vec(),
        })),
        hand: vec!["5H".into(), "6D".into()],
        card: "9H".into(),
    };
    let mut client = RulesServiceClient::with_interceptor(channel.clone(), service.clone());
    for _ in 0..200 {
        client.check_card(request.clone()).await?;
    }

    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..concurrency {
        let share = requests / concurrency + usize::from(worker < requests % concurrency);
        let mut client = RulesServiceClient::with_interceptor(channel.clone(), service.clone());
        let request = request.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            for _ in 0..share {
                let sent = Instant::now();
                let answer = client.check_card(request.clone()).await?.into_inner();
                latencies.push(sent.elapsed());
                // Player 5 H + Banker 6 D, then 9H to Player: Banker's card is due next.
                if !answer.accepted || answer.due() != pb::Due::BankerCard {
                    bail!("unexpected answer: {answer:?}");
                }
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(requests);
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done??);
    }
    let elapsed = started.elapsed();
    let _ = stop.send(());
    ensure!(
        latencies.len() == requests,
        "{} answers to {requests} calls",
        latencies.len()
    );
    println!(
        "banco bench validator: {requests} CheckCard calls, concurrency {concurrency}, in {:.3} s: \
         {:.0} calls/s; latency {}",
        elapsed.as_secs_f64(),
        requests as f64 / elapsed.as_secs_f64(),
        percentiles(&mut latencies)
    );
    Ok(())
}

/// Removes the bench's temporary folder, pass or fail.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const STAKE: i64 = 500;
const TABLE: &str = "B01";

/// The position of a player's `i`-th bet: Player first (Tie needs a main bet), then each
/// position in turn.
fn position(i: usize) -> BetKind {
    BetKind::ALL[i % BetKind::ALL.len()]
}

async fn bench_bets(players: usize, per_player: usize, concurrency: usize) -> anyhow::Result<()> {
    ensure!(players > 0, "--players must be at least 1");
    ensure!(
        (1..=180).contains(&per_player),
        "--bets-per-player {per_player}: must be 1 to 180 (500 on each position in turn stays under the 10,200 maximum)"
    );
    ensure!(concurrency > 0, "--concurrency must be at least 1");
    let issuer = keys()?;
    let (validator, stop_validator) = start_validator(&issuer).await?;

    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir =
        TempDir(std::env::temp_dir().join(format!("banco-bench-{}-{nanos}", std::process::id())));
    std::fs::create_dir_all(&dir.0)
        .with_context(|| format!("could not create {}", dir.0.display()))?;

    // The broadcaster as `banco broadcaster` builds it, in this process.
    let service = issuer.issue(
        "broadcaster",
        Role::Service,
        Duration::from_secs(3600),
        SystemTime::now(),
    )?;
    let rules = RemoteRules::connect(
        &format!("http://{validator}"),
        &service,
        Duration::from_secs(2),
    )?;
    let config = TableConfig::new(TABLE, Pacing::Live);
    let outbox = OutboxFile::open(&dir.0.join("outbox.jsonl"))?;
    let (handle, task) = spawn(
        ActorConfig::in_dir(config.clone(), &dir.0),
        Arc::new(rules),
        Arc::new(outbox),
        Clock::system(),
    )
    .await
    .context("could not start the table actor")?;
    let welcome = STAKE * per_player as i64;
    let mut options = banco_broadcaster::ServeOptions::new(
        Arc::new(issuer.verifier()),
        vec![HostedTable::new(
            handle.clone(),
            config,
            ShoeConfig::default(),
        )],
    );
    options.welcome_credit = welcome;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(banco_broadcaster::serve(listener, options, async {
        let _ = stopped.await;
    }));

    // One connection per 16 requests in flight, as many clients would have.
    let mut channels = Vec::new();
    for _ in 0..concurrency.div_ceil(16) {
        channels.push(connect(addr).await?);
    }
    let mut croupier = TableServiceClient::with_interceptor(
        channels[0].clone(),
        token(&issuer, Role::Croupier, "bench-croupier")?,
    );
    let mut id = 0;
    let mut command = |name: &str| {
        id += 1;
        (TABLE.to_owned(), format!("{name}-{id}"))
    };
    let (table_id, command_id) = command("open-shoe");
    let reply = croupier
        .open_shoe(pb::OpenShoeRequest {
            table_id,
            command_id,
            config: None,
        })
        .await?
        .into_inner();
    ensure!(reply.refusal.is_none(), "OpenShoe refused: {reply:?}");
    let (table_id, command_id) = command("burn");
    let reply = croupier
        .burn(pb::BurnRequest {
            table_id,
            command_id,
            exposed_card: "2C".into(),
            source: pb::CardSource::Scanner.into(),
        })
        .await?
        .into_inner();
    ensure!(reply.refusal.is_none(), "Burn refused: {reply:?}");
    let (table_id, command_id) = command("open-betting");
    let reply = croupier
        .open_betting(pb::OpenBettingRequest {
            table_id,
            command_id,
            duration_ms: 0,
        })
        .await?
        .into_inner();
    let round_id = match (&reply.refusal, &reply.state) {
        (None, Some(state)) => state.round_id.clone(),
        _ => bail!("OpenBetting refused: {reply:?}"),
    };

    let clients: Vec<PlayerServiceClient<Authed>> = (0..players)
        .map(|p| {
            let channel = channels[p % channels.len()].clone();
            Ok(PlayerServiceClient::with_interceptor(
                channel,
                token(&issuer, Role::Player, &format!("p{p}"))?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let bet = |p: usize, i: usize| pb::PlaceBetsRequest {
        table_id: TABLE.to_owned(),
        round_id: round_id.clone(),
        bets: vec![pb::Bet {
            kind: pb::BetKind::from(position(i)).into(),
            stake_minor: STAKE,
        }],
        idempotency_key: format!("p{p}-{i}"),
    };

    // Warm-up, untimed: each player's first bet (which also credits its welcome money).
    let warm = place_all(&clients, (0..players).map(|p| (p, bet(p, 0))), concurrency).await?;
    let commits_before = handle.commit_stats();
    let timed: Vec<_> = (1..per_player)
        .flat_map(|i| (0..players).map(move |p| (p, i)))
        .map(|(p, i)| (p, bet(p, i)))
        .collect();
    let count = timed.len();
    let started = Instant::now();
    let mut latencies = place_all(&clients, timed.into_iter(), concurrency).await?;
    let elapsed = started.elapsed();
    let commits_after = handle.commit_stats();

    // Check: the table's totals, and every balance.
    let (table_id, command_id) = command("close-betting");
    let reply = croupier
        .close_betting(pb::CloseBettingRequest {
            table_id,
            command_id,
        })
        .await?
        .into_inner();
    let state = match (&reply.refusal, reply.state) {
        (None, Some(state)) => state,
        _ => bail!("CloseBetting refused: {:?}", reply.refusal),
    };
    for kind in BetKind::ALL {
        let bets = (0..per_player).filter(|&i| position(i) == kind).count();
        let want = STAKE * (bets * players) as i64;
        let shown = state
            .bet_totals
            .iter()
            .find(|t| t.kind() == pb::BetKind::from(kind))
            .map_or(0, |t| t.total_minor);
        ensure!(
            shown == want,
            "{kind}: the table shows {shown} staked, the bench placed {want}"
        );
    }
    for (p, client) in clients.iter().enumerate() {
        let balance = client
            .clone()
            .get_balance(pb::GetBalanceRequest {})
            .await?
            .into_inner();
        ensure!(
            balance.available_minor == 0,
            "p{p}: balance {} after staking its whole welcome credit of {welcome}",
            balance.available_minor
        );
    }
    let _ = stop.send(());
    let _ = server.await;
    task.shutdown().await;
    let _ = stop_validator.send(());

    let fsyncs = commits_after.commits.saturating_sub(commits_before.commits);
    println!(
        "banco bench bets: {players} players × {per_player} bets, concurrency {concurrency}: \
         {count} timed bets (after {} warm-up) in {:.3} s: {:.0} bets/s; ack latency {}; \
         {fsyncs} journal fsyncs, {:.3} per bet; totals and all {players} balances check",
        warm.len(),
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        percentiles(&mut latencies),
        fsyncs as f64 / count.max(1) as f64,
    );
    Ok(())
}

/// Sends every request, `concurrency` at a time (one player's requests in order), and
/// checks each bet was accepted whole. The ack latencies.
async fn place_all(
    clients: &[PlayerServiceClient<Authed>],
    requests: impl Iterator<Item = (usize, pb::PlaceBetsRequest)>,
    concurrency: usize,
) -> anyhow::Result<Vec<Duration>> {
    // Worker w takes the players p with p % concurrency == w, so a player's bets stay in
    // order (its Player bet comes before its Tie).
    let mut queues: Vec<Vec<(usize, pb::PlaceBetsRequest)>> = vec![Vec::new(); concurrency];
    for (p, request) in requests {
        queues[p % concurrency].push((p, request));
    }
    let mut tasks = JoinSet::new();
    for queue in queues.into_iter().filter(|q| !q.is_empty()) {
        let clients: Vec<_> = queue.iter().map(|(p, _)| clients[*p].clone()).collect();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(queue.len());
            for ((p, request), mut client) in queue.into_iter().zip(clients) {
                let sent = Instant::now();
                let reply = client.place_bets(request).await?.into_inner();
                latencies.push(sent.elapsed());
                let accepted = reply.decisions.len() == 1
                    && matches!(
                        &reply.decisions[0].decision,
                        Some(pb::bet_decision::Decision::Accepted(a)) if a.accepted_minor == STAKE
                    );
                if !accepted {
                    bail!("p{p}: bet not accepted: {reply:?}");
                }
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::new();
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done??);
    }
    Ok(latencies)
}
