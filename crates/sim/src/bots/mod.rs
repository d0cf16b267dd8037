//! `banco-sim bots`: simulated players at one table, for the demo and for load. Each bot mints
//! its own player token (`bot-001`, …), subscribes (resuming like `banco player watch`),
//! and when betting opens decides after a human-like pause what to bet (`behaviour`).
//! Everything random comes from one seeded ChaCha RNG, so a run's decisions replay.

mod behaviour;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use banco_auth::keys::load_signing_key;
use banco_auth::{BearerToken, Issuer, Role};
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::bet_decision::Decision as PbDecision;
use banco_wire::pb::table_event::Event;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng as _, SeedableRng as _};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use banco::clients::player::bets_to_pb;
use banco::clients::player::{Client, ServerArgs, client, fresh_key, status_error};
use banco::clients::player::{Feed, Item};
use behaviour::{Decision, RoundView, Temperament, decide};
use stats::Stats;

/// Bots per gRPC connection: many players share a few HTTP/2 connections, as they would
/// behind a few edge proxies, without one socket per bot.
const BOTS_PER_CHANNEL: usize = 50;
/// The human-like pause before betting: 0.5 to 8 s after betting opens…
const MIN_PAUSE_MS: u64 = 500;
const MAX_PAUSE_MS: u64 = 8_000;
/// …and never later than this before betting closes.
const CLOSING_MARGIN_MS: u64 = 300;
/// How long the bots get to end their calls once asked to stop.
const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, clap::Args)]
pub(crate) struct BotsArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// The table.
    #[arg(long, default_value = "T01")]
    table: String,
    /// How many bots.
    #[arg(long)]
    players: usize,
    /// The signing key (`banco token keygen`) the bots' player tokens are signed with.
    #[arg(long, default_value = "signing.key")]
    signing_key: PathBuf,
    /// The deployment the tokens are for.
    #[arg(long, default_value = "banco")]
    audience: String,
    /// Seed of every random choice (default: a fresh one, printed so the run can be replayed).
    #[arg(long)]
    seed: Option<u64>,
    /// Share of bots that only watch (0 to 1).
    #[arg(long, default_value_t = 0.2)]
    watchers_share: f64,
    /// Print a summary line every this many rounds.
    #[arg(long, default_value_t = 10)]
    report_every: u64,
    /// Stop after this many rounds (results or voids) and print the final summary.
    #[arg(long)]
    rounds: Option<u64>,
    /// First bot number (`bot-001` by default), so that several runs use distinct players.
    #[arg(long, default_value_t = 1)]
    first: usize,
}

pub(crate) fn run(args: &BotsArgs) -> anyhow::Result<ExitCode> {
    if args.players == 0 {
        bail!("--players 0: at least one bot is needed");
    }
    if !(0.0..=1.0).contains(&args.watchers_share) {
        bail!(
            "--watchers-share {}: must be between 0 and 1",
            args.watchers_share
        );
    }
    if args.report_every == 0 {
        bail!("--report-every 0: must be at least 1");
    }
    let issuer = Issuer::new(load_signing_key(&args.signing_key)?, &args.audience)
        .with_context(|| format!("--signing-key {}", args.signing_key.display()))?;
    let seed = match args.seed {
        Some(seed) => seed,
        None => {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("cannot draw a seed: {e}"))?;
            u64::from_le_bytes(b)
        }
    };
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(run_bots(args, &issuer, seed))
}

/// Everything a bot needs to know of the table, from the lobby.
fn limits_of(info: &pb::TableInfo) -> [(i64, i64); 9] {
    let mut limits = [(1, i64::MAX); 9];
    for l in &info.limits {
        let kind = pb::BetKind::try_from(l.kind)
            .ok()
            .and_then(|k| BetKind::try_from(k).ok());
        if let Some(kind) = kind {
            limits[kind.index()] = (l.min_minor, l.max_minor);
        }
    }
    limits
}

async fn run_bots(args: &BotsArgs, issuer: &Issuer, seed: u64) -> anyhow::Result<ExitCode> {
    // One listener for the whole run, set up first: a stop asked while the bots are still
    // being set up (the demo killed as it starts) must end them too.
    let stop = banco::clients::stop_signal::StopSignal::listen()?;
    let mut stop = std::pin::pin!(stop.requested());
    // Printed once a stop is listened for: from this line on, SIGTERM is a clean stop.
    println!(
        "bots: {} at table {} (seed {seed}; --seed {seed} replays the decisions)",
        args.players, args.table
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let stats = Arc::new(Stats::new(args.report_every, args.rounds, stop_tx));
    let mut tasks = tokio::task::JoinSet::new();
    tokio::select! {
        started = start_bots(args, issuer, seed, &stats, &stop_rx, &mut tasks) => started?,
        () = &mut stop => {
            println!("final: {} (stopped while starting)", stats.summary());
            return Ok(ExitCode::SUCCESS);
        }
    }
    drop(stop_rx);
    let mut errors = Vec::new();
    // Once asked to stop, a bot waiting on an answer that never comes (a broadcaster that
    // is itself stopping) is not waited for beyond this.
    let mut give_up: Option<Instant> = None;
    let mut aborted = false;
    loop {
        let overdue = async {
            match give_up {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(e))) => errors.push(e),
                Some(Err(e)) if e.is_cancelled() => {}
                Some(Err(e)) => errors.push(anyhow::anyhow!("a bot task failed: {e}")),
            },
            () = &mut stop, if give_up.is_none() => {
                give_up = Some(Instant::now() + STOP_GRACE);
                stats.stop_all();
            }
            () = overdue, if !aborted => {
                aborted = true;
                tasks.abort_all();
            }
        }
    }
    println!("final: {}", stats.summary());
    match errors.into_iter().next() {
        Some(first) if !stats.reached_target() => Err(first.context(format!(
            "bots stopped before {} rounds",
            args.rounds
                .map_or_else(|| "the end".to_owned(), |r| r.to_string())
        ))),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Mints each bot's token and starts it on `tasks`; the first bot reads the table's limits
/// from the lobby.
async fn start_bots(
    args: &BotsArgs,
    issuer: &Issuer,
    seed: u64,
    stats: &Arc<Stats>,
    stop: &watch::Receiver<bool>,
    tasks: &mut tokio::task::JoinSet<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let mut master = ChaCha20Rng::seed_from_u64(seed);
    let watchers_permille = (args.watchers_share * 1000.0).round() as u64;
    let mut channel = None;
    let mut limits = None;
    for i in 0..args.players {
        if i % BOTS_PER_CHANNEL == 0 {
            channel = Some(args.server.lazy_channel()?);
        }
        let Some(channel) = channel.clone() else {
            bail!("no channel");
        };
        let name = format!("bot-{:03}", args.first + i);
        let token = issuer
            .issue(
                &name,
                Role::Player,
                Duration::from_secs(86_400),
                SystemTime::now(),
            )
            .with_context(|| format!("token for {name}"))?;
        let bearer = BearerToken::new(&token).with_context(|| format!("token for {name}"))?;
        let mut player = client(channel, bearer);
        if limits.is_none() {
            let tables = player
                .list_tables(pb::ListTablesRequest {})
                .await
                .map_err(|s| status_error(&s).context("ListTables"))?
                .into_inner()
                .tables;
            let Some(info) = tables.iter().find(|t| t.table_id == args.table) else {
                bail!("--table {}: the broadcaster has no such table", args.table);
            };
            limits = Some(limits_of(info));
        }
        let bot = Bot {
            name,
            table: args.table.clone(),
            temperament: Temperament::draw(&mut master, watchers_permille),
            rng: ChaCha20Rng::seed_from_u64(master.next_u64()),
            limits: limits.unwrap_or([(1, i64::MAX); 9]),
            balance: None,
            previous: Vec::new(),
            broke: false,
            stats: Arc::clone(stats),
        };
        tasks.spawn(bot.run(player, stop.clone()));
    }
    Ok(())
}

/// One simulated player.
struct Bot {
    name: String,
    table: String,
    temperament: Temperament,
    rng: ChaCha20Rng,
    limits: [(i64, i64); 9],
    balance: Option<i64>,
    previous: Vec<(BetKind, i64)>,
    broke: bool,
    stats: Arc<Stats>,
}

/// A decision due at `at` for `round`.
struct Pending {
    round: String,
    at: Instant,
}

impl Bot {
    async fn run(
        mut self,
        mut player: Client,
        mut stop: watch::Receiver<bool>,
    ) -> anyhow::Result<()> {
        if let Ok(balance) = player.get_balance(pb::GetBalanceRequest {}).await {
            let available = balance.into_inner().available_minor;
            // Zero may still become a welcome credit on the first bet.
            if available > 0 {
                self.balance = Some(available);
            }
        }
        // The feed runs on its own task so that waiting to bet never stalls reading.
        let (tx, mut rx) = mpsc::channel::<anyhow::Result<Item>>(256);
        let mut feed = Feed::new(player.clone(), &self.table, false);
        let reader = tokio::spawn(async move {
            loop {
                let item = feed.next().await;
                let failed = item.is_err();
                if tx.send(item).await.is_err() || failed {
                    break;
                }
            }
        });
        let mut pending: Option<Pending> = None;
        let result = loop {
            let wake = pending.as_ref().map(|p| p.at);
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break Ok(());
                    }
                }
                item = rx.recv() => match item {
                    None => break Ok(()),
                    Some(Err(e)) => break Err(e.context(self.name.clone())),
                    Some(Ok(Item::Event(event))) => self.on_event(&event, &mut pending),
                    Some(Ok(_)) => {}
                },
                () = sleep_until(wake), if wake.is_some() => {
                    if let Some(p) = pending.take() {
                        self.act(&mut player, &p.round).await;
                    }
                }
            }
        };
        reader.abort();
        result
    }

    fn on_event(&mut self, event: &pb::TableEvent, pending: &mut Option<Pending>) {
        match &event.event {
            Some(Event::Snapshot(s)) => {
                if let Some(b) = &s.balance
                    && (b.available_minor > 0 || self.balance.is_some())
                {
                    self.balance = Some(b.available_minor);
                }
                if s.phase() == pb::TablePhase::BettingOpen && !event.round_id.is_empty() {
                    *pending = self.schedule(&event.round_id, u64::from(s.countdown_ms));
                }
            }
            Some(Event::BettingOpened(o)) => {
                *pending = self.schedule(&event.round_id, u64::from(o.duration_ms));
            }
            Some(Event::BettingClosed(_)) => *pending = None,
            Some(Event::RoundResult(_) | Event::RoundVoided(_)) => {
                self.stats.round_done(&event.round_id);
            }
            Some(Event::Settled(s)) => self
                .stats
                .settled(s.total_returned_minor.saturating_sub(s.total_stake_minor)),
            Some(Event::BalanceChanged(b)) => {
                if let Some(balance) = &b.balance {
                    self.balance = Some(balance.available_minor);
                }
            }
            _ => {}
        }
    }

    /// When to decide: a human pause, but never after betting closes (`window_ms` 0: no
    /// timer, the croupier closes betting).
    fn schedule(&mut self, round: &str, window_ms: u64) -> Option<Pending> {
        if self.temperament.watcher || self.broke {
            return None;
        }
        let pause = MIN_PAUSE_MS + self.rng.next_u64() % (MAX_PAUSE_MS - MIN_PAUSE_MS + 1);
        let latest = if window_ms == 0 {
            u64::MAX
        } else {
            window_ms.checked_sub(CLOSING_MARGIN_MS)?
        };
        Some(Pending {
            round: round.to_owned(),
            at: Instant::now() + Duration::from_millis(pause.min(latest)),
        })
    }

    async fn act(&mut self, player: &mut Client, round: &str) {
        let view = RoundView {
            limits: self.limits,
            balance: self.balance,
            previous: self.previous.clone(),
        };
        let decision = decide(&self.temperament, &view, &mut self.rng);
        let key = match fresh_key() {
            Ok(key) => key,
            Err(_) => format!("{}-{round}", self.name),
        };
        let reply = match decision {
            Decision::Watch | Decision::Skip => return,
            Decision::Broke => {
                self.broke = true;
                eprintln!("{} is broke and stops betting", self.name);
                return;
            }
            Decision::Rebet => {
                player
                    .rebet(pb::RebetRequest {
                        table_id: self.table.clone(),
                        round_id: round.to_owned(),
                        idempotency_key: key,
                    })
                    .await
            }
            Decision::Bets(ref bets) => {
                player
                    .place_bets(pb::PlaceBetsRequest {
                        table_id: self.table.clone(),
                        round_id: round.to_owned(),
                        bets: bets_to_pb(bets),
                        idempotency_key: key,
                    })
                    .await
            }
        };
        match reply {
            Ok(reply) => {
                let reply = reply.into_inner();
                let mut taken = Vec::new();
                let mut refused = 0u64;
                for d in &reply.decisions {
                    match &d.decision {
                        Some(PbDecision::Accepted(a)) => {
                            if let Ok(kind) = pb::BetKind::try_from(a.kind)
                                && let Ok(kind) = BetKind::try_from(kind)
                            {
                                taken.push((kind, a.accepted_minor));
                            }
                        }
                        _ => refused += 1,
                    }
                }
                let staked = taken.iter().fold(0i64, |s, b| s.saturating_add(b.1));
                self.stats.bets(taken.len() as u64, refused, staked);
                if !taken.is_empty() {
                    self.previous = taken;
                }
                if let Some(b) = &reply.balance {
                    self.balance = Some(b.available_minor);
                }
            }
            Err(status) => {
                self.stats.error();
                eprintln!("{}: {}", self.name, status_error(&status));
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
