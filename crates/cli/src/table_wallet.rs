//! The wallet the broadcaster's tables spend through (`--wallet`): banco's own store in the
//! data folder (`embedded`, the default), `banco wallet` over gRPC, or a casino's own
//! wallet over the seamless protocol.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions};
use banco_wallet::seamless::{Endpoint, SeamlessConfig, SeamlessSecret, SeamlessWallet};
use banco_wallet::{Cashier, Store, StoreOptions, Wallet};

/// How the tables reach their wallet.
#[derive(clap::Args, Debug, Clone)]
pub struct WalletArgs {
    /// The players' wallet: `embedded` (banco's own store, in `<data-dir>/wallet.db`), the
    /// same store in another database (`sqlite://PATH`, `postgres://…`),
    /// `grpc://HOST:PORT` or `grpcs://…` (`banco wallet`, shared by several broadcasters),
    /// or `seamless+https://casino.example/prefix/` (a casino's own wallet, see
    /// "Connecting a casino's wallet").
    #[arg(long, value_name = "WALLET", default_value = "embedded")]
    pub wallet: String,
    /// The seamless protocol's shared secret (with `--wallet seamless+…`).
    #[arg(long, value_name = "FILE")]
    pub wallet_secret_file: Option<PathBuf>,
    /// PEM CA certificate(s) the wallet's TLS certificate must be signed by (grpcs and
    /// seamless+https; without it, the public CAs for seamless).
    #[arg(long, value_name = "PEM")]
    pub wallet_ca: Option<PathBuf>,
    /// Where players' self-limits are kept when the money is a casino's own (`--wallet
    /// seamless+…`): `embedded` (`<data-dir>/wallet.db`, the default: this broadcaster's
    /// tables only), `sqlite://PATH`, `postgres://…`, or `grpc://HOST:PORT` / `grpcs://…`
    /// (`banco wallet`). Broadcasters serving one casino must all name the same store, so
    /// that a self-limit holds at every table.
    #[arg(long, value_name = "STORE", default_value = "embedded")]
    pub wallet_limits: String,
    /// PEM CA certificate(s) that signed `--wallet-limits grpcs://…`'s certificate.
    #[arg(long, value_name = "PEM")]
    pub wallet_limits_ca: Option<PathBuf>,
}

/// The wallet, and the cashier of the welcome credit when this wallet has one.
pub struct TableWallet {
    pub wallet: Arc<dyn Wallet>,
    pub cashier: Option<Arc<dyn Cashier>>,
    /// What the log says the tables spend through.
    pub described: String,
}

impl std::fmt::Debug for TableWallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWallet")
            .field("described", &self.described)
            .field("cashier", &self.cashier.is_some())
            .finish_non_exhaustive()
    }
}

impl WalletArgs {
    /// `token`: the broadcaster's own (role service), for `banco wallet`.
    pub async fn open(&self, data_dir: &Path, token: &str) -> anyhow::Result<TableWallet> {
        let url = self.wallet.as_str();
        if !url.starts_with("seamless+") {
            if self.wallet_secret_file.is_some() {
                bail!(
                    "--wallet-secret-file is for a seamless wallet (--wallet seamless+https://…)"
                );
            }
            if self.wallet_limits != "embedded" || self.wallet_limits_ca.is_some() {
                bail!(
                    "--wallet-limits is for a seamless wallet (--wallet seamless+https://…): \
                     `--wallet {url}` keeps self-limits itself"
                );
            }
        }
        if let Some(database) = database_url(url, data_dir) {
            if self.wallet_ca.is_some() {
                bail!("--wallet-ca is for a wallet reached over the network, not `{url}`");
            }
            let store = open_store(&database).await?;
            return Ok(TableWallet {
                wallet: store.clone(),
                cashier: Some(store),
                described: format!("embedded ({})", redacted(&database)),
            });
        }
        if url.starts_with("seamless+") {
            let secret_file = self
                .wallet_secret_file
                .as_deref()
                .context("--wallet seamless+…: --wallet-secret-file is required")?;
            let secret = SeamlessSecret::from_file(secret_file)
                .with_context(|| format!("--wallet-secret-file {}", secret_file.display()))?;
            let endpoint = Endpoint::parse(url, self.wallet_ca.as_deref())
                .with_context(|| format!("--wallet {url}"))?;
            // Self-limits are banco's, kept in its own store beside the casino's wallet.
            let (local, limits) = self.limits_store(data_dir, token).await?;
            let wallet = SeamlessWallet::new(endpoint, secret, local, SeamlessConfig::default());
            return Ok(TableWallet {
                wallet: Arc::new(wallet),
                // The casino's money is the casino's: banco deposits nothing there.
                cashier: None,
                described: format!("seamless ({url}), self-limits in {limits}"),
            });
        }
        if url.starts_with("grpc://") || url.starts_with("grpcs://") {
            let wallet = grpc(url, self.wallet_ca.as_deref(), token, "--wallet")?;
            return Ok(TableWallet {
                wallet: Arc::new(wallet),
                // The broadcaster's service token may not deposit: `banco cashier` does.
                cashier: None,
                described: format!("banco wallet ({url})"),
            });
        }
        bail!(
            "--wallet {url}: not a wallet; use `embedded`, `sqlite://PATH`, `postgres://…`, \
             `grpc://HOST:PORT`, `grpcs://HOST:PORT` or `seamless+https://…`"
        )
    }

    /// The store of a seamless wallet's self-limits (`--wallet-limits`), and where it is, in
    /// words.
    async fn limits_store(
        &self,
        data_dir: &Path,
        token: &str,
    ) -> anyhow::Result<(Arc<dyn Wallet>, String)> {
        let url = self.wallet_limits.as_str();
        if self.wallet_limits_ca.is_some() && !url.starts_with("grpcs://") {
            bail!("--wallet-limits-ca is for `--wallet-limits grpcs://…`, not `{url}`");
        }
        if url.starts_with("grpc://") || url.starts_with("grpcs://") {
            let ca = self.wallet_limits_ca.as_deref();
            let wallet = grpc(url, ca, token, "--wallet-limits")?;
            return Ok((Arc::new(wallet), format!("banco wallet ({url})")));
        }
        let Some(database) = database_url(url, data_dir) else {
            bail!(
                "--wallet-limits {url}: not a store of self-limits; use `embedded`, \
                 `sqlite://PATH`, `postgres://…`, `grpc://HOST:PORT` or `grpcs://HOST:PORT`"
            )
        };
        if url == "embedded" {
            tracing::warn!(
                "self-limits are kept in this broadcaster's own store ({}): they hold at its \
                 tables only; give every broadcaster of this casino the same --wallet-limits",
                redacted(&database)
            );
        }
        let store = open_store(&database).await?;
        Ok((store, redacted(&database)))
    }
}

/// The database of banco's own store that `url` names, if it names one: `embedded` (in
/// `data_dir`), `sqlite:…` or `postgres…`.
fn database_url(url: &str, data_dir: &Path) -> Option<String> {
    match url {
        "embedded" => Some(embedded_url(data_dir)),
        _ if url.starts_with("sqlite:") || url.starts_with("postgres") => Some(url.to_owned()),
        _ => None,
    }
}

pub fn embedded_url(data_dir: &Path) -> String {
    format!("sqlite://{}", data_dir.join("wallet.db").display())
}

pub async fn open_store(url: &str) -> anyhow::Result<Arc<Store>> {
    let store = Store::open(url, StoreOptions::default())
        .await
        .with_context(|| format!("could not open the embedded wallet {}", redacted(url)))?;
    Ok(Arc::new(store))
}

/// `url` without a password, for logs and errors.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// `banco wallet` at `url`, named in errors by the `flag` that gave it (its CA flag is that
/// flag's `-ca`).
fn grpc(url: &str, ca: Option<&Path>, token: &str, flag: &str) -> anyhow::Result<GrpcWallet> {
    let tls = ca
        .map(|pem| {
            banco_auth::ClientTls::from_ca_pem_file(pem)
                .with_context(|| format!("{flag}-ca {}", pem.display()))
        })
        .transpose()?;
    let token = banco_auth::BearerToken::new(token.trim()).context("--service-token-file")?;
    GrpcWallet::connect(url, tls.as_ref(), token, GrpcWalletOptions::default())
        .with_context(|| format!("{flag} {url}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::{WalletArgs, database_url, redacted};

    #[test]
    fn a_database_is_banco_s_own_store_and_nothing_else_is() {
        let dir = Path::new("/var/banco");
        assert_eq!(
            database_url("embedded", dir).as_deref(),
            Some("sqlite:///var/banco/wallet.db")
        );
        for url in ["sqlite:///srv/limits.db", "postgres://banco@db/wallet"] {
            assert_eq!(database_url(url, dir).as_deref(), Some(url));
        }
        for url in [
            "grpc://127.0.0.1:7104",
            "seamless+https://casino.example/",
            "limits",
        ] {
            assert_eq!(database_url(url, dir), None, "{url}");
        }
    }

    /// A seamless wallet with `limits` (and `limits_ca`): the error opening it, which every
    /// case here has before anything is dialled or opened.
    async fn seamless_with(limits: &str, limits_ca: Option<&str>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("wallet.secret");
        std::fs::write(&secret, "a secret shared with the casino, 32 bytes or more").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let args = WalletArgs {
            wallet: "seamless+http://127.0.0.1:9/".to_owned(),
            wallet_secret_file: Some(secret),
            wallet_ca: None,
            wallet_limits: limits.to_owned(),
            wallet_limits_ca: limits_ca.map(Into::into),
        };
        match args.open(dir.path(), "token").await {
            Ok(opened) => panic!("{limits}: opened {opened:?}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[tokio::test]
    async fn a_store_of_self_limits_that_is_none_is_refused_naming_the_flag() {
        let unknown = seamless_with("redis://127.0.0.1", None).await;
        assert!(
            unknown.contains("--wallet-limits redis://127.0.0.1: not a store of self-limits"),
            "{unknown}"
        );
        let ca = seamless_with("grpc://127.0.0.1:7104", Some("ca.pem")).await;
        assert!(
            ca.contains("--wallet-limits-ca is for `--wallet-limits grpcs://…`"),
            "{ca}"
        );
    }

    #[test]
    fn a_database_password_is_never_shown() {
        assert_eq!(
            redacted("postgres://banco:secret@127.0.0.1:5432/wallet"),
            "postgres://banco:***@127.0.0.1:5432/wallet"
        );
        assert_eq!(
            redacted("sqlite:///var/banco/wallet.db"),
            "sqlite:///var/banco/wallet.db"
        );
    }
}
