//! A NATS server for `banco-bench fanout` and the end-to-end tests: Debian's
//! `nats-server` (2.9), on loopback at a free port, optionally with JetStream storing in a
//! folder of the caller's; stopped (SIGKILL) when dropped, on error paths too, and started
//! again on the same port and folder to test a server restart.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to install the server it runs.
pub const INSTALL: &str = "apt-get install -y nats-server";

/// How long a server may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    #[error("nats-server is not on PATH; install it with: {INSTALL}")]
    NotInstalled,
    #[error("could not find a free port on 127.0.0.1: {0}")]
    Port(#[source] std::io::Error),
    #[error("could not run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("nats-server on 127.0.0.1:{port} exited at once ({status})")]
    Exited { port: u16, status: String },
    #[error("nats-server did not accept connections on 127.0.0.1:{port} within {READY_WITHIN:?}")]
    NotReady { port: u16 },
}

/// How to run it.
#[derive(Clone, Debug, Default)]
pub struct NatsOptions {
    /// JetStream on, storing in this folder (`-js -sd DIR`); `None`: core NATS only.
    pub jetstream: Option<PathBuf>,
    /// The port to listen on (a restart's); `None`: a free one.
    pub port: Option<u16>,
}

/// A running `nats-server`; killed on drop.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    options: NatsOptions,
    port: u16,
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    /// What `nats-server --version` says.
    pub version: String,
}

impl NatsServer {
    /// Starts a server as `options` say and waits until it accepts connections.
    pub fn start(options: NatsOptions) -> Result<NatsServer, NatsError> {
        let binary =
            find_on_path("nats-server", std::env::var_os("PATH")).ok_or(NatsError::NotInstalled)?;
        let spawn_error = |source| NatsError::Spawn {
            program: binary.display().to_string(),
            source,
        };
        let version = Command::new(&binary)
            .arg("--version")
            .output()
            .map_err(spawn_error)?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        let port = match options.port {
            Some(port) => port,
            // A free port: bind, read it, let it go.
            None => std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(NatsError::Port)?
                .port(),
        };
        let mut command = Command::new(&binary);
        command.args(["-a", "127.0.0.1", "-p", &port.to_string()]);
        if let Some(dir) = &options.jetstream {
            command.arg("-js").arg("-sd").arg(dir);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(spawn_error)?;
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(NatsError::Exited {
                    port,
                    status: status.to_string(),
                });
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NatsError::NotReady { port });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(NatsServer {
            child,
            options: NatsOptions {
                port: Some(port),
                ..options
            },
            port,
            url: format!("nats://127.0.0.1:{port}"),
            version,
        })
    }

    /// A server with JetStream storing in `dir`.
    pub fn jetstream(dir: &Path) -> Result<NatsServer, NatsError> {
        NatsServer::start(NatsOptions {
            jetstream: Some(dir.to_owned()),
            port: None,
        })
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// SIGKILL, then reap: a crash, as a test wants one.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills it and starts it again on the same port (and JetStream folder).
    pub fn restart(&mut self) -> Result<(), NatsError> {
        self.kill();
        let again = NatsServer::start(self.options.clone())?;
        *self = again;
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_a_program_on_path_or_nothing() {
        let sh = find_on_path("sh", Some("/nonexistent:/bin:/usr/bin".into()));
        assert!(sh.is_some_and(|p| p.ends_with("sh")));
        assert_eq!(find_on_path("sh", Some("/nonexistent".into())), None);
        assert_eq!(find_on_path("sh", None), None);
    }

    #[test]
    fn a_jetstream_server_comes_back_on_its_port() {
        if find_on_path("nats-server", std::env::var_os("PATH")).is_none() {
            eprintln!("nats-server is not installed ({INSTALL}): nothing to start");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut server = NatsServer::jetstream(dir.path()).unwrap();
        let (url, pid) = (server.url.clone(), server.pid());
        assert!(server.version.contains("nats-server"), "{}", server.version);
        server.restart().unwrap();
        assert_eq!(server.url, url);
        assert_ne!(server.pid(), pid);
        assert!(TcpStream::connect(("127.0.0.1", server.port())).is_ok());
    }
}
