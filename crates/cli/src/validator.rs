//! `banco validator`: RulesService alone.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use banco_validator::{ServeOptions, ValidatorMetrics, serve_with_tls};
use prometheus_client::registry::Registry;

use crate::service_life::{ServiceLife, TlsArgs};

#[derive(Debug, clap::Args)]
pub(crate) struct ValidatorArgs {
    /// Address to serve on; beyond loopback, `--tls-cert` and `--tls-key` are required.
    #[arg(long, default_value = "127.0.0.1:7101")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    tokens: crate::service_life::TokenArgs,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
}

pub(crate) fn run(args: &ValidatorArgs) -> anyhow::Result<ExitCode> {
    let verifier = args.tokens.verifier()?;
    let tls = args.tls.load()?;
    let life = ServiceLife::new("validator", args.listen, tls.as_ref(), &args.ops)?;
    life.run(|life, stop| async move {
        let listener = life.bind().await?;
        let mut registry = Registry::default();
        let metrics = ValidatorMetrics::register(&mut registry);
        life.serve_metrics(registry).await?;
        let options = ServeOptions {
            verifier: Arc::new(verifier),
            metrics: Some(metrics),
        };
        serve_with_tls(listener, options, tls, stop.requested()).await?;
        Ok(())
    })
}
