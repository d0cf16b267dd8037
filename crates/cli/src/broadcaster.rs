//! `banco broadcaster`: table actors served over TableService and PlayerService.
//!
//! Each `--table` is one table (`T01`, or `T01=5-300` with its limits in major units);
//! `--seven-tiers` hosts T01–T07 with the seven tiers of docs/src/rules/limits.md (seed 004).
//!
//! Files under `<data-dir>/<table>/`: the journal (`<table>.journal`), the outbox
//! watermark (`<table>.outbox`) and, until the archive service exists, `outbox.jsonl`:
//! every finished round, sealed into the table's hash chain, one JSON line each, in order,
//! written and fsynced before the watermark moves past it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_auth::keys::load_signing_key;
use banco_auth::{ClientTls, ServerTls, Verifier};
use banco_broadcaster::{
    ArchiveClient, CONNECTION_DRAIN, ClipStore, EventOptions, HostedTable, HubMetricFamilies,
    Origin, OutboxFile, Rate, RequestLimits, ServeOptions, VideoMetricFamilies, WelcomeCredit,
    serve,
};
#[cfg(feature = "jetstream")]
use banco_broadcaster::{EventLog, EventMetricFamilies};
use banco_rules::Paytable;
use banco_rules::shoe::ShoeConfig;
use banco_table::actor::{
    ActorConfig, ActorTask, ArchiveSink, Clock, RemoteRules, Rules, TableHandle, TableSigner, spawn,
};
use banco_table::metrics::TableMetricFamilies;
use banco_table::{
    Command, Limits, Pacing, TableConfig, TableSpec, parse_blocked_words, parse_table_spec,
};
use banco_wallet::Wallet;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::folder_lock::FolderLock;
use crate::grpc::ClientFlags;
use crate::service_life::ServiceLife;
use crate::stop_signal::StopSignal;
use crate::table_wallet::TableWallet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PacingArg {
    /// A croupier deals real cards.
    Live,
    /// Rounds dealt by the server on a timer.
    Automated,
    /// One player; a round starts when the player deals.
    Single,
}

#[derive(Debug, clap::Args)]
pub(crate) struct BroadcasterArgs {
    /// Address to serve on; beyond loopback, `--tls-cert` and `--tls-key` are required.
    #[arg(long, default_value = "127.0.0.1:7102")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: crate::service_life::TlsArgs,
    /// A table to host: its id (1 to 16 letters or digits, as in round ids), optionally
    /// with its limits per position in major units, `T01=5-300`. Repeat for more tables.
    #[arg(long = "table", default_value = "T01")]
    tables: Vec<String>,
    /// Host T01 to T07 with the seven tiers of the rules (docs/src/rules/limits.md: 2–41 …
    /// 200–2100), instead of `--table`.
    #[arg(long, conflicts_with = "tables")]
    seven_tiers: bool,
    /// How long betting stays open: on a live table it then closes by itself (without it,
    /// the croupier closes betting); on an automated table the default is 20.
    #[arg(long, value_name = "SECONDS")]
    betting_seconds: Option<u32>,
    /// The archive (ArchiveService) every finished round is delivered to, in order, with
    /// retries; called with the `--service-token-file` token. Without it, rounds go to
    /// `<data-dir>/<table>/outbox.jsonl`.
    #[arg(long, value_name = "URL")]
    archive: Option<String>,
    /// PEM CA certificate(s) the archive's TLS certificate must be signed by (https only).
    #[arg(long, value_name = "PEM")]
    archive_ca: Option<PathBuf>,
    /// The tables' signing key (`banco token keygen` makes one): every finished round's
    /// hash is signed with it, so the archive and auditors can tell the table's own records.
    /// Without it rounds go unsigned, and an archive given table keys refuses them.
    #[arg(long, value_name = "FILE")]
    table_key: Option<PathBuf>,
    /// Seats at each table (docs/src/rules/pacing.md: 5, or 0 for none: any number of players
    /// bet behind).
    #[arg(long, default_value_t = 0)]
    seats: u8,
    #[command(flatten)]
    limits: LimitArgs,
    /// A file of words masked in the table chat, one per line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    chat_blocked_words: Option<PathBuf>,
    /// Folder for a clip of every round (`<round_id>.mp4`, betting closed to result, from
    /// the video published to VideoIngest); with `--archive`, each is uploaded with its
    /// round. Default: `<data-dir>/clips`.
    #[arg(long, value_name = "DIR")]
    clips_dir: Option<PathBuf>,
    /// Record no round clips.
    #[arg(long, conflicts_with = "clips_dir")]
    no_clips: bool,
    /// Folder for the table's journal and outbox (under `<data-dir>/<table>/`).
    #[arg(long, default_value = "data")]
    data_dir: PathBuf,
    /// The validator (RulesService) asked about every card and settlement.
    #[arg(long, default_value = "http://127.0.0.1:7101")]
    validator: String,
    /// PEM CA certificate(s) the validator's TLS certificate must be signed by; required
    /// (and only allowed) with an `https://` `--validator`.
    #[arg(long, value_name = "PEM")]
    validator_ca: Option<PathBuf>,
    /// How long to wait for the validator before refusing a card.
    #[arg(long, default_value_t = 2000)]
    validator_timeout_ms: u64,
    #[command(flatten)]
    tokens: crate::service_life::TokenArgs,
    /// File holding this broadcaster's own token (role service), for the validator.
    #[arg(long)]
    service_token_file: PathBuf,
    /// Decks in the table's shoe.
    #[arg(long, default_value_t = 8)]
    decks: u8,
    /// Who paces the rounds.
    #[arg(long, value_enum, default_value = "live")]
    pacing: PacingArg,
    /// The paytable: standard, no-commission, …
    #[arg(long, default_value = "standard")]
    paytable: String,
    #[command(flatten)]
    wallet: crate::table_wallet::WalletArgs,
    /// Minor units the cashier deposits (once per player, under one key) into a player's
    /// wallet when they first come, for demos and tests; 0: none (real deployments credit
    /// players through the cashier, `banco cashier deposit`).
    #[arg(long, default_value_t = 0)]
    welcome_credit: i64,
    /// ISO 4217 code of the table's minor units.
    #[arg(long, default_value = "EUR")]
    currency: String,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
    /// Events that may wait unread for one subscriber (its link is slow or stalled) before
    /// it is cut off with its resume point; events are tens of bytes each.
    #[arg(long, value_name = "EVENTS", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    subscriber_queue: u32,
    /// A NATS server with JetStream (`nats://host:4222`): every event of each table is
    /// also published to the table's own stream there, for `banco edge` nodes to serve
    /// players from, and a restart resumes subscribers from it. Without it no NATS is
    /// needed. The table never waits for the server: while it is away events wait, then
    /// go out in order.
    #[arg(long, value_name = "URL")]
    events: Option<String>,
    /// Where edges reach this broadcaster's PlayerService (`https://tables-1.studio:7102`),
    /// written in each table's record; default: `http://` (`https://` with TLS) and the
    /// address listened on.
    #[arg(long, value_name = "URL", requires = "events")]
    advertise: Option<String>,
    /// Events each table's stream keeps (the oldest go first).
    #[arg(long, value_name = "EVENTS", default_value_t = EventOptions::default().max_events, requires = "events", value_parser = clap::value_parser!(i64).range(1..))]
    events_kept: i64,
    /// An origin (`https://casino.example`) whose pages may call PlayerService over
    /// gRPC-Web and frame the player page, besides the page's own; repeat for more. None
    /// by default.
    #[arg(long = "web-origin", value_name = "ORIGIN")]
    web_origins: Vec<String>,
}

pub(crate) fn run(args: &BroadcasterArgs) -> anyhow::Result<ExitCode> {
    refuse_left_out_features(args)?;
    if args.welcome_credit < 0 {
        bail!(
            "--welcome-credit {}: must be 0 or a positive number of minor units",
            args.welcome_credit
        );
    }
    let verifier = args.tokens.verifier()?;
    let tls = args.tls.load()?;
    let life = ServiceLife::new("broadcaster", args.listen, tls.as_ref(), &args.ops)?
        .with_workers(banco_broadcaster::table_workers());
    let validator_tls = args
        .validator_ca
        .as_deref()
        .map(ClientTls::from_ca_pem_file)
        .transpose()
        .context("--validator-ca")?;
    let token = std::fs::read_to_string(&args.service_token_file)
        .with_context(|| format!("could not read {}", args.service_token_file.display()))?;
    let shoe = ShoeConfig {
        decks: args.decks,
        ..ShoeConfig::default()
    };
    shoe.validate()
        .with_context(|| format!("--decks {}", args.decks))?;
    let serving = Serving {
        verifier,
        tls,
        limits: args.limits.checked()?,
        web_origins: args
            .web_origins
            .iter()
            .map(|origin| Origin::parse(origin).context("--web-origin"))
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    let configs = table_configs(args)?;
    let _data_lock = lock_data_dir(args)?;

    life.run(|life, stop| async move {
        let listener = life.bind().await?;
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        life.serve_metrics(registry).await?;

        let rules = Arc::new(
            RemoteRules::connect_tls(
                &args.validator,
                token.trim(),
                Duration::from_millis(args.validator_timeout_ms),
                validator_tls,
            )
            .map_err(|err| client_error(err, "--validator", "--validator-ca"))?,
        );
        let clips = open_clips(args)?;
        let signer = table_signer(args)?;
        let archive = archive_client(args, &token, clips.as_ref(), signer.as_ref(), &metrics)?;
        let table_wallet = open_wallet(args, &token).await?;
        #[cfg(feature = "jetstream")]
        let events = connect_events(args, &metrics).await?;
        let parts = TableParts {
            shoe,
            rules,
            archive,
            wallet: Arc::clone(&table_wallet.wallet),
            signer,
            metrics: &metrics,
            #[cfg(feature = "jetstream")]
            events: events.as_deref(),
        };
        let (hosted, tasks) = start_tables(args, configs, &parts).await?;
        let options = serve_options(args, serving, hosted, &table_wallet, metrics.hub);
        #[cfg(feature = "gstreamer")]
        let options = ServeOptions { clips, ..options };
        #[cfg(feature = "jetstream")]
        let options = ServeOptions { events, ..options };
        serve_then_stop(listener, options, tasks, stop).await
    })
}

/// What the broadcaster serves with, checked before anything starts.
struct Serving {
    verifier: Verifier,
    tls: Option<ServerTls>,
    limits: RequestLimits,
    web_origins: Vec<Origin>,
}

/// How the hosted tables are served; the clips and the event streams are added by the
/// caller, with the features that bring them.
fn serve_options(
    args: &BroadcasterArgs,
    serving: Serving,
    hosted: Vec<HostedTable>,
    table_wallet: &TableWallet,
    metrics: HubMetricFamilies,
) -> ServeOptions {
    let mut options = ServeOptions::new(Arc::new(serving.verifier), hosted);
    options.welcome = table_wallet
        .cashier
        .clone()
        .filter(|_| args.welcome_credit > 0)
        .map(|cashier| WelcomeCredit {
            amount: args.welcome_credit,
            cashier,
        });
    options.currency.clone_from(&args.currency);
    options.tls = serving.tls;
    options.metrics = metrics;
    options.limits = serving.limits;
    options.fanout.subscriber_queue = args.subscriber_queue as usize;
    options.web.allowed_origins = serving.web_origins;
    options.advertise.clone_from(&args.advertise);
    options
}

/// Each `--table` (or the seven tiers) with the table flags applied, checked.
fn table_configs(args: &BroadcasterArgs) -> anyhow::Result<Vec<TableConfig>> {
    let pacing = match args.pacing {
        PacingArg::Live => Pacing::Live,
        PacingArg::Automated => Pacing::AutomatedMultiplayer,
        PacingArg::Single => Pacing::SinglePlayer,
    };
    let paytable = Paytable::preset(&args.paytable)
        .with_context(|| format!("--paytable {}", args.paytable))?;
    let currency = banco_table::Currency::parse(&args.currency).context("--currency")?;
    let blocked_words = match &args.chat_blocked_words {
        Some(path) => read_words(path)?,
        None => Vec::new(),
    };
    let specs = if args.seven_tiers {
        SEVEN_TIERS
            .iter()
            .enumerate()
            .map(|(i, &(min, max))| TableSpec {
                id: format!("T{:02}", i + 1),
                limits: Some(Limits {
                    min: min * 100,
                    max: max * 100,
                }),
            })
            .collect()
    } else {
        args.tables
            .iter()
            .map(|spec| parse_table_spec(spec).context("--table"))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let mut configs = Vec::new();
    for spec in &specs {
        let mut config = TableConfig::new(&spec.id, pacing);
        config.policy.paytable = paytable.clone();
        config.policy.currency = currency;
        if let Some(limits) = spec.limits {
            config.policy.limits = limits;
        }
        config.policy.seats = args.seats;
        if let Some(seconds) = args.betting_seconds {
            if seconds == 0 {
                bail!(
                    "--betting-seconds 0: betting needs at least a second (leave it out on a live table to let the croupier close betting)"
                );
            }
            let ms = u64::from(seconds) * 1_000;
            match pacing {
                Pacing::Live => config.policy.live_betting_ms = Some(ms),
                Pacing::AutomatedMultiplayer | Pacing::SinglePlayer => {
                    config.policy.automated_betting_ms = ms;
                }
            }
        }
        config.policy.chat.blocked_words.clone_from(&blocked_words);
        config
            .validate()
            .with_context(|| format!("--table {}", spec.id))?;
        if configs.iter().any(|c: &TableConfig| c.table_id == spec.id) {
            bail!("--table {}: given twice", spec.id);
        }
        configs.push(config);
    }
    Ok(configs)
}

/// `--data-dir`, made if missing and held for as long as the lock lives: two broadcasters
/// on one folder would both append to the same journals.
fn lock_data_dir(args: &BroadcasterArgs) -> anyhow::Result<FolderLock> {
    std::fs::create_dir_all(&args.data_dir).with_context(|| {
        format!(
            "--data-dir {}: could not create it",
            args.data_dir.display()
        )
    })?;
    FolderLock::take(&args.data_dir, "banco broadcaster").context("--data-dir")
}

/// The broadcaster's metric families, registered for `/metrics`.
struct Metrics {
    table: TableMetricFamilies,
    hub: HubMetricFamilies,
    #[cfg(feature = "jetstream")]
    events: EventMetricFamilies,
    video: VideoMetricFamilies,
}

impl Metrics {
    fn register(registry: &mut Registry) -> Metrics {
        Metrics {
            table: TableMetricFamilies::register(registry),
            hub: HubMetricFamilies::register(registry),
            #[cfg(feature = "jetstream")]
            events: EventMetricFamilies::register(registry),
            video: VideoMetricFamilies::register(registry),
        }
    }
}

/// The signer of every finished round's hash (`--table-key`); without it rounds go unsigned,
/// and the log says so.
fn table_signer(args: &BroadcasterArgs) -> anyhow::Result<Option<Arc<TableSigner>>> {
    let Some(path) = &args.table_key else {
        tracing::warn!(
            "banco broadcaster: no --table-key: finished rounds go to the archive unsigned"
        );
        return Ok(None);
    };
    let key = load_signing_key(path).with_context(|| format!("--table-key {}", path.display()))?;
    Ok(Some(Arc::new(TableSigner::new(key))))
}

/// The client of `--archive`, uploading each round's clip and signing its record when
/// there are clips and a signer; `None` without `--archive` (rounds go to outbox files).
fn archive_client(
    args: &BroadcasterArgs,
    token: &str,
    clips: Option<&Arc<ClipStore>>,
    signer: Option<&Arc<TableSigner>>,
    metrics: &Metrics,
) -> anyhow::Result<Option<Arc<ArchiveClient>>> {
    let Some(url) = &args.archive else {
        return Ok(None);
    };
    let tls = args
        .archive_ca
        .as_deref()
        .map(ClientTls::from_ca_pem_file)
        .transpose()
        .context("--archive-ca")?;
    let mut client = ArchiveClient::connect(url, token.trim(), tls, Duration::from_secs(5))
        .map_err(|err| client_error(err, "--archive", "--archive-ca"))?
        .with_video_metrics(&metrics.video);
    if let Some(clips) = clips {
        client = client.with_clips(Arc::clone(clips));
    }
    if let Some(signer) = signer {
        client = client.with_signer(Arc::clone(signer));
    }
    Ok(Some(Arc::new(client)))
}

/// `err`, from setting up this broadcaster's client of the service at `server` (its flag),
/// trusting the CA given by `ca`, calling with the service token.
fn client_error(
    err: banco_auth::client::ClientError,
    server: &'static str,
    ca: &'static str,
) -> anyhow::Error {
    let flags = ClientFlags {
        server,
        ca,
        token: "--service-token-file",
    };
    crate::grpc::client_error(err, &flags)
}

/// The wallet the tables spend through; `--welcome-credit` needs the embedded one, whose
/// cashier this broadcaster can deposit with.
async fn open_wallet(args: &BroadcasterArgs, token: &str) -> anyhow::Result<TableWallet> {
    let table_wallet = args.wallet.open(&args.data_dir, token).await?;
    if args.welcome_credit > 0 && table_wallet.cashier.is_none() {
        bail!(
            "--welcome-credit: this broadcaster deposits only into its embedded wallet, not into \
             --wallet {}; credit players there (`banco cashier deposit`, or the casino's own \
             cashier)",
            args.wallet.wallet
        );
    }
    tracing::info!(wallet = %table_wallet.described, "banco broadcaster: the tables spend through this wallet");
    Ok(table_wallet)
}

/// The tables' streams on the NATS server of `--events`, if given.
#[cfg(feature = "jetstream")]
async fn connect_events(
    args: &BroadcasterArgs,
    metrics: &Metrics,
) -> anyhow::Result<Option<Arc<EventLog>>> {
    let Some(url) = &args.events else {
        return Ok(None);
    };
    let options = EventOptions {
        max_events: args.events_kept,
        ..EventOptions::default()
    };
    let events = EventLog::connect(url, options, metrics.events.clone())
        .await
        .context("--events")?;
    tracing::info!(%url, "banco broadcaster: each table's events also go to its stream on NATS JetStream");
    Ok(Some(Arc::new(events)))
}

/// What every table of this broadcaster starts with.
struct TableParts<'a> {
    shoe: ShoeConfig,
    rules: Arc<RemoteRules>,
    archive: Option<Arc<ArchiveClient>>,
    wallet: Arc<dyn Wallet>,
    signer: Option<Arc<TableSigner>>,
    metrics: &'a Metrics,
    #[cfg(feature = "jetstream")]
    events: Option<&'a EventLog>,
}

/// Starts the actor of each table, each journaling under `<data-dir>/<table>/` and
/// delivering its rounds to the archive or to its outbox file; an automated table gets
/// its first shoe.
async fn start_tables(
    args: &BroadcasterArgs,
    configs: Vec<TableConfig>,
    parts: &TableParts<'_>,
) -> anyhow::Result<(Vec<HostedTable>, Vec<ActorTask>)> {
    let mut hosted = Vec::new();
    let mut tasks = Vec::new();
    for config in configs {
        let dir = args.data_dir.join(&config.table_id);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("could not create {}", dir.display()))?;
        let sink: Arc<dyn ArchiveSink> = match &parts.archive {
            Some(client) => Arc::clone(client) as Arc<dyn ArchiveSink>,
            None => {
                let outbox_path = dir.join("outbox.jsonl");
                Arc::new(
                    OutboxFile::open(&outbox_path)
                        .with_context(|| format!("could not open {}", outbox_path.display()))?,
                )
            }
        };
        let mut actor_config = ActorConfig::in_dir(config.clone(), &dir);
        actor_config.wallet = Arc::clone(&parts.wallet);
        actor_config.signer.clone_from(&parts.signer);
        actor_config.metrics = parts.metrics.table.for_table(&config.table_id);
        // Journaled with the table's config: a restart with other settings is refused.
        actor_config.default_shoe = Some(parts.shoe);
        #[cfg(feature = "jetstream")]
        if let Some(events) = parts.events {
            events.add_table(actor_config.clone());
        }
        let (handle, task) = spawn(
            actor_config,
            Arc::clone(&parts.rules) as Arc<dyn Rules>,
            sink,
            Clock::system(),
        )
        .await
        .with_context(|| format!("could not start table {}", config.table_id))?;
        if args.pacing != PacingArg::Live {
            open_first_shoe(&handle, parts.shoe).await?;
        }
        hosted.push(
            HostedTable::new(handle, config, parts.shoe).with_video_metrics(&parts.metrics.video),
        );
        tasks.push(task);
    }
    Ok((hosted, tasks))
}

/// Serves until a stop is asked, then lets the tables answer and journal what is queued,
/// even if serving failed.
async fn serve_then_stop(
    listener: TcpListener,
    options: ServeOptions,
    tasks: Vec<ActorTask>,
    stop: StopSignal,
) -> anyhow::Result<()> {
    let stopping = async {
        stop.requested().await;
        stop_deadline();
    };
    let served = serve(listener, options, stopping).await;
    STOP_STAGE.store(1, Ordering::Relaxed);
    for task in tasks {
        task.shutdown().await;
    }
    STOP_STAGE.store(2, Ordering::Relaxed);
    served?;
    Ok(())
}

/// Where a clip of every round is recorded: `--clips-dir`, by default `<data-dir>/clips`.
/// A build without GStreamer records none, and says so at start so that nobody expects
/// them (`--clips-dir` was refused before).
fn open_clips(args: &BroadcasterArgs) -> anyhow::Result<Option<Arc<ClipStore>>> {
    if args.no_clips {
        return Ok(None);
    }
    if !cfg!(feature = "gstreamer") {
        tracing::warn!(
            "banco broadcaster: built without the `gstreamer` feature: no round clips are \
             recorded (give --no-clips to say so)"
        );
        return Ok(None);
    }
    let dir = args
        .clips_dir
        .clone()
        .unwrap_or_else(|| args.data_dir.join("clips"));
    Ok(Some(ClipStore::open(&dir)?))
}

/// What this build of banco cannot do, refused before anything starts.
fn refuse_left_out_features(args: &BroadcasterArgs) -> anyhow::Result<()> {
    if let Some(url) = args
        .events
        .as_ref()
        .filter(|_| !cfg!(feature = "jetstream"))
    {
        bail!(
            "--events {url}: publishing the tables' events to NATS JetStream needs the \
             `jetstream` feature, which this build of banco left out"
        );
    }
    if let Some(dir) = args
        .clips_dir
        .as_ref()
        .filter(|_| !cfg!(feature = "gstreamer"))
    {
        bail!(
            "--clips-dir {}: recording round clips needs the `gstreamer` feature, which this \
             build of banco left out",
            dir.display()
        );
    }
    Ok(())
}

/// Seed 004's seven tables: minimum and maximum per position, in major units.
const SEVEN_TIERS: [(i64, i64); 7] = [
    (2, 41),
    (5, 102),
    (10, 205),
    (20, 410),
    (50, 1020),
    (100, 1550),
    (200, 2100),
];

/// What one caller may ask (`RequestLimits`); 0 turns a rate off.
#[derive(Debug, clap::Args)]
pub(crate) struct LimitArgs {
    /// Largest PlayerService or TableService request, in bytes (encoded); larger ones are
    /// refused with OUT_OF_RANGE before they are decoded.
    #[arg(long, default_value_t = RequestLimits::default().max_request_bytes)]
    max_request_bytes: usize,
    /// Largest video unit a camera may publish to VideoIngest, in bytes.
    #[arg(long, default_value_t = RequestLimits::default().max_video_unit_bytes)]
    max_video_unit_bytes: usize,
    /// PlayerService calls per second per player, bets apart (0: no limit); beyond it a
    /// call is refused with RESOURCE_EXHAUSTED saying when to retry.
    #[arg(long, default_value_t = RequestLimits::default().player_calls.per_second)]
    player_calls_per_second: u32,
    /// How many calls a player may make at once above that rate.
    #[arg(long, default_value_t = RequestLimits::default().player_calls.burst)]
    player_calls_burst: u32,
    /// PlaceBets, ClearBets and Rebet per second per player (0: no limit).
    #[arg(long, default_value_t = RequestLimits::default().player_bets.per_second)]
    player_bets_per_second: u32,
    /// How many bet requests a player may make at once above that rate.
    #[arg(long, default_value_t = RequestLimits::default().player_bets.burst)]
    player_bets_burst: u32,
}

impl LimitArgs {
    pub(crate) fn checked(&self) -> anyhow::Result<RequestLimits> {
        // Below a kilobyte, ordinary requests (a bet with its ids, a chat line) would fail.
        const SMALLEST: usize = 1024;
        if self.max_request_bytes < SMALLEST {
            bail!(
                "--max-request-bytes {}: at least {SMALLEST}, or ordinary requests are refused",
                self.max_request_bytes
            );
        }
        if self.max_video_unit_bytes < SMALLEST {
            bail!(
                "--max-video-unit-bytes {}: at least {SMALLEST}",
                self.max_video_unit_bytes
            );
        }
        let rate = |flag: &str, per_second: u32, burst: u32| {
            if per_second > 0 && burst == 0 {
                bail!("--{flag}-burst 0: a limited rate needs a burst of at least 1");
            }
            Ok(Rate { per_second, burst })
        };
        Ok(RequestLimits {
            max_request_bytes: self.max_request_bytes,
            max_video_unit_bytes: self.max_video_unit_bytes,
            player_calls: rate(
                "player-calls",
                self.player_calls_per_second,
                self.player_calls_burst,
            )?,
            player_bets: rate(
                "player-bets",
                self.player_bets_per_second,
                self.player_bets_burst,
            )?,
        })
    }
}

/// The blocked words of `path`: one per line, blank lines and `#` comments skipped.
fn read_words(path: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--chat-blocked-words {}: could not read it", path.display()))?;
    Ok(parse_blocked_words(&text))
}

/// An automated or single-player table deals from the moment it starts: it needs a shoe,
/// and after that the actor opens every next one itself. A restart finds the shoe in its
/// journal and opens none.
async fn open_first_shoe(handle: &TableHandle, shoe: ShoeConfig) -> anyhow::Result<()> {
    if handle.snapshot().await?.table.shoe.is_some() {
        return Ok(());
    }
    let open = Command::OpenShoe {
        config: shoe,
        by: "auto".to_owned(),
        now_ms: 0,
        commitment: None,
    };
    handle
        .submit(None, open)
        .await
        .context("could not open the first shoe")?;
    Ok(())
}

/// How long a stop may take once asked: connections get [`CONNECTION_DRAIN`] to end
/// their calls, then
/// the tables answer and journal what is queued. Past it the process exits anyway, naming
/// the stage it was stuck in: every command a table answered is journaled already, so
/// nothing is lost, and a broadcaster that never stops would hold its port and journal.
const STOP_DEADLINE: Duration = Duration::from_secs(30);

/// Where a stop has got to, for [`stop_deadline`]'s message.
static STOP_STAGE: AtomicUsize = AtomicUsize::new(0);
const STOP_STAGES: [&str; 3] = [
    "connections finishing their calls",
    "tables journaling what is queued",
    "releasing the runtime",
];

fn stop_deadline() {
    tracing::info!("stopping: connections get {CONNECTION_DRAIN:?} to end their calls");
    std::thread::spawn(|| {
        std::thread::sleep(STOP_DEADLINE);
        let stage = STOP_STAGES
            .get(STOP_STAGE.load(Ordering::Relaxed))
            .copied()
            .unwrap_or("unknown");
        tracing::error!(
            stage,
            "not stopped {STOP_DEADLINE:?} after being asked: exiting now (every answered \
             command is journaled)"
        );
        std::process::exit(1);
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn table_specs() {
        assert_eq!(
            parse_table_spec("T01").unwrap(),
            TableSpec {
                id: "T01".into(),
                limits: None
            }
        );
        assert_eq!(
            parse_table_spec("T02=2.50-41").unwrap().limits,
            Some(Limits {
                min: 250,
                max: 4_100
            })
        );
        for bad in ["T01=", "T01=5", "T01=a-b", "T01=300-5", "T01=-5-10"] {
            let err = parse_table_spec(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }
}
