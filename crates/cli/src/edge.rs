//! `banco edge`: a player-facing node that serves PlayerService from each table's event
//! stream on NATS JetStream and forwards bets to the table's broadcaster; it holds no table
//! state, so any number run side by side and a player resumes on any of them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::broadcaster::LimitArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct EdgeArgs {
    /// Address to serve on; beyond loopback, `--tls-cert` and `--tls-key` are required.
    #[arg(long, default_value = "127.0.0.1:7110")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: crate::service_life::TlsArgs,
    /// The NATS server with JetStream the broadcasters publish the tables' events to (their
    /// `--events`).
    #[arg(long, value_name = "URL", default_value = "nats://127.0.0.1:4222")]
    events: String,
    #[command(flatten)]
    tokens: crate::service_life::TokenArgs,
    /// File holding this edge's own token (role service): the tables' video is relayed
    /// from their broadcasters with it.
    #[arg(long)]
    service_token_file: PathBuf,
    /// PEM CA certificate(s) the broadcasters' TLS certificates are signed by, for tables
    /// whose broadcaster is `https://`.
    #[arg(long, value_name = "PEM")]
    upstream_ca: Option<PathBuf>,
    /// Events that may wait unread for one subscriber before it is cut off with its resume
    /// point.
    #[arg(long, value_name = "EVENTS", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    subscriber_queue: u32,
    /// Recent events of each table kept for resuming subscribers (a resume point from
    /// further back gets a fresh snapshot).
    #[arg(long, value_name = "EVENTS", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(1..))]
    ring_events: u32,
    #[command(flatten)]
    limits: LimitArgs,
    /// An origin (`https://casino.example`) whose pages may call PlayerService over
    /// gRPC-Web and frame the player page, besides the page's own; repeat for more.
    #[arg(long = "web-origin", value_name = "ORIGIN")]
    web_origins: Vec<String>,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
}

#[cfg(feature = "jetstream")]
pub(crate) fn run(args: &EdgeArgs) -> anyhow::Result<ExitCode> {
    use std::sync::Arc;

    use anyhow::Context as _;
    use banco_auth::ClientTls;
    use banco_broadcaster::{
        EdgeMetricFamilies, EdgeOptions, EventsError, FanoutLimits, Origin, ServeError, serve_edge,
    };
    use prometheus_client::registry::Registry;

    use crate::service_life::ServiceLife;

    let verifier = args.tokens.verifier()?;
    let tls = args.tls.load()?;
    let life = ServiceLife::new("edge", args.listen, tls.as_ref(), &args.ops)?;
    let service_token = std::fs::read_to_string(&args.service_token_file).with_context(|| {
        format!(
            "--service-token-file {}: could not read it",
            args.service_token_file.display()
        )
    })?;
    let upstream_tls = args
        .upstream_ca
        .as_deref()
        .map(ClientTls::from_ca_pem_file)
        .transpose()
        .context("--upstream-ca")?;
    let limits = args.limits.checked()?;
    let web_origins = args
        .web_origins
        .iter()
        .map(|origin| Origin::parse(origin).context("--web-origin"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    life.run(|life, stop| async move {
        let listener = life.bind().await?;
        let mut registry = Registry::default();
        let metrics = EdgeMetricFamilies::register(&mut registry);
        life.serve_metrics(registry).await?;
        let mut options = EdgeOptions::new(args.events.clone(), Arc::new(verifier), service_token);
        options.upstream_tls = upstream_tls;
        options.tls = tls;
        options.fanout = FanoutLimits {
            ring_events: args.ring_events as usize,
            subscriber_queue: args.subscriber_queue as usize,
        };
        options.limits = limits;
        options.web.allowed_origins = web_origins;
        options.metrics = metrics;
        serve_edge(listener, options, stop.requested())
            .await
            .map_err(|err| {
                let events = matches!(&err, ServeError::Service(e) if e.is::<EventsError>());
                let err = anyhow::Error::new(err);
                if events { err.context("--events") } else { err }
            })?;
        Ok(())
    })
}

/// The edge reads the tables' streams on NATS JetStream, which this build left out.
#[cfg(not(feature = "jetstream"))]
pub(crate) fn run(_: &EdgeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "banco edge: serving players from the tables' streams on NATS JetStream needs the \
         `jetstream` feature, which this build of banco left out"
    )
}
