//! `banco-bench bets`: a validator and a broadcaster (a real table actor journaling to a
//! temporary folder) in this process, a shoe opened and betting open, then `--players`
//! players each placing `--bets-per-player` bets, `--concurrency` requests in flight.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use banco_auth::{BearerToken, Role};
use banco_broadcaster::FanoutLimits;
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use tokio::task::JoinSet;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::common::{InProcess, connect, cpu_per, keys, percentiles, thread_cpu, token};
use super::wallets::BenchWallet;

type Authed = InterceptedService<Channel, BearerToken>;

const STAKE: i64 = 500;
const TABLE: &str = "B01";

/// The position of a player's `i`-th bet: Player first (Tie needs a main bet), then each
/// position in turn.
fn position(i: usize) -> BetKind {
    BetKind::ALL[i % BetKind::ALL.len()]
}

pub(super) async fn bench_bets(
    players: usize,
    per_player: usize,
    concurrency: usize,
    wallet: BenchWallet,
) -> anyhow::Result<()> {
    ensure!(players > 0, "--players must be at least 1");
    ensure!(
        (1..=180).contains(&per_player),
        "--bets-per-player {per_player}: must be 1 to 180 (500 on each position in turn stays under the 10,200 maximum)"
    );
    ensure!(concurrency > 0, "--concurrency must be at least 1");
    let issuer = keys()?;
    let welcome = STAKE * per_player as i64;
    let hosted =
        InProcess::start_with(&issuer, TABLE, welcome, FanoutLimits::default(), wallet).await?;
    let (addr, handle) = (hosted.addr, hosted.handle.clone());

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
    let warm = place_all(queues(
        &clients,
        (0..players).map(|p| (p, bet(p, 0))),
        concurrency,
    ))
    .await?;
    let commits_before = handle.commit_stats();
    let wallet_before = hosted.wallet.commit_stats();
    let timed = (1..per_player)
        .flat_map(|i| (0..players).map(move |p| (p, i)))
        .map(|(p, i)| (p, bet(p, i)));
    let timed = queues(&clients, timed, concurrency);
    let count = timed.iter().map(Vec::len).sum();
    let cpu_before = thread_cpu()?;
    let started = Instant::now();
    let mut latencies = place_all(timed).await?;
    let elapsed = started.elapsed();
    let cpu = cpu_per(&cpu_before, &thread_cpu()?, count, "bet");
    let commits_after = handle.commit_stats();
    let wallet_after = hosted.wallet.commit_stats();

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
    hosted.stop().await;

    let fsyncs = commits_after.commits.saturating_sub(commits_before.commits);
    let wallet_commits = match (wallet_before, wallet_after) {
        (Some(before), Some(after)) => {
            let commits = after.commits.saturating_sub(before.commits);
            format!(
                "; {commits} wallet commits, {:.3} per bet",
                commits as f64 / count.max(1) as f64
            )
        }
        _ => String::new(),
    };
    println!(
        "banco-bench bets: {players} players × {per_player} bets, concurrency {concurrency}, \
         through the {}: {count} timed bets (after {} warm-up) in {:.3} s: {:.0} bets/s; ack \
         latency {}; {cpu}, the bench's clients included; {fsyncs} journal fsyncs, {:.3} per \
         bet{wallet_commits}; totals and all {players} balances check",
        wallet.describe(),
        warm.len(),
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        percentiles(&mut latencies),
        fsyncs as f64 / count.max(1) as f64,
    );
    Ok(())
}

/// Each worker's requests and the clients to send them with, made before any is timed.
type Queues = Vec<Vec<(usize, pb::PlaceBetsRequest, PlayerServiceClient<Authed>)>>;

/// Deals the requests to `concurrency` workers: worker w takes the players p with
/// p % concurrency == w, so a player's bets stay in order (its Player bet comes before its
/// Tie).
fn queues(
    clients: &[PlayerServiceClient<Authed>],
    requests: impl Iterator<Item = (usize, pb::PlaceBetsRequest)>,
    concurrency: usize,
) -> Queues {
    let mut queues: Queues = vec![Vec::new(); concurrency];
    for (p, request) in requests {
        queues[p % concurrency].push((p, request, clients[p].clone()));
    }
    queues
}

/// Sends every request, each worker one at a time, and checks each bet was accepted
/// whole. The ack latencies.
async fn place_all(queues: Queues) -> anyhow::Result<Vec<Duration>> {
    let mut tasks = JoinSet::new();
    let total = queues.iter().map(Vec::len).sum();
    for queue in queues.into_iter().filter(|q| !q.is_empty()) {
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(queue.len());
            for (p, request, mut client) in queue {
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
    let mut latencies = Vec::with_capacity(total);
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done??);
    }
    Ok(latencies)
}
