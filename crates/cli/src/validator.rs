//! `banco validator`: RulesService alone.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use banco_auth::Verifier;
use banco_auth::keys::load_verifying_key;
use banco_validator::{ServeOptions, serve};

#[derive(Debug, clap::Args)]
pub(crate) struct ValidatorArgs {
    /// Address to serve on; plaintext is refused beyond loopback.
    #[arg(long, default_value = "127.0.0.1:7101")]
    listen: SocketAddr,
    /// Public key that checks callers' tokens (`signing.pub` from `banco token keygen`).
    #[arg(long, default_value = "signing.pub")]
    public_key: PathBuf,
    /// The deployment tokens must be issued for.
    #[arg(long, default_value = "banco")]
    audience: String,
}

pub(crate) fn run(args: &ValidatorArgs) -> anyhow::Result<ExitCode> {
    let key = load_verifying_key(&args.public_key)?;
    let verifier = Verifier::new(&args.audience)?.with_public_key(key);
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("could not listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        // The bound address on stdout lets scripts and tests start it on port 0.
        println!("validator listening on {addr}");
        let options = ServeOptions {
            verifier: Arc::new(verifier),
        };
        serve(listener, options, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
