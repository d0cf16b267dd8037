//! Every call but Subscribe, as hyper serves one: the request handed to tonic's routes
//! with its body read from the HTTP/2 stream, and the response written back with the
//! stream's flow control, until the response ends or the client resets the stream.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf as _, Bytes};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http_body::{Body as _, Frame};
use tonic::body::Body;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;
use tower_service::Service as _;

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

/// Serves one call through `routes` and writes its response.
pub(super) async fn serve(
    mut routes: Routes,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    peer: TcpConnectInfo,
) {
    let request = routed(request, &peer);
    // Until the routes answer, a client that gives up resets the stream: stop waiting.
    let answered = {
        let mut call = std::pin::pin!(routes.call(request));
        poll_fn(|cx| {
            if respond.poll_reset(cx).is_ready() {
                return Poll::Ready(None);
            }
            call.as_mut().poll(cx).map(Some)
        })
        .await
    };
    let response = match answered {
        Some(Ok(response)) => response,
        Some(Err(never)) => match never {},
        None => return,
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
