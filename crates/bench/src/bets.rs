//! `banco-bench bets`: a validator and a broadcaster (a real table actor journaling to a
//! temporary folder) in this process, a shoe opened and betting open, then `--players`
//! players each placing `--bets-per-player` bets, `--concurrency` requests in flight, or
//! with `--rate R` each bet sent at its time, R a second, however many are in flight.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use banco_auth::{BearerToken, Role};
use banco_broadcaster::FanoutLimits;
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use futures::stream::{FuturesUnordered, StreamExt as _};
use tokio::task::JoinSet;

use super::common::{InProcess, connect, cpu_per, cpu_spent, keys, percentiles, thread_cpu, token};
use super::grpc_h2::Connection;
use super::wallets::BenchWallet;

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
    rate: Option<u32>,
    wallet: BenchWallet,
    server: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    ensure!(players > 0, "--players must be at least 1");
    ensure!(
        (1..=180).contains(&per_player),
        "--bets-per-player {per_player}: must be 1 to 180 (500 on each position in turn stays under the 10,200 maximum)"
    );
    ensure!(concurrency > 0, "--concurrency must be at least 1");
    ensure!(rate != Some(0), "--rate must be at least 1 bet a second");
    let issuer = keys()?;
    let welcome = STAKE * per_player as i64;
    let hosted = {
        let issuer = issuer.clone();
        server
            .spawn(async move {
                InProcess::start_with(&issuer, TABLE, welcome, FanoutLimits::default(), wallet)
                    .await
            })
            .await??
    };
    let (addr, handle) = (hosted.addr, hosted.handle.clone());

    // One connection per 16 requests in flight, as many clients would have.
    let mut connections = Vec::new();
    for _ in 0..concurrency.div_ceil(16) {
        connections.push(Connection::open(&format!("http://{addr}"), CONNECTION_WINDOW).await?);
    }
    let channel = connect(addr).await?;
    let mut croupier = TableServiceClient::with_interceptor(
        channel.clone(),
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

    let clients: Vec<Player> = (0..players)
        .map(|p| {
            Ok(Player {
                connection: connections[p % connections.len()].clone(),
                token: token(&issuer, Role::Player, &format!("p{p}"))?,
            })
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
        (0..players).map(|p| (p, bet(p, 0), clients[p].clone())),
        concurrency,
    ))
    .await?;
    let commits_before = handle.commit_stats();
    // The longest commits and the wallet's waits printed are the timed bets', not the
    // warm-up's.
    handle.restart_longest_commit();
    hosted.wallet.restart_commit_maxima();
    hosted.wallet.wallet.take_waits();
    let wallet_before = hosted.wallet.commit_stats();
    let copied_before = hosted.wallet.checkpoint_stats();
    // Round by round of the players, so a player's bets are `players` places apart.
    let timed: Vec<_> = (1..per_player)
        .flat_map(|i| (0..players).map(move |p| (p, i)))
        .map(|(p, i)| (p, bet(p, i), clients[p].clone()))
        .collect();
    let count = timed.len();
    let cpu_before = thread_cpu()?;
    let started = Instant::now();
    let (mut latencies, load) = match rate {
        None => (
            place_all(queues(timed, concurrency)).await?,
            format!("concurrency {concurrency}"),
        ),
        Some(rate) => {
            let (latencies, most) = place_at_rate(timed, rate).await?;
            let load = format!(
                "offered {rate} bets/s (each sent when due, at most {most} in flight; latency \
                 from when it was due)"
            );
            (latencies, load)
        }
    };
    let elapsed = started.elapsed();
    let cpu_after = thread_cpu()?;
    let cpu = cpu_per(&cpu_before, &cpu_after, count, "bet");
    let server_cpu = server_cpu_per_bet(&cpu_before, &cpu_after, count, |_| true);
    let wallet_server_cpu = if wallet.has_server() {
        format!(
            " ({:.1} of them the wallet's server and its store, elsewhere in production)",
            server_cpu_per_bet(&cpu_before, &cpu_after, count, |kind| wallet.serves(kind))
        )
    } else {
        String::new()
    };
    let commits_after = handle.commit_stats();
    let wallet_after = hosted.wallet.commit_stats();
    let copied_after = hosted.wallet.checkpoint_stats();
    let mut waits = hosted.wallet.wallet.take_waits();

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
    for (p, player) in clients.iter().enumerate() {
        let balance = PlayerServiceClient::with_interceptor(channel.clone(), player.token.clone())
            .get_balance(pb::GetBalanceRequest {})
            .await?
            .into_inner();
        ensure!(
            balance.available_minor == 0,
            "p{p}: balance {} after staking its whole welcome credit of {welcome}",
            balance.available_minor
        );
    }
    server.spawn(hosted.stop()).await?;

    let journal_commits = commits_after.commits.saturating_sub(commits_before.commits);
    let zeroings = commits_after
        .zeroings
        .saturating_sub(commits_before.zeroings);
    let wallet_commits = match (wallet_before, wallet_after) {
        (Some(before), Some(after)) => {
            let commits = after.commits.saturating_sub(before.commits);
            format!(
                "; {commits} wallet commits, {:.3} per bet, the longest {:.1} ms, the largest \
                 {} requests",
                commits as f64 / count.max(1) as f64,
                after.longest.as_secs_f64() * 1e3,
                after.largest
            )
        }
        _ => String::new(),
    };
    let wallet_copies = match (copied_before, copied_after) {
        (Some(before), Some(after)) => format!(
            "; its WAL copied back by {} passes beside the commits ({:.2} pages a bet), \
             started over {} times",
            after.passes - before.passes,
            (after.copied - before.copied) as f64 / count.max(1) as f64,
            after.restarts - before.restarts,
        ),
        _ => String::new(),
    };
    println!(
        "banco-bench bets: {players} players × {per_player} bets, {load}, \
         through the {}: {count} timed bets (after {} warm-up) in {:.3} s: {:.0} bets/s; ack \
         latency {}, of which waiting for the wallet (each debit, from the table sending it to \
         its answer) {}; {cpu}: the server's threads {server_cpu:.1} µs a bet{wallet_server_cpu}, the rest the \
         bench's players; {journal_commits} journal commits, {:.3} per bet, the longest {:.1} ms, and {zeroings} fsyncs \
         of zeros written ahead{wallet_commits}{wallet_copies}; totals and all {players} balances check",
        wallet.describe(),
        warm.len(),
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        percentiles(&mut latencies),
        percentiles(&mut waits),
        journal_commits as f64 / count.max(1) as f64,
        commits_after.longest.as_secs_f64() * 1e3,
    );
    Ok(())
}

/// The thread of this process that makes the load: the players'. Everything else
/// (`server-rt`, `grpc-io`, the journal's and the wallet's committers, the validator's)
/// serves, but for the main thread, which only waits.
const LOAD_THREAD: &str = "bench-load";

/// The CPU time the server's threads of the kinds `counted` spent between two
/// [`thread_cpu`] readings, in µs a bet: what a table would need of a machine whose players
/// are elsewhere.
fn server_cpu_per_bet(
    before: &BTreeMap<String, Duration>,
    after: &BTreeMap<String, Duration>,
    bets: usize,
    counted: impl Fn(&str) -> bool,
) -> f64 {
    let spent: Duration = cpu_spent(before, after)
        .filter(|&(kind, _)| kind != LOAD_THREAD && counted(kind))
        .map(|(_, t)| t)
        .sum();
    spent.as_secs_f64() * 1e6 / bets.max(1) as f64
}

/// The PlaceBets method's path.
const PLACE_BETS: &str = "/banco.v1.PlayerService/PlaceBets";

/// Each connection's window: far more than the answers in flight on it take.
const CONNECTION_WINDOW: u32 = 1 << 20;

/// A player: its connection (shared with other players) and its token.
#[derive(Clone)]
struct Player {
    connection: Connection,
    token: BearerToken,
}

impl Player {
    async fn place_bets(
        &self,
        request: &pb::PlaceBetsRequest,
    ) -> anyhow::Result<pb::PlaceBetsResponse> {
        self.connection
            .unary(PLACE_BETS, &self.token, request)
            .await
    }
}

/// A player's request and the player to send it, made before any is timed.
type Request = (usize, pb::PlaceBetsRequest, Player);

/// Each worker's requests.
type Queues = Vec<Vec<Request>>;

/// Deals the requests to `concurrency` workers: worker w takes the players p with
/// p % concurrency == w, so a player's bets stay in order (its Player bet comes before its
/// Tie).
fn queues(requests: impl IntoIterator<Item = Request>, concurrency: usize) -> Queues {
    let mut queues: Queues = vec![Vec::new(); concurrency];
    for request in requests {
        queues[request.0 % concurrency].push(request);
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
            for (p, request, player) in queue {
                let sent = Instant::now();
                let reply = player.place_bets(&request).await?;
                latencies.push(sent.elapsed());
                accepted(p, &reply)?;
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

/// An open loop: the k-th request is due `k / rate` seconds after the start and is sent
/// then, whatever is still in flight, as players do not wait for each other's answers.
/// Each latency counts from when its bet was due, so that a schedule the server (or this
/// sender) fell behind shows in the figures instead of slowing the load. The latencies,
/// and the most requests in flight at once.
async fn place_at_rate(
    requests: Vec<Request>,
    rate: u32,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let total = requests.len();
    let start = tokio::time::Instant::now();
    // One task sends and awaits them all, not a task spawned for each bet: less of the
    // machine goes on making the load.
    let mut in_flight = FuturesUnordered::new();
    let mut latencies = Vec::with_capacity(total);
    let mut most = 0;
    let mut requests = requests.into_iter().enumerate().peekable();
    loop {
        let due = requests.peek().map(|(k, _)| {
            start + Duration::from_nanos(*k as u64 * 1_000_000_000 / u64::from(rate))
        });
        tokio::select! {
            biased;
            () = sleep_until_due(due), if due.is_some() => {
                let Some((_, (p, request, player))) = requests.next() else { continue };
                let due = due.unwrap_or(start).into_std();
                in_flight.push(async move {
                    let reply = player.place_bets(&request).await?;
                    let latency = due.elapsed();
                    accepted(p, &reply)?;
                    anyhow::Ok(latency)
                });
                most = most.max(in_flight.len());
            }
            Some(done) = in_flight.next(), if !in_flight.is_empty() => latencies.push(done?),
            else => break,
        }
    }
    Ok((latencies, most))
}

/// Waits for `due`, if there is one.
async fn sleep_until_due(due: Option<tokio::time::Instant>) {
    if let Some(due) = due
        && due > tokio::time::Instant::now()
    {
        tokio::time::sleep_until(due).await;
    }
}

/// Checks that the one bet of a reply was accepted whole.
fn accepted(p: usize, reply: &pb::PlaceBetsResponse) -> anyhow::Result<()> {
    let whole = reply.decisions.len() == 1
        && matches!(
            &reply.decisions[0].decision,
            Some(pb::bet_decision::Decision::Accepted(a)) if a.accepted_minor == STAKE
        );
    if !whole {
        bail!("p{p}: bet not accepted: {reply:?}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_cpu_leaves_out_the_loads_threads() {
        let ms = Duration::from_millis;
        let before = BTreeMap::from([
            ("server-rt".to_owned(), ms(100)),
            ("bench-load".to_owned(), ms(100)),
            ("grpc-io".to_owned(), ms(50)),
        ]);
        let after = BTreeMap::from([
            ("server-rt".to_owned(), ms(300)),
            ("bench-load".to_owned(), ms(900)),
            ("grpc-io".to_owned(), ms(150)),
            // A thread that started in between counts from nothing.
            ("wallet-commit".to_owned(), ms(100)),
        ]);
        // 200 + 100 + 100 ms of the server's over 1,000 bets.
        let per_bet = server_cpu_per_bet(&before, &after, 1_000, |_| true);
        assert!((per_bet - 400.0).abs() < 1e-9, "{per_bet}");
        // A store behind a server is the server's; in the process, the table's own.
        let served = server_cpu_per_bet(&before, &after, 1_000, |k| BenchWallet::Grpc.serves(k));
        assert!((served - 100.0).abs() < 1e-9, "{served}");
        let embedded =
            server_cpu_per_bet(&before, &after, 1_000, |k| BenchWallet::Embedded.serves(k));
        assert!(embedded.abs() < 1e-9, "{embedded}");
    }

    #[test]
    fn the_wallet_servers_threads_are_its_runtime_and_a_served_stores_writers() {
        for wallet in [BenchWallet::Grpc, BenchWallet::Seamless] {
            for thread in ["wallet-server", "wallet-commit", "wallet-checkpoi"] {
                assert!(wallet.serves(thread), "{wallet:?}: {thread}");
            }
            let tables = [
                "server-rt",
                "grpc-io",
                "journal-commit",
                "bench-load",
                "sqlx-sqlite-wor",
            ];
            for thread in tables {
                assert!(!wallet.serves(thread), "{wallet:?}: {thread}");
            }
        }
        for wallet in [BenchWallet::Memory, BenchWallet::Embedded] {
            assert!(!wallet.serves("wallet-commit"), "{wallet:?}");
        }
    }
}
