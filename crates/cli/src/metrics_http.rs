//! The `/metrics` endpoint: a small HTTP/1.1 server on tokio that answers `GET /metrics`
//! with the registry in the OpenMetrics text format (which Prometheus scrapes), one
//! request per connection (`Connection: close`). It only reads the metrics.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::ops::OpsArgs;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// A request head larger than this is refused: a scraper sends a few hundred bytes.
const MAX_HEAD: usize = 8 * 1024;
/// A client that does not finish its request in this time is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Refuses a `--metrics-listen` beyond loopback without `--metrics-allow-remote`; call
/// before binding anything.
pub(crate) fn check(ops: &OpsArgs) -> anyhow::Result<()> {
    if let Some(addr) = ops.metrics_listen
        && !addr.ip().is_loopback()
        && !ops.metrics_allow_remote
    {
        bail!(
            "--metrics-listen {addr}: beyond loopback the metrics endpoint (plain HTTP, no auth) needs --metrics-allow-remote"
        );
    }
    Ok(())
}

/// Binds `--metrics-listen` if given, prints `metrics listening on ADDR` on stdout, and
/// serves `registry` from a task of the current runtime.
pub(crate) async fn start(ops: &OpsArgs, registry: Registry) -> anyhow::Result<()> {
    check(ops)?;
    let Some(addr) = ops.metrics_listen else {
        return Ok(());
    };
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("--metrics-listen {addr}: could not listen"))?;
    let bound = listener.local_addr()?;
    println!("metrics listening on {bound}");
    tracing::info!(%bound, "serving Prometheus metrics at /metrics");
    tokio::spawn(serve(listener, Arc::new(registry)));
    Ok(())
}

async fn serve(listener: TcpListener, registry: Arc<Registry>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let registry = Arc::clone(&registry);
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &registry).await {
                        tracing::debug!(%peer, error = %e, "metrics request");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn answer(mut stream: TcpStream, registry: &Registry) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => return Ok(()),
    };
    let response = match head {
        Some(head) => respond(&head, registry),
        None => plain(
            431,
            "Request Header Fields Too Large",
            "request head too large\n",
        ),
    };
    stream.write_all(&response).await?;
    stream.shutdown().await
}

/// The request line and headers, up to the blank line; `None` if larger than
/// [`MAX_HEAD`].
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0_u8; 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        if head.len() > MAX_HEAD {
            return Ok(None);
        }
    }
    Ok(Some(String::from_utf8_lossy(&head).into_owned()))
}

fn respond(head: &str, registry: &Registry) -> Vec<u8> {
    let mut parts = head.lines().next().unwrap_or("").split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    if !matches!(parts.next(), Some(v) if v.starts_with("HTTP/1.")) {
        return plain(400, "Bad Request", "expected an HTTP/1.x request line\n");
    }
    if path != "/metrics" {
        return plain(404, "Not Found", "metrics are at /metrics\n");
    }
    if method != "GET" && method != "HEAD" {
        return plain(405, "Method Not Allowed", "GET /metrics\n");
    }
    let mut body = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut body, registry) {
        return plain(500, "Internal Server Error", &format!("{e}\n"));
    }
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        response.extend_from_slice(body.as_bytes());
    }
    response
}

fn plain(code: u16, reason: &str, body: &str) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if code == 405 {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    response.push_str("\r\n");
    response.push_str(body);
    response.into_bytes()
}
