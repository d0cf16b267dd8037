//! `banco validator`: RulesService alone.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use banco_auth::keys::load_verifying_key;
use banco_auth::{ServerTls, Verifier};
use banco_validator::{ServeOptions, ValidatorMetrics, serve_with_tls};
use prometheus_client::registry::Registry;

/// `--tls-cert` / `--tls-key`, shared by the servers.
#[derive(Debug, clap::Args)]
pub(crate) struct TlsArgs {
    /// PEM certificate chain (leaf first) to serve TLS with; required beyond loopback.
    /// Clients must then connect with `https://` (and trust the issuing CA).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of `--tls-cert`.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The checked identity, or `None` for plaintext; errors name the bad file.
    pub(crate) fn load(&self) -> anyhow::Result<Option<ServerTls>> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(ServerTls::from_pem_files(cert, key)?)),
            (None, None) => Ok(None),
            (Some(_), None) => anyhow::bail!("--tls-cert needs --tls-key"),
            (None, Some(_)) => anyhow::bail!("--tls-key needs --tls-cert"),
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct ValidatorArgs {
    /// Address to serve on; beyond loopback, `--tls-cert` and `--tls-key` are required.
    #[arg(long, default_value = "127.0.0.1:7101")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: TlsArgs,
    /// Public key that checks callers' tokens (`signing.pub` from `banco token keygen`).
    #[arg(long, default_value = "signing.pub")]
    public_key: PathBuf,
    /// The deployment tokens must be issued for.
    #[arg(long, default_value = "banco")]
    audience: String,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
}

pub(crate) fn run(args: &ValidatorArgs) -> anyhow::Result<ExitCode> {
    let key = load_verifying_key(&args.public_key)?;
    let verifier = Verifier::new(&args.audience)?.with_public_key(key);
    let tls = args.tls.load()?;
    // Before binding, so nothing claims to listen on an address it will refuse.
    banco_auth::require_tls_unless_loopback(args.listen, tls.is_some())?;
    crate::metrics_http::check(&args.ops)?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let stop = crate::stop_signal::StopSignal::listen()?;
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        // The bound address on stdout lets scripts and tests start it on port 0.
        println!("validator listening on {addr}");
        let mut registry = Registry::default();
        let metrics = ValidatorMetrics::register(&mut registry);
        crate::metrics_http::start(&args.ops, registry).await?;
        let options = ServeOptions {
            verifier: Arc::new(verifier),
            metrics: Some(metrics),
        };
        serve_with_tls(listener, options, tls, stop.requested()).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
