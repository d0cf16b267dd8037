//! A service's life in the `banco` process, the same for every server: its TLS flags, the
//! checks made before anything is bound, its runtime with SIGINT and SIGTERM listened for
//! from the start, its bound address on stdout, and its metrics endpoint.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use banco_auth::keys::load_verifying_key;
use banco_auth::{ServerTls, Verifier};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::ops::OpsArgs;
use crate::stop_signal::StopSignal;

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

/// `--public-key` / `--audience`: how a server checks its callers' tokens.
#[derive(Debug, clap::Args)]
pub(crate) struct TokenArgs {
    /// Public key that checks callers' tokens (`signing.pub` from `banco token keygen`).
    #[arg(long, default_value = "signing.pub")]
    public_key: PathBuf,
    /// The deployment tokens must be issued for.
    #[arg(long, default_value = "banco")]
    audience: String,
}

impl TokenArgs {
    /// The verifier of callers' tokens; errors name the key file.
    pub(crate) fn verifier(&self) -> anyhow::Result<Verifier> {
        let key = load_verifying_key(&self.public_key).context("--public-key")?;
        Ok(Verifier::new(&self.audience)?.with_public_key(key))
    }
}

/// One service: what it calls itself on stdout, where it listens, its operations flags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServiceLife<'a> {
    name: &'static str,
    listen: SocketAddr,
    ops: &'a OpsArgs,
    /// The runtime's worker threads; `None`: one a core.
    workers: Option<usize>,
}

impl<'a> ServiceLife<'a> {
    /// Refuses plaintext on `listen` beyond loopback, and a metrics endpoint beyond it
    /// without `--metrics-allow-remote`: before anything is bound or opened, so nothing
    /// claims to listen on an address it will refuse.
    pub(crate) fn new(
        name: &'static str,
        listen: SocketAddr,
        tls: Option<&ServerTls>,
        ops: &'a OpsArgs,
    ) -> anyhow::Result<ServiceLife<'a>> {
        banco_auth::require_tls_unless_loopback(listen, tls.is_some())?;
        crate::metrics_http::check(ops)?;
        Ok(ServiceLife {
            name,
            listen,
            ops,
            workers: None,
        })
    }

    /// Runs on `workers` threads, not one a core.
    pub(crate) fn with_workers(self, workers: usize) -> ServiceLife<'a> {
        ServiceLife {
            workers: Some(workers),
            ..self
        }
    }

    /// Runs `serve` to its end on a new runtime, handing it the stop signal. SIGINT and
    /// SIGTERM are listened for before `serve` starts: a stop asked while a journal
    /// replays or a database opens is a clean stop too.
    pub(crate) fn run<F>(
        self,
        serve: impl FnOnce(ServiceLife<'a>, StopSignal) -> F,
    ) -> anyhow::Result<ExitCode>
    where
        F: Future<Output = anyhow::Result<()>>,
    {
        let mut runtime = tokio::runtime::Builder::new_multi_thread();
        if let Some(workers) = self.workers {
            runtime.worker_threads(workers);
        }
        let runtime = runtime
            .enable_all()
            .build()
            .context("could not start the async runtime")?;
        runtime.block_on(async {
            let stop = StopSignal::listen()?;
            serve(self, stop).await
        })?;
        Ok(ExitCode::SUCCESS)
    }

    /// Binds the service's address and prints `<name> listening on ADDR` on stdout, first:
    /// scripts and tests start a service on port 0 and read where it is.
    pub(crate) async fn bind(&self) -> anyhow::Result<TcpListener> {
        let listener = TcpListener::bind(self.listen)
            .await
            .with_context(|| format!("could not listen on {}", self.listen))?;
        let addr = listener.local_addr()?;
        println!("{} listening on {addr}", self.name);
        Ok(listener)
    }

    /// Serves `registry` at `--metrics-listen` when it is given (printing `metrics
    /// listening on ADDR`).
    pub(crate) async fn serve_metrics(&self, registry: Registry) -> anyhow::Result<()> {
        crate::metrics_http::start(self.ops, registry).await
    }
}
