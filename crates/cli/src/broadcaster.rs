//! `banco broadcaster`: one table actor served over TableService and PlayerService.
//!
//! Files under `<data-dir>/<table>/`: the journal (`<table>.journal`), the outbox
//! watermark (`<table>.outbox`) and, until the archive service exists, `outbox.jsonl`:
//! every finished round, sealed into the table's hash chain, one JSON line each, in order,
//! written and fsynced before the watermark moves past it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_auth::keys::load_verifying_key;
use banco_auth::{ClientTls, Verifier, require_tls_unless_loopback};
use banco_broadcaster::{HostedTable, OutboxFile, ServeOptions, serve};
use banco_rules::Paytable;
use banco_rules::shoe::ShoeConfig;
use banco_table::actor::{ActorConfig, Clock, RemoteRules, TableHandle, spawn};
use banco_table::{Command, Pacing, TableConfig};

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
    tls: crate::validator::TlsArgs,
    /// The table's id (1 to 16 letters or digits), as in round ids.
    #[arg(long, default_value = "T01")]
    table: String,
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
    /// Public key that checks callers' tokens (`signing.pub` from `banco token keygen`).
    #[arg(long, default_value = "signing.pub")]
    public_key: PathBuf,
    /// The deployment tokens must be issued for.
    #[arg(long, default_value = "banco")]
    audience: String,
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
    /// Minor units credited (once, journaled) to a player's first bet at the table, for
    /// demos and tests; 0: none (real deployments credit players through a cashier).
    #[arg(long, default_value_t = 0)]
    welcome_credit: i64,
    /// ISO 4217 code of the table's minor units.
    #[arg(long, default_value = "EUR")]
    currency: String,
}

pub(crate) fn run(args: &BroadcasterArgs) -> anyhow::Result<ExitCode> {
    if args.welcome_credit < 0 {
        bail!(
            "--welcome-credit {}: must be 0 or a positive number of minor units",
            args.welcome_credit
        );
    }
    let key = load_verifying_key(&args.public_key)?;
    let verifier = Verifier::new(&args.audience)?.with_public_key(key);
    let tls = args.tls.load()?;
    // Before binding, so nothing claims to listen on an address it will refuse.
    require_tls_unless_loopback(args.listen, tls.is_some())?;
    let validator_tls = args
        .validator_ca
        .as_deref()
        .map(ClientTls::from_ca_pem_file)
        .transpose()?;
    let token = std::fs::read_to_string(&args.service_token_file)
        .with_context(|| format!("could not read {}", args.service_token_file.display()))?;
    let shoe = ShoeConfig {
        decks: args.decks,
        ..ShoeConfig::default()
    };
    shoe.validate()
        .with_context(|| format!("--decks {}", args.decks))?;
    let mut config = TableConfig::new(
        &args.table,
        match args.pacing {
            PacingArg::Live => Pacing::Live,
            PacingArg::Automated => Pacing::AutomatedMultiplayer,
            PacingArg::Single => Pacing::SinglePlayer,
        },
    );
    config.policy.paytable = Paytable::preset(&args.paytable)
        .with_context(|| format!("--paytable {}", args.paytable))?;
    config
        .validate()
        .with_context(|| format!("--table {}", args.table))?;
    let dir = args.data_dir.join(&args.table);
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;

    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        // The bound address on stdout first, so scripts and tests can start it on port 0.
        println!("broadcaster listening on {addr}");

        let rules = RemoteRules::connect_tls(
            &args.validator,
            token.trim(),
            Duration::from_millis(args.validator_timeout_ms),
            validator_tls,
        )
        .with_context(|| format!("--validator {}", args.validator))?;
        let outbox_path = dir.join("outbox.jsonl");
        let outbox = OutboxFile::open(&outbox_path)
            .with_context(|| format!("could not open {}", outbox_path.display()))?;
        let mut actor_config = ActorConfig::in_dir(config.clone(), &dir);
        // Journaled with the table's config: a restart with other settings is refused.
        actor_config.default_shoe = Some(shoe);
        let (handle, task) = spawn(
            actor_config,
            Arc::new(rules),
            Arc::new(outbox),
            Clock::system(),
        )
        .await
        .with_context(|| format!("could not start table {}", args.table))?;

        if args.pacing != PacingArg::Live {
            open_first_shoe(&handle, shoe).await?;
        }
        let mut options = ServeOptions::new(
            Arc::new(verifier),
            vec![HostedTable::new(handle, config, shoe)],
        );
        options.welcome_credit = args.welcome_credit;
        options.currency.clone_from(&args.currency);
        options.tls = tls;
        let served = serve(listener, options, shutdown_signal()).await;
        // Answer and journal what is queued, then stop, even if serving failed.
        task.shutdown().await;
        served?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
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
    };
    handle
        .submit(None, open)
        .await
        .context("could not open the first shoe")?;
    Ok(())
}

/// Ctrl-C, or SIGTERM on Unix (what service managers send).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
