//! The Subscribe streams of one connection, written by the connection's own task.
//!
//! Why: served by hyper, every stream is a task of its own with an HTTP body, tonic's
//! encoder and hyper's pipe around it; each event then costs a task wake-up and half a
//! dozen layers per subscriber. Here an event for a connection's subscribers is one
//! wake-up of the connection, which hands each subscriber's framed events to its HTTP/2
//! stream directly and then writes them all at once. Flow control is kept: a stream whose
//! window is full takes nothing more from its thread's feed, which sees it fall behind and
//! cuts it off with its resume point.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{FuturesUnordered, StreamExt as _};
use futures::{FutureExt as _, future::BoxFuture};
use h2::SendStream;
use h2::server::SendResponse;
use tokio::time::{Instant, Sleep};
use tonic::Status;

use crate::subscribe::{SubscribeRoute, Subscription, trailers};

/// How often streams that had nothing to send are checked for a reset by the client
/// (a stream with events to send finds out when it sends).
const RESET_SWEEP: Duration = Duration::from_secs(5);

/// A Subscribe call whose stream is being opened (the table read for its snapshot).
type Opening = BoxFuture<'static, (SendResponse<Bytes>, Result<Subscription, Status>)>;

/// A connection's Subscribe streams.
pub(super) struct Pumps {
    opening: FuturesUnordered<Opening>,
    streams: Vec<Pump>,
    sweep: Pin<Box<Sleep>>,
}

impl Pumps {
    pub(super) fn new() -> Pumps {
        Pumps {
            opening: FuturesUnordered::new(),
            streams: Vec::new(),
            sweep: Box::pin(tokio::time::sleep(RESET_SWEEP)),
        }
    }

    /// Opens the Subscribe call `request` (already routed) on this connection.
    pub(super) fn open(
        &mut self,
        route: &SubscribeRoute,
        request: http::Request<tonic::body::Body>,
        respond: SendResponse<Bytes>,
    ) {
        let route = route.clone();
        self.opening.push(
            async move {
                let events = route.open(request).await;
                (respond, events)
            }
            .boxed(),
        );
    }

    /// Subscribe streams open now.
    pub(super) fn len(&self) -> usize {
        self.streams.len()
    }

    /// Starts the streams whose calls opened, and hands every stream what it may send;
    /// true if any stream sent something (for the connection to write).
    pub(super) fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        while !self.opening.is_empty()
            && let Poll::Ready(Some((mut respond, events))) = self.opening.poll_next_unpin(cx)
        {
            match events {
                Ok(events) => {
                    let Ok(send) = respond.send_response(ok_response(), false) else {
                        continue;
                    };
                    self.streams.push(Pump {
                        send,
                        events,
                        pending: None,
                        ended: None,
                    });
                }
                Err(status) => {
                    let _ = respond.send_response(status.into_http(), true);
                }
            }
        }
        let mut sent = false;
        self.streams.retain_mut(|pump| match pump.poll(cx) {
            Pumped::Sent => {
                sent = true;
                true
            }
            Pumped::Waiting => true,
            Pumped::Over => {
                sent = true;
                false
            }
        });
        // Without streams there is nothing to sweep (the timer is looked at again when
        // there are).
        if !self.streams.is_empty() && self.sweep.as_mut().poll(cx).is_ready() {
            self.streams
                .retain_mut(|pump| pump.send.poll_reset(cx).is_pending());
            self.sweep.as_mut().reset(Instant::now() + RESET_SWEEP);
            // Registers the timer again.
            let _ = self.sweep.as_mut().poll(cx);
        }
        sent
    }

    /// Ends every stream with `status` (the server is stopping); calls still opening are
    /// dropped, which resets their streams.
    pub(super) fn end_all(&mut self, status: &Status) {
        for mut pump in self.streams.drain(..) {
            let _ = pump.send.send_trailers(trailers(status));
        }
        self.opening = FuturesUnordered::new();
    }
}

fn ok_response() -> http::Response<()> {
    let mut response = http::Response::new(());
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

/// Bytes of events gathered into one DATA frame (HTTP/2's smallest maximum frame size).
const GATHER: usize = 16 << 10;

/// One Subscribe stream: its events, and those being sent when the window was full.
struct Pump {
    send: SendStream<Bytes>,
    events: Subscription,
    pending: Option<Bytes>,
    /// How the stream ended, once its events are out.
    ended: Option<Status>,
}

enum Pumped {
    /// Handed some bytes to the stream.
    Sent,
    /// Nothing to send now (no event, or no window): woken when that changes.
    Waiting,
    /// The stream ended (its trailers handed over) or is gone.
    Over,
}

impl Pump {
    fn poll(&mut self, cx: &mut Context<'_>) -> Pumped {
        let mut sent = false;
        loop {
            if let Some(bytes) = self.pending.as_mut() {
                if self.send.capacity() < bytes.len() {
                    self.send.reserve_capacity(bytes.len());
                }
                let room = self.send.capacity();
                if room == 0 {
                    match self.send.poll_capacity(cx) {
                        Poll::Ready(Some(Ok(_))) => continue,
                        Poll::Ready(Some(Err(_)) | None) => return Pumped::Over,
                        Poll::Pending => {
                            // It may not be sent anything, but it is still cut off (and the
                            // hub lets go of it) once it falls too far behind; the CutOff
                            // goes after what waits.
                            if let Some(cut) = self.events.poll_lagged(cx) {
                                let mut joined =
                                    bytes::BytesMut::with_capacity(bytes.len() + cut.len());
                                joined.extend_from_slice(bytes);
                                joined.extend_from_slice(&cut);
                                *bytes = joined.freeze();
                            }
                            return waiting(sent);
                        }
                    }
                }
                let chunk = if room >= bytes.len() {
                    self.pending.take().unwrap_or_default()
                } else {
                    bytes.split_to(room)
                };
                if self.send.send_data(chunk, false).is_err() {
                    return Pumped::Over;
                }
                sent = true;
                continue;
            }
            if let Some(status) = self.ended.take() {
                return self.end(&status);
            }
            match self.gather(cx) {
                Some(bytes) => self.pending = Some(bytes),
                None if self.ended.is_some() => {}
                None => return waiting(sent),
            }
        }
    }

    /// The events ready now, as one buffer (several events that came together, such as
    /// a result and the roads after it, leave in one DATA frame); `None` if none is.
    fn gather(&mut self, cx: &mut Context<'_>) -> Option<Bytes> {
        let mut first: Option<Bytes> = None;
        let mut more: Option<bytes::BytesMut> = None;
        loop {
            let size = more.as_ref().map_or(0, |m| m.len()) + first.as_ref().map_or(0, Bytes::len);
            if size >= GATHER {
                break;
            }
            match self.events.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(bytes))) => match (&first, &mut more) {
                    (None, _) => first = Some(bytes),
                    (Some(head), None) => {
                        let mut joined = bytes::BytesMut::with_capacity(head.len() + bytes.len());
                        joined.extend_from_slice(head);
                        joined.extend_from_slice(&bytes);
                        more = Some(joined);
                    }
                    (Some(_), Some(joined)) => joined.extend_from_slice(&bytes),
                },
                Poll::Ready(Some(Err(status))) => {
                    self.ended = Some(status);
                    break;
                }
                Poll::Ready(None) => {
                    self.ended = Some(Status::ok(""));
                    break;
                }
                Poll::Pending => break,
            }
        }
        more.map(bytes::BytesMut::freeze).or(first)
    }

    fn end(&mut self, status: &Status) -> Pumped {
        let _ = self.send.send_trailers(trailers(status));
        Pumped::Over
    }
}

fn waiting(sent: bool) -> Pumped {
    if sent { Pumped::Sent } else { Pumped::Waiting }
}
