//! A NATS server for `banco bench fanout --against nats`: Debian's `nats-server`, on
//! loopback at a free port, killed when dropped (on error paths too).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const INSTALL: &str = "apt-get install -y nats-server";

/// A running `nats-server`; killed on drop.
#[derive(Debug)]
pub(super) struct NatsServer {
    child: Child,
    pub(super) url: String,
    pub(super) version: String,
    pub(super) pid: u32,
}

impl NatsServer {
    pub(super) async fn start() -> anyhow::Result<NatsServer> {
        let binary = find_on_path("nats-server", std::env::var_os("PATH"))
            .with_context(|| format!("nats-server is not on PATH; install it with: {INSTALL}"))?;
        let version = Command::new(&binary)
            .arg("--version")
            .output()
            .await
            .with_context(|| format!("could not run {}", binary.display()))?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        // A free port: bind, read it, let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("could not find a free port on 127.0.0.1")?
            .port();
        let mut child = Command::new(&binary)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("could not start {}", binary.display()))?;
        let pid = child.id().context("nats-server exited at once")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!("nats-server -a 127.0.0.1 -p {port} exited: {status}");
            }
            if Instant::now() > deadline {
                bail!("nats-server did not accept connections on 127.0.0.1:{port} within 10 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(NatsServer {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            version,
            pid,
        })
    }

    pub(super) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The first executable file called `name` in a `PATH`-like list of folders.
fn find_on_path(name: &str, path: Option<std::ffi::OsString>) -> Option<PathBuf> {
    std::env::split_paths(&path?)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_program_on_path_or_nothing() {
        let sh = find_on_path("sh", Some("/nonexistent:/bin:/usr/bin".into()));
        assert!(sh.is_some_and(|p| p.ends_with("sh")));
        assert_eq!(find_on_path("sh", Some("/nonexistent".into())), None);
        assert_eq!(find_on_path("sh", None), None);
    }
}
