//! `banco archive`: ArchiveService alone, over an SQLite file or PostgreSQL.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use banco_archive::{ArchiveMetrics, ServeOptions, Store, TrustedKeys, serve};
use banco_auth::keys::load_verifying_key;
use prometheus_client::registry::Registry;

use crate::folder_lock::{FolderLock, lock_sqlite, sqlite_file};
use crate::service_life::{ServiceLife, TlsArgs};

#[derive(Debug, clap::Args)]
pub(crate) struct ArchiveArgs {
    /// `sqlite://PATH` (created if missing) or `postgres://…`.
    #[arg(long, default_value = "sqlite://archive.db")]
    db: String,
    /// Address to serve on; beyond loopback, `--tls-cert` and `--tls-key` are required.
    #[arg(long, default_value = "127.0.0.1:7103")]
    listen: SocketAddr,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    tokens: crate::service_life::TokenArgs,
    /// A table's public key whose signed rounds are accepted (repeatable). At least one
    /// is required unless `--accept-unsigned` is given.
    #[arg(long, value_name = "FILE")]
    table_key_pub: Vec<PathBuf>,
    /// Start without any `--table-key-pub`: rounds are stored without checking who signed
    /// them, so an edited chain re-hashed by whoever holds the database would verify.
    /// For trials only; Verify then refuses to say ok unless its caller accepts that.
    #[arg(long)]
    accept_unsigned: bool,
    /// Folder that keeps each round's video clip (uploaded by the broadcaster, served to
    /// auditors by GetClip). Default: `clips` beside the SQLite file (with PostgreSQL,
    /// `./clips`).
    #[arg(long, value_name = "DIR")]
    clips: Option<PathBuf>,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
}

impl ArchiveArgs {
    fn clips_dir(&self) -> PathBuf {
        if let Some(dir) = &self.clips {
            return dir.clone();
        }
        match sqlite_file(&self.db).and_then(Path::parent) {
            Some(dir) => dir.join("clips"),
            None => PathBuf::from("clips"),
        }
    }

    /// Holds the database file (with SQLite) and the clips folder for this process: two
    /// archives on one chain would each check a new round against a head the other moves.
    fn lock(&self) -> anyhow::Result<Vec<FolderLock>> {
        let mut locks: Vec<_> = lock_sqlite(&self.db, "banco archive")?
            .into_iter()
            .collect();
        let clips = self.clips_dir();
        std::fs::create_dir_all(&clips)
            .with_context(|| format!("--clips {}: could not create it", clips.display()))?;
        locks.push(FolderLock::take(&clips, "banco archive").context("--clips")?);
        Ok(locks)
    }
}

pub(crate) fn run(args: &ArchiveArgs) -> anyhow::Result<ExitCode> {
    let verifier = args.tokens.verifier()?;
    let mut table_keys = Vec::new();
    for path in &args.table_key_pub {
        table_keys.push(
            load_verifying_key(path)
                .with_context(|| format!("--table-key-pub {}", path.display()))?,
        );
    }
    if table_keys.is_empty() && !args.accept_unsigned {
        anyhow::bail!(
            "no --table-key-pub given: the archive would store rounds without checking their \
             tables' signatures; give each table's public key, or --accept-unsigned to run \
             without them (for trials only)"
        );
    }
    let table_keys = TrustedKeys::new(table_keys);
    let tls = args.tls.load()?;
    let life = ServiceLife::new("archive", args.listen, tls.as_ref(), &args.ops)?;
    let _locks = args.lock()?;
    life.run(|life, stop| async move {
        let store = Store::open(&args.db)
            .await
            .with_context(|| format!("--db {}", args.db))?;
        let listener = life.bind().await?;
        let mut registry = Registry::default();
        let stored = store
            .round_count()
            .await
            .context("could not count the stored rounds")?;
        let metrics = ArchiveMetrics::register(&mut registry, stored);
        life.serve_metrics(registry).await?;
        if table_keys.is_empty() {
            tracing::warn!(
                "archive: --accept-unsigned: rounds are stored without checking their tables' signatures"
            );
        }
        let options = ServeOptions {
            verifier: Arc::new(verifier),
            store: store.clone(),
            table_keys,
            tls,
            clips: Some(args.clips_dir()),
            metrics: Some(metrics),
        };
        serve(listener, options, stop.requested()).await?;
        store.close().await;
        Ok(())
    })
}
