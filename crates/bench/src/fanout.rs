//! `banco-bench fanout`: the time from the table accepting a card to each subscriber
//! receiving it, and the broadcaster's memory per subscriber.
//!
//! This process hosts a validator and a broadcaster with a live table (journal in a
//! temporary folder) and deals whole rounds from a seeded shoe, one card every
//! `--interval-ms`. The subscribers run in a child process (`banco-bench fanout-subscribers`):
//! real gRPC Subscribe streams, `--per-connection` to a connection, each with its own
//! player token. The latency is `receipt − server_time`, where `server_time` is stamped
//! when the hub encodes the event, right after the table journaled the card.
//!
//! `--edges N` then deals the same way on a table whose events go through a NATS JetStream
//! server of its own (`--events`) to N `banco edge` processes, the subscribers' connections
//! spread over them; the latency is still from the table's encoding of the event (the edges
//! send its bytes as they are), so it includes the hop through JetStream and the edge.
//!
//! `--against nats` then starts `nats-server` on loopback, has the same child subscribe
//! to a subject over as many connections, and publishes the same public events banco sent
//! (recorded by one more subscriber during the banco run: every card, result, road and
//! betting event), at the same moments, each encoded once and stamped when published; both
//! results are printed side by side.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail, ensure};
use banco_auth::{BearerToken, Issuer, Role};
use banco_broadcaster::FanoutLimits;
use banco_rules::shoe::{Shoe, ShoeConfig, ShuffledShoe};
use banco_wire::pb;
use banco_wire::pb::table_service_client::TableServiceClient;
use prost::Message as _;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{MissedTickBehavior, timeout};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::common::{
    InProcess, TempDir, connect, cpu_of, keys, own_rss, rss_of, token, token_text,
};
use super::subscribers::Report;
use banco_natsd::{NatsOptions, NatsServer};

const TABLE: &str = "T01";
const SUBJECT: &str = "banco.T01.events";

/// Most cards: an 8-deck shoe's cut card comes 16 cards from the end of 416.
const MAX_CARDS: usize = 300;

/// Edges at most (each a process of its own).
const MAX_EDGES: usize = 16;

/// Streams to a connection at most: hyper's default HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS.
const MAX_PER_CONNECTION: usize = 200;

/// How long the subscribers may take to open their streams, per thousand.
const READY_PER_THOUSAND: Duration = Duration::from_secs(30);

/// Time the subscribers are left idle before the memory is read.
const SETTLE: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub(crate) struct FanoutArgs {
    /// Subscribers, each with its own Subscribe stream and player token.
    #[arg(long, default_value_t = 1_000)]
    subscribers: usize,
    /// Subscriptions sharing one HTTP/2 (or NATS) connection (1 to 200).
    #[arg(long, default_value_t = 100)]
    per_connection: usize,
    /// Cards to deal, at least (whole rounds are dealt, so a few more may come; 1 to 300).
    #[arg(long, default_value_t = 60)]
    cards: usize,
    /// Time between two cards, so that each card is timed alone, not behind a backlog.
    #[arg(long, default_value_t = 200)]
    interval_ms: u64,
    /// Seed of the ChaCha20 shuffle of the shoe dealt.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also run the same deal with the table's events through NATS JetStream
    /// (`--events`) and this many `banco edge` processes, the subscribers spread over
    /// them, and print it beside the direct run (0: none; 1 to 16).
    #[arg(long, default_value_t = 0)]
    edges: usize,
    /// Also run the same fan-out through this, and print both side by side.
    #[arg(long, value_enum)]
    against: Option<Against>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Against {
    /// A `nats-server` on loopback (Debian package `nats-server`).
    Nats,
}

fn validate(args: &FanoutArgs) -> anyhow::Result<()> {
    ensure!(
        (1..=100_000).contains(&args.subscribers),
        "--subscribers {}: must be 1 to 100,000",
        args.subscribers
    );
    ensure!(
        (1..=MAX_PER_CONNECTION).contains(&args.per_connection),
        "--per-connection {}: must be 1 to {MAX_PER_CONNECTION} (HTTP/2's usual limit of \
         concurrent streams)",
        args.per_connection
    );
    ensure!(
        (1..=MAX_CARDS).contains(&args.cards),
        "--cards {}: must be 1 to {MAX_CARDS} (one shoe)",
        args.cards
    );
    ensure!(
        args.interval_ms <= 60_000,
        "--interval-ms {}: must be at most 60,000",
        args.interval_ms
    );
    ensure!(
        args.edges <= MAX_EDGES,
        "--edges {}: must be 0 to {MAX_EDGES}",
        args.edges
    );
    Ok(())
}

/// One run's figures.
#[derive(Debug)]
struct Run {
    name: String,
    report: Report,
    /// Bytes of the serving process's memory per subscriber.
    memory_per_subscriber: i64,
    /// From the first card sent to the subscribers' report.
    wall: Duration,
    /// What went wrong beyond the subscribers' own report.
    mismatch: Option<String>,
    /// CPU time of the processes serving the subscribers (banco: this one, with the
    /// table and validator; edges: every edge; NATS: nats-server) while the events were
    /// sent.
    server_cpu: Duration,
    /// With edges: this process's (the origin's, with the table and validator) and
    /// nats-server's, while the events were sent.
    origin_cpu: Option<Duration>,
    nats_cpu: Option<Duration>,
    /// The public events each subscriber was sent (cards, results, roads, betting…).
    events: usize,
}

impl Run {
    /// The serving processes' CPU for one event to one subscriber.
    fn cpu_per_delivery(&self) -> Option<Duration> {
        let deliveries = u32::try_from(self.report.subscribers * self.events).ok()?;
        self.server_cpu.checked_div(deliveries)
    }
}

/// Where a run's subscribers subscribe, and whose memory and CPU it counts.
struct Target<'a> {
    name: String,
    /// PlayerService URLs; the subscribers' connections go to each in turn.
    urls: Vec<String>,
    /// The processes serving the subscribers (`None`: this one).
    serving: Vec<Option<u32>>,
    /// With edges: the NATS server between the origin and them.
    nats: Option<&'a NatsServer>,
}

impl Target<'_> {
    fn rss(&self) -> anyhow::Result<u64> {
        let mut total = 0;
        for pid in &self.serving {
            total += match pid {
                Some(pid) => rss_of(*pid)?,
                None => own_rss()?,
            };
        }
        Ok(total)
    }

    fn cpu(&self) -> anyhow::Result<Duration> {
        let mut total = Duration::ZERO;
        for pid in &self.serving {
            total += cpu_of(*pid)?;
        }
        Ok(total)
    }
}

pub(super) async fn run(args: &FanoutArgs) -> anyhow::Result<()> {
    validate(args)?;
    let issuer = keys()?;
    let hosted = InProcess::start(&issuer, TABLE, 0, FanoutLimits::default()).await?;
    let direct = Target {
        name: "banco (gRPC)".into(),
        urls: vec![format!("http://{}", hosted.addr)],
        serving: vec![None],
        nats: None,
    };
    let banco = run_banco(args, &issuer, &hosted, &direct).await;
    hosted.stop().await;
    let (banco, sent) = banco?;
    let mut runs = vec![banco];
    if args.edges > 0 {
        runs.push(run_edges(args, &issuer).await?);
    }
    if args.against == Some(Against::Nats) {
        runs.push(run_nats(args, &sent).await?);
    }
    print!("{}", table(args, &runs));
    let failed: Vec<&str> = runs
        .iter()
        .filter(|r| r.mismatch.is_some() || r.report.problem_count > 0)
        .map(|r| r.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "not every subscriber saw every card exactly once, in order ({})",
            failed.join(", ")
        );
    }
    Ok(())
}

type Croupier = TableServiceClient<InterceptedService<Channel, BearerToken>>;

/// Deals whole rounds from a seeded shoe, as a croupier would.
struct Dealer {
    client: Croupier,
    shoe: ShuffledShoe,
    commands: u64,
    /// Every card dealt, as its CardDealt event says it.
    dealt: Vec<pb::CardDealt>,
}

impl Dealer {
    fn id(&mut self) -> String {
        self.commands += 1;
        format!("bench-{}", self.commands)
    }

    fn accepted(what: &str, reply: pb::CommandReply) -> anyhow::Result<pb::TableState> {
        match (reply.refusal, reply.state) {
            (None, Some(state)) => Ok(state),
            (refusal, _) => bail!("{what} refused: {refusal:?}"),
        }
    }

    async fn open_shoe(&mut self) -> anyhow::Result<()> {
        let command_id = self.id();
        let reply = self
            .client
            .open_shoe(pb::OpenShoeRequest {
                table_id: TABLE.into(),
                command_id,
                config: None,
            })
            .await?
            .into_inner();
        Self::accepted("OpenShoe", reply)?;
        let burn = self.shoe.burn().context("burn")?;
        let command_id = self.id();
        let reply = self
            .client
            .burn(pb::BurnRequest {
                table_id: TABLE.into(),
                command_id,
                exposed_card: burn.exposed.to_string(),
                source: pb::CardSource::Scanner.into(),
            })
            .await?
            .into_inner();
        Self::accepted("Burn", reply)?;
        Ok(())
    }

    /// Opens and closes betting; the round id.
    async fn start_round(&mut self) -> anyhow::Result<String> {
        let command_id = self.id();
        let reply = self
            .client
            .open_betting(pb::OpenBettingRequest {
                table_id: TABLE.into(),
                command_id,
                duration_ms: 0,
            })
            .await?
            .into_inner();
        let round_id = Self::accepted("OpenBetting", reply)?.round_id;
        let command_id = self.id();
        let reply = self
            .client
            .close_betting(pb::CloseBettingRequest {
                table_id: TABLE.into(),
                command_id,
            })
            .await?
            .into_inner();
        Self::accepted("CloseBetting", reply)?;
        Ok(round_id)
    }

    /// Deals the shoe's next card; whether the hand is complete.
    async fn deal(&mut self) -> anyhow::Result<bool> {
        let card = self.shoe.next_card().context("the shoe")?;
        let command_id = self.id();
        let reply = self
            .client
            .deal_card(pb::DealCardRequest {
                table_id: TABLE.into(),
                command_id,
                card: card.to_string(),
                source: pb::CardSource::Scanner.into(),
            })
            .await?
            .into_inner();
        let state = Self::accepted(&format!("DealCard {card}"), reply)?;
        let complete = state.due() == pb::Due::Complete;
        self.dealt.push(pb::CardDealt {
            card: state.cards.last().cloned(),
            due: state.due,
            player_total: state.player_total,
            banker_total: state.banker_total,
            cards_left: state.cards_left,
        });
        Ok(complete)
    }

    async fn confirm(&mut self, round_id: String) -> anyhow::Result<()> {
        let command_id = self.id();
        let reply = self
            .client
            .confirm_result(pb::ConfirmResultRequest {
                table_id: TABLE.into(),
                command_id,
                round_id,
            })
            .await?
            .into_inner();
        Self::accepted("ConfirmResult", reply)?;
        self.shoe.hand_finished().context("the shoe")?;
        Ok(())
    }
}

/// A public event banco sent, and when, from the first card's deal.
type Sent = (Duration, pb::TableEvent);

/// One more subscriber, in this process: records the public events of the run as they
/// arrive, until `stop`.
fn record(
    channel: Channel,
    bearer: BearerToken,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<anyhow::Result<Vec<(Instant, pb::TableEvent)>>> {
    use banco_wire::pb::player_service_client::PlayerServiceClient;
    use pb::table_event::Event as E;
    tokio::spawn(async move {
        let mut client = PlayerServiceClient::with_interceptor(channel, bearer);
        let mut stream = client
            .subscribe(pb::SubscribeRequest {
                table_id: TABLE.into(),
                resume_from_seq: 0,
            })
            .await?
            .into_inner();
        let mut seen = Vec::new();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = &mut stop => return Ok(seen),
                message = stream.message() => match message? {
                    Some(event) => {
                        let private = matches!(
                            event.event,
                            Some(E::Snapshot(_) | E::BetAccepted(_) | E::BetRefused(_) | E::Settled(_) | E::BalanceChanged(_) | E::Muted(_) | E::ResumeGap(_) | E::CutOff(_))
                        );
                        if !private {
                            seen.push((Instant::now(), event));
                        }
                    }
                    None => bail!("the recording subscriber's stream ended"),
                },
            }
        }
    })
}

/// The run, and the public events it sent (for NATS to publish the same).
async fn run_banco(
    args: &FanoutArgs,
    issuer: &Issuer,
    hosted: &InProcess,
    target: &Target<'_>,
) -> anyhow::Result<(Run, Vec<Sent>)> {
    let channel = connect(hosted.addr).await?;
    let mut dealer = Dealer {
        client: TableServiceClient::with_interceptor(
            channel,
            token(issuer, Role::Croupier, "bench-croupier")?,
        ),
        shoe: Shoe::shuffled(
            ShoeConfig::default(),
            &mut ChaCha20Rng::seed_from_u64(args.seed),
        )
        .context("shoe configuration")?,
        commands: 0,
        dealt: Vec::new(),
    };
    dealer.open_shoe().await?;

    let tokens = hosted.dir.0.join("tokens");
    write_tokens(&tokens, issuer, args.subscribers)?;
    let before = target.rss()?;
    let mut child_args: Vec<String> = target
        .urls
        .iter()
        .flat_map(|url| ["--server".to_owned(), url.clone()])
        .collect();
    child_args.extend([
        "--tokens-file".into(),
        tokens.display().to_string(),
        "--table".into(),
        TABLE.into(),
        "--subscribers".into(),
        args.subscribers.to_string(),
        "--per-connection".into(),
        args.per_connection.to_string(),
    ]);
    let mut child = Subscribers::spawn(&child_args)?;
    child.ready(args.subscribers).await?;
    tokio::time::sleep(SETTLE).await;
    let after = target.rss()?;
    let (stop_recording, recording) = tokio::sync::oneshot::channel();
    let recorder = record(
        connect(hosted.addr).await?,
        token(issuer, Role::Player, "bench-recorder")?,
        recording,
    );

    let cpu_before = target.cpu()?;
    let origin_before = cpu_of(None)?;
    let nats_before = target.nats.map(|n| cpu_of(Some(n.pid()))).transpose()?;
    let started = Instant::now();
    let mut tick = pacer(args.interval_ms);
    while dealer.dealt.len() < args.cards {
        let round_id = dealer.start_round().await?;
        loop {
            tick.tick().await;
            if dealer.deal().await? {
                break;
            }
        }
        dealer.confirm(round_id).await?;
    }
    // The last card is timed alone too: the word that the run is over wakes every
    // subscriber, which would otherwise land in the middle of its fan-out.
    tick.tick().await;
    let report = child.finish(dealer.dealt.len()).await?;
    let wall = started.elapsed();
    let server_cpu = target.cpu()?.saturating_sub(cpu_before);
    let (origin_cpu, nats_cpu) = match (target.nats, nats_before) {
        (Some(nats), Some(before)) => (
            Some(cpu_of(None)?.saturating_sub(origin_before)),
            Some(cpu_of(Some(nats.pid()))?.saturating_sub(before)),
        ),
        _ => (None, None),
    };
    let _ = stop_recording.send(());
    let sent: Vec<Sent> = recorder
        .await
        .context("the recording subscriber")??
        .into_iter()
        .filter_map(|(at, event)| at.checked_duration_since(started).map(|d| (d, event)))
        .collect();
    let dealt: Vec<String> = dealer
        .dealt
        .iter()
        .map(|d| d.card.as_ref().map_or(String::new(), |c| c.card.clone()))
        .collect();
    let mismatch = (report.cards != dealt).then(|| {
        format!(
            "the first subscriber saw {:?}, the table dealt {dealt:?}",
            report.cards
        )
    });
    let run = Run {
        server_cpu,
        origin_cpu,
        nats_cpu,
        events: sent.len(),
        name: target.name.clone(),
        memory_per_subscriber: per_subscriber(before, after, args.subscribers),
        report,
        wall,
        mismatch,
    };
    Ok((run, sent))
}

/// The same deal with the table's events through NATS JetStream and `--edges` edges, the
/// subscribers' connections spread over them.
async fn run_edges(args: &FanoutArgs, issuer: &Issuer) -> anyhow::Result<Run> {
    let dir = TempDir::new()?;
    let nats = NatsServer::jetstream(&dir.0.join("jetstream"))?;
    let hosted =
        InProcess::start_publishing(issuer, TABLE, FanoutLimits::default(), &nats.url).await?;
    let run = async {
        let edges = Edges::start(args.edges, &dir.0, issuer, &nats.url).await?;
        edges.serving(issuer).await?;
        let target = Target {
            name: format!(
                "JetStream + {} edge{}",
                args.edges,
                if args.edges == 1 { "" } else { "s" }
            ),
            urls: edges.urls.clone(),
            serving: edges.pids.iter().copied().map(Some).collect(),
            nats: Some(&nats),
        };
        let (run, _) = run_banco(args, issuer, &hosted, &target).await?;
        drop(edges);
        anyhow::Ok(run)
    }
    .await;
    hosted.stop().await;
    run
}

/// `banco edge` processes of this binary; killed when dropped.
struct Edges {
    _children: Vec<Child>,
    urls: Vec<String>,
    pids: Vec<u32>,
}

impl Edges {
    /// `n` edges reading the streams on `nats`, checking tokens of `issuer`'s.
    async fn start(n: usize, dir: &Path, issuer: &Issuer, nats: &str) -> anyhow::Result<Edges> {
        let public_key = dir.join("signing.pub");
        banco_auth::keys::save_verifying_key(&public_key, &issuer.verifying_key())
            .context("the edges' public key")?;
        let service_token = dir.join("edge.token");
        std::fs::write(
            &service_token,
            token_text(issuer, Role::Service, "bench-edge")?,
        )
        .context("the edges' service token")?;
        let mut edges = Edges {
            _children: Vec::new(),
            urls: Vec::new(),
            pids: Vec::new(),
        };
        for _ in 0..n {
            let mut child = Command::new(super::this_binary()?)
                .args(["edge", "--listen", "127.0.0.1:0", "--events", nats])
                .arg("--public-key")
                .arg(&public_key)
                .arg("--service-token-file")
                .arg(&service_token)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .context("could not start an edge")?;
            let stdout = child.stdout.take().context("an edge's stdout")?;
            let mut lines = BufReader::new(stdout).lines();
            let line = timeout(Duration::from_secs(30), lines.next_line())
                .await
                .context("no address from an edge within 30 s")??
                .context("an edge ended before it listened")?;
            let addr = line
                .strip_prefix("edge listening on ")
                .with_context(|| format!("an edge said {line:?}"))?;
            edges.urls.push(format!("http://{addr}"));
            edges
                .pids
                .push(child.id().context("an edge ended at once")?);
            edges._children.push(child);
        }
        Ok(edges)
    }

    /// Waits until every edge has the table in its lobby. An edge serves once it has read
    /// the lobby or waited 3 s for it, and the origin's record may reach the lobby after
    /// that read (the origin starts beside the edges): a subscriber then would be told
    /// the table is unknown, and the subscribers' process does not retry.
    async fn serving(&self, issuer: &Issuer) -> anyhow::Result<()> {
        use banco_wire::pb::player_service_client::PlayerServiceClient;
        let bearer = token(issuer, Role::Player, "bench-lobby")?;
        for url in &self.urls {
            let channel = Channel::from_shared(url.clone())?
                .connect()
                .await
                .with_context(|| format!("could not connect to the edge at {url}"))?;
            let mut client = PlayerServiceClient::with_interceptor(channel, bearer.clone());
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let lobby = client.list_tables(pb::ListTablesRequest {}).await?;
                if lobby.get_ref().tables.iter().any(|t| t.table_id == TABLE) {
                    break;
                }
                ensure!(
                    Instant::now() < deadline,
                    "the edge at {url} has not had table {TABLE} in its lobby within 30 s"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }
}

async fn run_nats(args: &FanoutArgs, sent: &[Sent]) -> anyhow::Result<Run> {
    let server = NatsServer::start(NatsOptions::default())?;
    // Dropping it stops it, on error paths too.
    run_nats_on(args, &server, sent).await
}

async fn run_nats_on(args: &FanoutArgs, server: &NatsServer, sent: &[Sent]) -> anyhow::Result<Run> {
    let dealt: Vec<&pb::CardDealt> = sent
        .iter()
        .filter_map(|(_, e)| match &e.event {
            Some(pb::table_event::Event::CardDealt(card)) => Some(card),
            _ => None,
        })
        .collect();
    let publisher = async_nats::connect(server.url.as_str())
        .await
        .with_context(|| format!("could not connect to NATS at {}", server.url))?;
    let before = rss_of(server.pid())?;
    let mut child = Subscribers::spawn(&[
        "--nats".into(),
        server.url.clone(),
        "--subject".into(),
        SUBJECT.into(),
        "--subscribers".into(),
        args.subscribers.to_string(),
        "--per-connection".into(),
        args.per_connection.to_string(),
    ])?;
    child.ready(args.subscribers).await?;
    tokio::time::sleep(SETTLE).await;
    let after = rss_of(server.pid())?;

    // The same events at the same moments as banco sent them, each encoded once.
    let cpu_before = cpu_of(Some(server.pid()))?;
    let started = tokio::time::Instant::now();
    for (at, event) in sent {
        tokio::time::sleep_until(started + *at).await;
        let mut event = event.clone();
        event.server_time = Some(banco_wire::Timestamp::from(SystemTime::now()));
        publisher
            .publish(SUBJECT, event.encode_to_vec().into())
            .await
            .context("NATS publish")?;
        publisher.flush().await.context("NATS flush")?;
    }
    // As for banco: the last event's fan-out is over before the word that the run is.
    tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
    let started = Instant::now() - started.elapsed();
    let report = child.finish(dealt.len()).await?;
    let wall = started.elapsed();
    let server_cpu = cpu_of(Some(server.pid()))?.saturating_sub(cpu_before);
    let cards: Vec<String> = dealt
        .iter()
        .map(|d| d.card.as_ref().map_or(String::new(), |c| c.card.clone()))
        .collect();
    let mismatch = (report.cards != cards).then(|| {
        format!(
            "the first subscriber saw {:?}, the bench published {cards:?}",
            report.cards
        )
    });
    let version = server.version.trim_start_matches("nats-server: ");
    Ok(Run {
        server_cpu,
        origin_cpu: None,
        nats_cpu: None,
        events: sent.len(),
        name: format!("NATS {version}"),
        memory_per_subscriber: per_subscriber(before, after, args.subscribers),
        report,
        wall,
        mismatch,
    })
}

fn pacer(interval_ms: u64) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(Duration::from_millis(interval_ms.max(1)));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

fn per_subscriber(before: u64, after: u64, subscribers: usize) -> i64 {
    let grown = i128::from(after) - i128::from(before);
    i64::try_from(grown / subscribers.max(1) as i128).unwrap_or(i64::MAX)
}

/// One player token a line, readable by this user only.
fn write_tokens(path: &Path, issuer: &Issuer, count: usize) -> anyhow::Result<()> {
    let mut text = String::with_capacity(count * 256);
    for p in 0..count {
        text.push_str(&token_text(issuer, Role::Player, &format!("p{p}"))?);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("could not create {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("could not write {}", path.display()))
}

/// The subscribers' process: `banco-bench fanout-subscribers`.
struct Subscribers {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Subscribers {
    fn spawn(args: &[String]) -> anyhow::Result<Subscribers> {
        let mut child = Command::new(super::this_binary()?)
            .args(["fanout-subscribers"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("could not start the subscribers' process")?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the subscribers' stdout")?;
        Ok(Subscribers {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    async fn line(&mut self, within: Duration, what: &str) -> anyhow::Result<String> {
        match timeout(within, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => {
                let status = self.child.wait().await?;
                bail!("the subscribers' process ended ({status}) before {what}")
            }
            Ok(Err(e)) => Err(e).context("reading the subscribers' output"),
            Err(_) => bail!("no {what} from the subscribers' process within {within:?}"),
        }
    }

    async fn ready(&mut self, subscribers: usize) -> anyhow::Result<()> {
        let within = READY_PER_THOUSAND * u32::try_from(subscribers.div_ceil(1_000)).unwrap_or(1);
        let line = self.line(within, "`ready`").await?;
        ensure!(
            line == "ready",
            "the subscribers said {line:?}, not `ready`"
        );
        Ok(())
    }

    /// Says how many cards were sent; the subscribers' report.
    async fn finish(mut self, cards: usize) -> anyhow::Result<Report> {
        let stdin = self.stdin.as_mut().context("the subscribers' stdin")?;
        stdin
            .write_all(format!("done {cards}\n").as_bytes())
            .await?;
        stdin.flush().await?;
        let line = self
            .line(Duration::from_secs(60), "the subscribers' report")
            .await?;
        drop(self.stdin.take());
        let _ = timeout(Duration::from_secs(10), self.child.wait()).await;
        serde_json::from_str(&line).with_context(|| format!("the subscribers' report: {line}"))
    }
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1_000.0)
}

/// How one row of the table shows a run.
type Cell = Box<dyn Fn(&Run) -> String>;

/// Both runs side by side.
fn table(args: &FanoutArgs, runs: &[Run]) -> String {
    let mut out = String::new();
    let first = &runs[0].report;
    let _ = writeln!(
        out,
        "banco-bench fanout: {} subscribers over {} connections ({} per connection), \
         {} cards, one every {} ms; latency = receipt in the subscribers' process − server_time",
        first.subscribers,
        first.connections,
        args.per_connection,
        first.expected_cards,
        args.interval_ms
    );
    let rows: [(&str, Cell); 15] = [
        ("card latency p50", Box::new(|r| ms(r.report.p50_us))),
        ("card latency p90", Box::new(|r| ms(r.report.p90_us))),
        ("card latency p99", Box::new(|r| ms(r.report.p99_us))),
        ("card latency max", Box::new(|r| ms(r.report.max_us))),
        (
            "card receipts timed",
            Box::new(|r| r.report.received.to_string()),
        ),
        (
            "server memory per subscriber",
            Box::new(|r| format!("{} B", r.memory_per_subscriber)),
        ),
        (
            "subscribers: every card once, in order",
            Box::new(|r| format!("{} of {}", r.report.complete, r.report.subscribers)),
        ),
        (
            "cards as dealt",
            Box::new(|r| if r.mismatch.is_none() { "yes" } else { "NO" }.to_owned()),
        ),
        (
            "serving processes' CPU while sending",
            Box::new(|r| format!("{:.2} s", r.server_cpu.as_secs_f64())),
        ),
        (
            "public events to each subscriber",
            Box::new(|r| r.events.to_string()),
        ),
        (
            "serving CPU per event per subscriber",
            Box::new(|r| {
                r.cpu_per_delivery().map_or("-".to_owned(), |c| {
                    format!("{:.2} µs", c.as_secs_f64() * 1e6)
                })
            }),
        ),
        (
            "origin CPU (table, validator) while sending",
            Box::new(|r| {
                r.origin_cpu
                    .map_or("-".to_owned(), |c| format!("{:.2} s", c.as_secs_f64()))
            }),
        ),
        (
            "nats-server CPU while sending",
            Box::new(|r| {
                r.nats_cpu
                    .map_or("-".to_owned(), |c| format!("{:.2} s", c.as_secs_f64()))
            }),
        ),
        (
            "subscribers' CPU while receiving",
            Box::new(|r| format!("{:.2} s", r.report.cpu_ms as f64 / 1_000.0)),
        ),
        (
            "wall time (first card to report)",
            Box::new(|r| format!("{:.2} s", r.wall.as_secs_f64())),
        ),
    ];
    let _ = write!(out, "{:<44}", "");
    for run in runs {
        let _ = write!(out, "{:>22}", run.name);
    }
    out.push('\n');
    for (label, cell) in &rows {
        let _ = write!(out, "{label:<44}");
        for run in runs {
            let _ = write!(out, "{:>22}", cell(run));
        }
        out.push('\n');
    }
    for run in runs {
        for problem in &run.report.problems {
            let _ = writeln!(out, "{}: {problem}", run.name);
        }
        if run.report.problem_count > run.report.problems.len() {
            let _ = writeln!(
                out,
                "{}: … {} problems in all",
                run.name, run.report.problem_count
            );
        }
        if let Some(mismatch) = &run.mismatch {
            let _ = writeln!(out, "{}: {mismatch}", run.name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: FanoutArgs,
    }

    fn parse(line: &[&str]) -> anyhow::Result<FanoutArgs> {
        let cli = Cli::try_parse_from(std::iter::once("fanout").chain(line.iter().copied()))?;
        validate(&cli.args)?;
        Ok(cli.args)
    }

    #[test]
    fn defaults_and_limits() {
        let args = parse(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (args.subscribers, args.per_connection, args.cards),
            (1_000, 100, 60)
        );
        assert_eq!(args.against, None);
        let nats = parse(&["--subscribers", "10000", "--against", "nats"]);
        assert!(nats.is_ok_and(|a| a.against == Some(Against::Nats)));
        let edges = parse(&["--edges", "3"]);
        assert!(edges.is_ok_and(|a| a.edges == 3));
        assert_eq!(parse(&[]).map(|a| a.edges).ok(), Some(0));
        for bad in [
            &["--subscribers", "0"][..],
            &["--per-connection", "201"],
            &["--cards", "0"],
            &["--cards", "301"],
            &["--against", "kafka"],
            &["--edges", "17"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
        let refused = parse(&["--cards", "400"]);
        assert!(
            refused.is_err_and(|e| e.to_string().contains("--cards 400")),
            "the refusal names the bad value"
        );
    }

    #[test]
    fn memory_per_subscriber_may_be_negative() {
        assert_eq!(per_subscriber(1_000, 11_000, 10), 1_000);
        assert_eq!(per_subscriber(11_000, 1_000, 10), -1_000);
    }
}
