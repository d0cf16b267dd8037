//! The console's command line.

use std::path::PathBuf;

use crate::scanner::ScannerSource;

/// The croupier's console for one live table.
#[derive(Debug, clap::Parser)]
#[command(name = "croupier-console", version)]
pub struct Args {
    /// The broadcaster's address.
    #[arg(long, default_value = "http://127.0.0.1:7102")]
    pub server: String,
    /// PEM CA certificate(s) the broadcaster's TLS certificate must be signed by; required
    /// (and only allowed) with an `https://` `--server`.
    #[arg(long, value_name = "PEM")]
    pub ca_cert: Option<PathBuf>,
    /// The table at which the console sits.
    #[arg(long, default_value = "T01")]
    pub table: String,
    /// File holding a croupier token (`banco token issue --role croupier`).
    #[arg(long)]
    pub token_file: PathBuf,
    /// The card scanner: a serial device or FIFO path, tcp://HOST:PORT, unix://PATH, or -
    /// (standard input). Without it, cards are typed.
    #[arg(long, value_name = "SOURCE")]
    pub scanner: Option<ScannerSource>,
    /// How long `O` opens betting for; 0: the table's configured duration.
    #[arg(long, default_value_t = 0)]
    pub betting_seconds: u32,
    /// The name shown on the console (default: the token's subject).
    #[arg(long)]
    pub croupier_name: Option<String>,
}
