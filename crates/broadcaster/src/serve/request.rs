//! Every call but Subscribe, as hyper serves one: the request handed to tonic's routes
//! with its body read from the HTTP/2 stream, and the response written back with the
//! stream's flow control, until the response ends or the client resets the stream.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf as _, Bytes};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http_body::{Body as _, Frame};
use tonic::body::Body;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;

use super::deadline;

/// A request's body, as its stream delivers it (each DATA frame's window released once it
/// is handed on, as hyper does).
pub(super) struct RecvBody {
    recv: RecvStream,
    data_done: bool,
}

impl RecvBody {
    pub(super) fn new(recv: RecvStream) -> RecvBody {
        RecvBody {
            recv,
            data_done: false,
        }
    }
}

impl http_body::Body for RecvBody {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        if !self.data_done {
            match self.recv.poll_data(cx) {
                Poll::Ready(Some(Ok(data))) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => self.data_done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
        match self.recv.poll_trailers(cx) {
            Poll::Ready(Ok(Some(trailers))) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Poll::Ready(Ok(None)) => Poll::Ready(None),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

/// `request` as tonic's routes take it: its body, and the connection's addresses (which
/// `Request::remote_addr` reads).
pub(super) fn routed(
    request: http::Request<RecvStream>,
    peer: &TcpConnectInfo,
) -> http::Request<Body> {
    let (mut parts, recv) = request.into_parts();
    parts.extensions.insert(peer.clone());
    http::Request::from_parts(parts, Body::new(RecvBody::new(recv)))
}

/// How a call's wait for its answer ended.
enum Answer<R> {
    Response(R),
    /// The client reset the stream.
    Reset,
    /// The caller's deadline, which passed first.
    Late(Duration),
}

/// Serves one call through `routes` and writes its response.
pub(super) async fn serve(
    routes: Routes,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    peer: TcpConnectInfo,
) {
    let timeout = match deadline::of(request.headers()) {
        Ok(timeout) => timeout,
        Err(refused) => {
            let _ = respond.send_response(refused.into_http(), true);
            return;
        }
    };
    serve_with(routes, request, respond, peer, timeout).await;
}

/// Serves one request through `service` (tonic's routes, or the web side, which keeps
/// gRPC-Web's deadlines itself) and writes its response; `timeout`: the caller's deadline.
pub(super) async fn serve_with<S>(
    mut service: S,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    peer: TcpConnectInfo,
    timeout: Option<Duration>,
) where
    S: tower_service::Service<
            http::Request<Body>,
            Response = http::Response<Body>,
            Error = std::convert::Infallible,
        >,
{
    let request = routed(request, &peer);
    // Until the routes answer, a client that gives up resets the stream, and one whose
    // deadline passes is told so: stop waiting (the handler is dropped).
    let answered = {
        let mut call = std::pin::pin!(service.call(request));
        let mut expired = std::pin::pin!(async move {
            match timeout {
                Some(timeout) => {
                    tokio::time::sleep(timeout).await;
                    timeout
                }
                None => std::future::pending().await,
            }
        });
        poll_fn(|cx| {
            if respond.poll_reset(cx).is_ready() {
                return Poll::Ready(Answer::Reset);
            }
            if let Poll::Ready(response) = call.as_mut().poll(cx) {
                return Poll::Ready(Answer::Response(response));
            }
            expired.as_mut().poll(cx).map(Answer::Late)
        })
        .await
    };
    let response = match answered {
        Answer::Response(Ok(response)) => response,
        Answer::Response(Err(never)) => match never {},
        Answer::Reset => return,
        Answer::Late(timeout) => {
            let late = deadline::exceeded(timeout);
            let _ = respond.send_response(late.into_http(), true);
            return;
        }
    };
    let (parts, body) = response.into_parts();
    let end = body.is_end_stream();
    let Ok(send) = respond.send_response(http::Response::from_parts(parts, ()), end) else {
        return;
    };
    if !end {
        pipe(body, send).await;
    }
}

/// Writes `body` to `send` within the stream's window, then its trailers or its end.
async fn pipe(body: Body, mut send: SendStream<Bytes>) {
    let mut body = std::pin::pin!(body);
    loop {
        let frame = poll_fn(|cx| {
            if send.poll_reset(cx).is_ready() {
                return Poll::Ready(None);
            }
            body.as_mut().poll_frame(cx).map(Some)
        })
        .await;
        let frame = match frame {
            // The client reset the stream.
            None => return,
            Some(None) => {
                let _ = send.send_data(Bytes::new(), true);
                return;
            }
            Some(Some(Err(error))) => {
                tracing::debug!(%error, "a response body failed; the stream is reset");
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
            Some(Some(Ok(frame))) => frame,
        };
        let frame = match frame.into_data() {
            Ok(mut data) => {
                while data.has_remaining() {
                    let Some(room) = capacity(&mut send, data.remaining()).await else {
                        return;
                    };
                    let chunk = data.split_to(room.min(data.remaining()));
                    if send.send_data(chunk, false).is_err() {
                        return;
                    }
                }
                continue;
            }
            Err(frame) => frame,
        };
        if let Ok(trailers) = frame.into_trailers() {
            let _ = send.send_trailers(trailers);
            return;
        }
    }
}

/// Waits for room to send (some of) `wanted` bytes; `None` if the stream is gone.
async fn capacity(send: &mut SendStream<Bytes>, wanted: usize) -> Option<usize> {
    send.reserve_capacity(wanted);
    poll_fn(|cx| {
        loop {
            let room = send.capacity();
            if room > 0 {
                return Poll::Ready(Some(room));
            }
            match send.poll_capacity(cx) {
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::convert::Infallible;
    use std::future::Future;

    use super::*;

    /// A service that answers OK after `delay`.
    #[derive(Clone)]
    struct Slow {
        delay: Duration,
    }

    impl tonic::server::NamedService for Slow {
        const NAME: &'static str = "test.Slow";
    }

    impl tower_service::Service<http::Request<Body>> for Slow {
        type Response = http::Response<Body>;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<Body>) -> Self::Future {
            let delay = self.delay;
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(tonic::Status::ok("").into_http())
            })
        }
    }

    /// The grpc-status and -message of a call to a [`Slow`] of `delay`, sent with
    /// `timeout` as its `grpc-timeout`, through [`serve`] on an in-memory HTTP/2
    /// connection.
    async fn call(delay: Duration, timeout: Option<&str>) -> (String, String) {
        let routes = Routes::new(Slow { delay });
        let (client_io, server_io) = tokio::io::duplex(64 << 10);
        tokio::spawn(async move {
            let mut connection = h2::server::handshake(server_io).await.unwrap();
            while let Some(Ok((request, respond))) = connection.accept().await {
                let peer = TcpConnectInfo {
                    local_addr: None,
                    remote_addr: None,
                };
                tokio::spawn(serve(routes.clone(), request, respond, peer));
            }
        });
        let (mut client, connection) = h2::client::handshake(client_io).await.unwrap();
        tokio::spawn(connection);
        let mut request = http::Request::post("http://banco/test.Slow/Call")
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(timeout) = timeout {
            request = request.header("grpc-timeout", timeout);
        }
        let (response, _) = client
            .send_request(request.body(()).unwrap(), true)
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(30), response)
            .await
            .expect("an answer")
            .unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        (header("grpc-status"), header("grpc-message"))
    }

    #[tokio::test]
    async fn a_call_past_the_callers_deadline_is_answered_deadline_exceeded() {
        // The handler would answer after a minute; the caller gave it 50 ms.
        let (status, message) = call(Duration::from_secs(60), Some("50m")).await;
        assert_eq!(status, (tonic::Code::DeadlineExceeded as i32).to_string());
        assert!(message.contains("grpc-timeout"), "{message}");
        // Within its deadline, or with none, the answer is the handler's.
        let ok = (tonic::Code::Ok as i32).to_string();
        assert_eq!(call(Duration::ZERO, Some("10S")).await.0, ok);
        assert_eq!(call(Duration::from_millis(10), None).await.0, ok);
    }

    #[tokio::test]
    async fn a_malformed_deadline_is_refused_naming_it() {
        let (status, message) = call(Duration::ZERO, Some("soon")).await;
        assert_eq!(status, (tonic::Code::InvalidArgument as i32).to_string());
        assert!(message.contains("grpc-timeout"), "{message}");
    }
}
