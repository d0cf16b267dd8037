//! The flags every long-running service shares: its config file, `--print-config`, the
//! log format and the metrics endpoint.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::logging::LogFormat;

/// `--config`, `--print-config`, `--log-format`, `--metrics-listen`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OpsArgs {
    /// A TOML file of settings: each key is a flag's long name with `_` for `-`
    /// (`public_key = "keys/signing.pub"`). Flags and `BANCO_<SERVICE>_<KEY>` environment
    /// variables override it.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print the effective configuration (defaults < file < environment < flags) as TOML,
    /// and exit.
    #[arg(long)]
    pub(crate) print_config: bool,
    /// `text` (for people) or `json` (one object per line, for log collectors); also
    /// `BANCO_LOG_FORMAT`. `RUST_LOG` filters (default `info`).
    #[arg(long, value_enum, default_value = "text", env = "BANCO_LOG_FORMAT")]
    pub(crate) log_format: LogFormat,
    /// Serve Prometheus metrics at `http://ADDR/metrics` (off by default); loopback only
    /// unless `--metrics-allow-remote`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Allow `--metrics-listen` beyond loopback (the endpoint has no TLS and no auth: put
    /// it on a network only the scraper reaches).
    #[arg(long)]
    pub(crate) metrics_allow_remote: bool,
}
