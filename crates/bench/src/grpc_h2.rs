//! gRPC calls spoken over HTTP/2 directly (the `h2` crate, as under tonic), for the
//! benches' own clients: the fan-out bench's subscribers and the bets bench's players.
//!
//! Why not tonic's client: the benches run their clients in one process, on the same two
//! cores as the broadcaster, and time what the broadcaster does. With tonic each of ten
//! thousand subscribers is a task with an HTTP body and a decoder that copies every
//! message into a buffer of its own, which cost the subscribers' process more CPU than
//! the broadcaster spent sending (2.5 s against 1.0 s for 640,000 cards); and each bet
//! went through a tower buffer's task and hyper's dispatch to reach the connection. This
//! speaks the same bytes as any gRPC client: the request framed as a gRPC message, the
//! response's messages taken from its DATA frames, each decoded with prost, the window
//! given back as they are read, and the status read from the trailers.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use anyhow::{Context as _, anyhow, bail, ensure};
use banco_auth::BearerToken;
use banco_wire::framing::{self, frame};
use banco_wire::pb;
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt as _};
use h2::RecvStream;
use h2::client::SendRequest;
use tonic::service::Interceptor as _;

/// The Subscribe method's path.
const SUBSCRIBE: &str = "/banco.v1.PlayerService/Subscribe";

/// One HTTP/2 connection to the broadcaster, driven by a task of its own.
#[derive(Clone)]
pub(super) struct Connection {
    send: SendRequest<Bytes>,
    /// `http://host:port`, the start of every request's URI.
    base: String,
}

impl Connection {
    /// Connects to `server` (`http://host:port`) with `window` bytes of connection window.
    pub(super) async fn open(server: &str, window: u32) -> anyhow::Result<Connection> {
        let uri: http::Uri = server
            .parse()
            .with_context(|| format!("--server {server}: not a URL"))?;
        ensure!(
            uri.scheme_str() == Some("http"),
            "--server {server}: the bench speaks plaintext HTTP/2 (http://host:port)"
        );
        let authority = uri
            .authority()
            .with_context(|| format!("--server {server}: no host and port"))?
            .clone();
        let tcp = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .with_context(|| format!("could not connect to {server}"))?;
        tcp.set_nodelay(true)?;
        let (send, connection) = h2::client::Builder::new()
            .initial_connection_window_size(window)
            .handshake::<_, Bytes>(tcp)
            .await
            .with_context(|| format!("HTTP/2 handshake with {server}"))?;
        tokio::spawn(async move {
            // Its end shows in every stream of the connection, which the report names.
            let _ = connection.await;
        });
        Ok(Connection {
            send,
            base: format!("http://{authority}"),
        })
    }

    /// Calls Subscribe as `token`, and returns its messages once the response's headers
    /// came.
    pub(super) async fn subscribe(
        &self,
        token: &BearerToken,
        request: &pb::SubscribeRequest,
    ) -> anyhow::Result<Events> {
        self.call(SUBSCRIBE, token, request).await
    }

    /// Calls the unary method at `path` as `token`: its one answer.
    pub(super) async fn unary<M: prost::Message + Default>(
        &self,
        path: &str,
        token: &BearerToken,
        request: &impl prost::Message,
    ) -> anyhow::Result<M> {
        let mut answer = self.call(path, token, request).await?;
        let mut next = async || {
            answer
                .next()
                .await
                .transpose()
                .map_err(|e| anyhow!("{path}: {e}"))
        };
        let Some(message) = next().await? else {
            bail!("{path} answered no message");
        };
        // Read to the end: the call's status comes after its message.
        ensure!(
            next().await?.is_none(),
            "{path} answered more than one message"
        );
        M::decode(message).with_context(|| format!("{path}: the answer is not its message"))
    }

    /// Sends `request` to `path` as `token`; the response's messages once its headers came.
    async fn call(
        &self,
        path: &str,
        token: &BearerToken,
        request: &impl prost::Message,
    ) -> anyhow::Result<Events> {
        let mut call = tonic::Request::new(());
        let mut token = token.clone();
        call = token.call(call).map_err(|s| anyhow::anyhow!("{s}"))?;
        let mut http_request = http::Request::post(format!("{}{path}", self.base))
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .body(())?;
        http_request
            .headers_mut()
            .extend(call.into_parts().0.into_headers());
        let mut send = self.send.clone().ready().await?;
        let (response, mut body) = send.send_request(http_request, false)?;
        body.send_data(frame(request), true)?;
        let response = response.await?;
        let (parts, recv) = response.into_parts();
        ensure!(
            parts.status == http::StatusCode::OK,
            "{path} answered HTTP {}",
            parts.status
        );
        // A call refused at once answers with its status in the headers (Trailers-Only).
        if let Some(status) = tonic::Status::from_header_map(&parts.headers)
            && status.code() != tonic::Code::Ok
        {
            bail!("{path} refused: {status}");
        }
        Ok(Events {
            recv,
            buffered: Bytes::new(),
            ended: false,
        })
    }
}

/// The messages of one response (of Subscribe, each an encoded `TableEvent`).
pub(super) struct Events {
    recv: RecvStream,
    /// Bytes received and not yet taken: a message's part, or several messages.
    buffered: Bytes,
    ended: bool,
}

impl Events {
    /// How the response ended: its trailers' status (asked again until they come).
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, String>>> {
        let end = if self.buffered.is_empty() {
            match ready!(self.recv.poll_trailers(cx)) {
                Ok(trailers) => match tonic::Status::from_header_map(&trailers.unwrap_or_default())
                {
                    Some(status) if status.code() == tonic::Code::Ok => None,
                    Some(status) => Some(Err(status.to_string())),
                    None => Some(Err("the stream ended without a grpc-status".to_owned())),
                },
                Err(e) => Some(Err(e.to_string())),
            }
        } else {
            Some(Err(format!(
                "the stream ended inside a message ({} bytes of it came)",
                self.buffered.len()
            )))
        };
        self.ended = true;
        Poll::Ready(end)
    }
}

impl Stream for Events {
    type Item = Result<Bytes, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            match framing::take_message(&mut this.buffered) {
                Ok(Some(message)) => return Poll::Ready(Some(Ok(message))),
                Ok(None) => {}
                Err(e) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(e.to_string())));
                }
            }
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(chunk)) => {
                    let _ = this.recv.flow_control().release_capacity(chunk.len());
                    this.buffered = if this.buffered.is_empty() {
                        chunk
                    } else {
                        // A message cut across DATA frames: rare, events are small.
                        let mut joined = BytesMut::with_capacity(this.buffered.len() + chunk.len());
                        joined.extend_from_slice(&this.buffered);
                        joined.extend_from_slice(&chunk);
                        joined.freeze()
                    };
                }
                Some(Err(e)) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(e.to_string())));
                }
                None => return this.poll_end(cx),
            }
        }
    }
}
