//! Where the simulated shoe reader writes its lines: any source the console's `--scanner`
//! reads — standard output (for `-`), a path (a FIFO the console reads, or a file), or a
//! TCP or Unix socket it connects to or, with `--listen`, accepts the console on. A line
//! that cannot be written is written again once the other end is back, so no card is
//! skipped.

use std::time::Duration;

use anyhow::Context as _;
use banco_scanner::ScannerSource as Target;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, UnixListener};

type Writer = Box<dyn AsyncWrite + Unpin + Send>;

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// An open target that reconnects (or accepts again) when its other end goes.
pub(crate) struct Sink {
    target: Target,
    listener: Option<Listener>,
    writer: Option<Writer>,
}

impl Sink {
    /// Binds the listening socket now with `listen` (and says where, on stdout); otherwise
    /// connects on the first line.
    pub(crate) async fn open(target: Target, listen: bool) -> anyhow::Result<Sink> {
        let listener = match (&target, listen) {
            (Target::Tcp(addr), true) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("--to tcp://{addr} --listen: cannot bind"))?;
                println!("shoe-sim listening on tcp://{}", listener.local_addr()?);
                Some(Listener::Tcp(listener))
            }
            (Target::Unix(path), true) => {
                // A socket file left by an earlier run that died; anything else is kept.
                if std::fs::symlink_metadata(path)
                    .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
                {
                    std::fs::remove_file(path).ok();
                }
                let listener = UnixListener::bind(path).with_context(|| {
                    format!("--to unix://{} --listen: cannot bind", path.display())
                })?;
                println!("shoe-sim listening on unix://{}", path.display());
                Some(Listener::Unix(listener))
            }
            (_, true) => anyhow::bail!("--listen needs a tcp:// or unix:// target"),
            (_, false) => None,
        };
        Ok(Sink {
            target,
            listener,
            writer: None,
        })
    }

    async fn connect(&mut self) -> std::io::Result<Writer> {
        Ok(match (&self.listener, &self.target) {
            (Some(Listener::Tcp(listener)), _) => Box::new(listener.accept().await?.0),
            (Some(Listener::Unix(listener)), _) => Box::new(listener.accept().await?.0),
            (None, Target::Stdin) => Box::new(tokio::io::stdout()),
            (None, Target::Path(path)) => Box::new(
                // A FIFO opens once its reader is there; a plain file is appended to.
                tokio::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .await?,
            ),
            (None, Target::Tcp(addr)) => Box::new(tokio::net::TcpStream::connect(addr).await?),
            (None, Target::Unix(path)) => Box::new(tokio::net::UnixStream::connect(path).await?),
        })
    }

    /// Writes one line, waiting for (and retrying with) a new other end as long as it takes.
    pub(crate) async fn line(&mut self, text: &str) {
        let bytes = format!("{text}\n");
        loop {
            if self.writer.is_none() {
                match self.connect().await {
                    Ok(writer) => self.writer = Some(writer),
                    Err(error) => {
                        eprintln!("shoe-sim: {}: {error}; retrying", self.target);
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                }
            }
            if let Some(writer) = &mut self.writer {
                let written = async {
                    writer.write_all(bytes.as_bytes()).await?;
                    writer.flush().await
                }
                .await;
                match written {
                    Ok(()) => return,
                    Err(error) => {
                        eprintln!("shoe-sim: {}: {error}; reconnecting", self.target);
                        self.writer = None;
                    }
                }
            }
        }
    }
}
