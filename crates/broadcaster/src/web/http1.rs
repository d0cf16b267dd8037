//! HTTP/1.1 connections: what a browser speaks to a plaintext address (browsers use
//! HTTP/2 only over TLS), and over TLS when it chooses `http/1.1`. Served by hyper, every
//! request through the [`WebService`](super::WebService): the page, the launch codes and
//! gRPC-Web, whose server streams go out as a chunked body.

use std::convert::Infallible;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tonic::body::Body;
use tonic::transport::server::TcpConnectInfo;
use tower_service::Service as _;

use super::WebService;

/// What an HTTP/2 client sends first, prior knowledge (no HTTP/1.1 request starts so).
const PREFACE_START: &[u8; 3] = b"PRI";

/// How long a connection may take to say which protocol it speaks.
const FIRST_BYTES: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's headers.
const HEADER_READ: Duration = Duration::from_secs(30);

/// Whether a plaintext connection opens with HTTP/2's preface (a gRPC client), rather
/// than an HTTP/1.1 request (a browser). `None` if it closes or says nothing in time.
pub(crate) async fn starts_http2(stream: &TcpStream) -> Option<bool> {
    let look = async {
        let mut first = [0u8; PREFACE_START.len()];
        loop {
            let seen = stream.peek(&mut first).await.ok()?;
            if seen == 0 {
                return None;
            }
            if seen == first.len() || first[..seen] != PREFACE_START[..seen] {
                return Some(first == *PREFACE_START);
            }
            // Only part of the first segment is in: peek returns at once until more
            // comes, so wait a moment rather than spin.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(FIRST_BYTES, look).await.ok().flatten()
}

/// Serves an HTTP/1.1 connection until the client closes it or the server stops (then
/// the request under way is finished and the connection closed).
pub(crate) async fn serve<IO>(
    io: IO,
    peer: TcpConnectInfo,
    service: WebService,
    mut stopping: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let handler =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let mut service = service.clone();
            let (mut parts, body) = request.into_parts();
            // As on HTTP/2: `Request::remote_addr` reads it.
            parts.extensions.insert(peer.clone());
            let request = http::Request::from_parts(parts, Body::new(body));
            async move {
                Ok::<_, Infallible>(
                    service
                        .call(request)
                        .await
                        .unwrap_or_else(|never| match never {}),
                )
            }
        });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ)
        .serve_connection(TokioIo::new(io), handler);
    let mut connection = std::pin::pin!(connection);
    let stopped = async move {
        // A dropped sender means the server is gone: stop as well.
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    tokio::select! {
        served = connection.as_mut() => {
            if let Err(error) = served {
                tracing::debug!(%error, "HTTP/1.1 connection failed");
            }
            return;
        }
        () = stopped => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}
