//! One client connection: TLS if configured, HTTP/2 with hyper's settings, every call but
//! Subscribe on a task of its own through tonic's routes, and the Subscribe streams in
//! this task ([`super::pumps`]).

use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tonic::Status;
use tonic::transport::server::TcpConnectInfo;

use super::pumps::Pumps;
use super::woken::woken_here;
use super::{Shared, request};
use crate::subscribe::SubscribeRoute;

/// hyper's server settings, which tonic's server used: 1 MiB windows, 16 KiB frames, at
/// most 400 KiB buffered per stream, 16 KiB of headers.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 20;
const MAX_FRAME: u32 = 16 << 10;
const MAX_SEND_BUFFER: usize = 400 << 10;
const MAX_HEADER_LIST: u32 = 16 << 10;
/// Streams open at once on one connection: a player's app needs a handful, a relay of
/// many subscribers (and the fan-out bench) up to a couple of hundred.
const MAX_STREAMS: u32 = 1_000;

/// A TLS handshake that takes longer than this is given up.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// Serves `stream` until the client closes it, or `stopping` turns true and its calls
/// have ended (Subscribe streams are ended then, with UNAVAILABLE).
pub(super) async fn serve(stream: TcpStream, shared: Shared, stopping: watch::Receiver<bool>) {
    let peer = TcpConnectInfo {
        local_addr: stream.local_addr().ok(),
        remote_addr: stream.peer_addr().ok(),
    };
    match &shared.tls {
        None => match crate::web::starts_http2(&stream).await {
            Some(true) => serve_http2(stream, peer, shared, stopping).await,
            // web: a browser's HTTP/1.1.
            Some(false) => {
                let web = shared.web.service(false, stopping.clone());
                crate::web::serve_http1(stream, peer, web, stopping).await;
            }
            None => {}
        },
        Some(acceptor) => {
            let accepted = tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(stream)).await;
            match accepted {
                // web: a browser that chose HTTP/1.1.
                Ok(Ok(tls)) if tls.get_ref().1.alpn_protocol() == Some(b"http/1.1") => {
                    let web = shared.web.service(true, stopping.clone());
                    crate::web::serve_http1(tls, peer, web, stopping).await;
                }
                Ok(Ok(tls)) => serve_http2(tls, peer, shared, stopping).await,
                Ok(Err(error)) => {
                    tracing::debug!(peer = ?peer.remote_addr, %error, "TLS handshake failed");
                }
                Err(_) => {
                    tracing::debug!(peer = ?peer.remote_addr, "TLS handshake timed out");
                }
            }
        }
    }
}

async fn serve_http2<IO>(
    io: IO,
    peer: TcpConnectInfo,
    shared: Shared,
    mut stopping: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let handshake = h2::server::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_concurrent_streams(MAX_STREAMS)
        .handshake::<_, Bytes>(io);
    let mut connection = match handshake.await {
        Ok(connection) => connection,
        Err(error) => {
            tracing::debug!(peer = ?peer.remote_addr, %error, "HTTP/2 handshake failed");
            return;
        }
    };
    let mut pumps = Pumps::new();
    let web_stopping = stopping.clone();
    let mut stopped = std::pin::pin!(async move {
        // A dropped sender means the server is gone: stop as well.
        let _ = stopping.wait_for(|stop| *stop).await;
    });
    let mut shutting_down = false;
    poll_fn(|cx| {
        if !shutting_down && stopped.as_mut().poll(cx).is_ready() {
            shutting_down = true;
            connection.graceful_shutdown();
            pumps.end_all(&Status::unavailable(
                "this server is shutting down: subscribe again with the last seq you saw \
                 as resume_from_seq",
            ));
        }
        loop {
            // Subscribe streams first, so that what they hand over is written by the
            // connection's poll below, in one go.
            pumps.poll(cx);
            match connection.poll_accept(cx) {
                Poll::Ready(Some(Ok((request, mut respond)))) => {
                    if crate::web::takes(&request) {
                        // web: the page, launch codes and gRPC-Web.
                        let web = shared.web.service(shared.tls.is_some(), web_stopping.clone());
                        tokio::spawn(woken_here(request::serve_with(
                            web,
                            request,
                            respond,
                            peer.clone(),
                            None,
                        )));
                    } else if SubscribeRoute::takes(&request) {
                        if shutting_down {
                            let _ = respond.send_response(
                                Status::unavailable("this server is shutting down").into_http(),
                                true,
                            );
                        } else {
                            pumps.open(&shared.subscribe, request::routed(request, &peer), respond);
                        }
                    } else {
                        tokio::spawn(woken_here(request::serve(
                            shared.routes.clone(),
                            request,
                            respond,
                            peer.clone(),
                        )));
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    if !error.is_go_away() && !error.is_io() {
                        tracing::debug!(peer = ?peer.remote_addr, %error, "HTTP/2 connection failed");
                    }
                    return Poll::Ready(());
                }
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await;
    tracing::trace!(peer = ?peer.remote_addr, streams = pumps.len(), "connection closed");
}
