//! The Subscribe call as served: its request decoded as tonic decodes a unary request,
//! and its response a body of messages that are gRPC frames already. The hub frames each
//! event once for every subscriber; tonic's encoder would copy it again into a buffer of
//! each stream and run its own state machine around every event (measured with 10,000
//! subscribers: tonic's encoder, its buffer splits and copies were about a tenth of the
//! broadcaster's time).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut as _, Bytes, BytesMut};
use http::HeaderMap;
use http_body::Frame;
use tonic::Status;
use tonic::body::Body;
use tonic::metadata::MetadataMap;
use tonic_prost::ProstDecoder;

use super::EventBytes;

/// `message` encoded as a gRPC frame: uncompressed, its length, then its protobuf.
pub(crate) fn frame(message: &impl prost::Message) -> Bytes {
    let len = message.encoded_len();
    let mut framed = BytesMut::with_capacity(GRPC_HEADER + len);
    framed.put_u8(0);
    // Messages here are at most a snapshot: kilobytes, far from 4 GiB.
    framed.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut framed);
    framed.freeze()
}

/// The bytes before a gRPC message: its compression flag and length.
pub(crate) const GRPC_HEADER: usize = 5;

/// The one message of a unary request (as tonic's server reads one: at most
/// `max_bytes`, uncompressed), with the request's metadata and extensions.
pub(crate) async fn unary_request<M>(
    request: http::Request<Body>,
    max_bytes: usize,
) -> Result<tonic::Request<M>, Status>
where
    M: prost::Message + Default + Send + 'static,
{
    if let Some(encoding) = request.headers().get("grpc-encoding")
        && encoding.as_bytes() != b"identity"
    {
        return Err(Status::unimplemented(format!(
            "the request is compressed with `{}`, which this server does not accept: send it \
             uncompressed",
            String::from_utf8_lossy(encoding.as_bytes())
        )));
    }
    let (parts, body) = request.into_parts();
    let mut messages = std::pin::pin!(tonic::codec::Streaming::new_request(
        ProstDecoder::<M>::default(),
        body,
        None,
        Some(max_bytes),
    ));
    let message = messages
        .message()
        .await?
        .ok_or_else(|| Status::invalid_argument("the request has no message"))?;
    Ok(tonic::Request::from_parts(
        MetadataMap::from_headers(parts.headers),
        parts.extensions,
        message,
    ))
}

/// The response of a server-streaming call: `messages` as they are, or the status alone
/// when the call failed before its stream began.
pub(crate) fn response(messages: Result<EventBytes, Status>) -> http::Response<Body> {
    match messages {
        Ok(messages) => {
            let mut response = http::Response::new(Body::new(FramedBody {
                messages,
                done: false,
            }));
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/grpc"),
            );
            response
        }
        Err(status) => status.into_http(),
    }
}

/// Sends each message of its stream as a DATA frame, then the trailers with the status.
struct FramedBody {
    messages: EventBytes,
    done: bool,
}

impl http_body::Body for FramedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let ended = match self.messages.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(message))) => return Poll::Ready(Some(Ok(Frame::data(message)))),
            Poll::Ready(Some(Err(status))) => status,
            Poll::Ready(None) => Status::ok(""),
        };
        self.done = true;
        let mut trailers = HeaderMap::new();
        if let Err(unsendable) = ended.add_header(&mut trailers) {
            trailers.clear();
            // Only a message that is not a valid header value fails, and this one is.
            let _ = Status::internal(format!(
                "the stream ended with a status that could not be sent: {}",
                unsendable.message()
            ))
            .add_header(&mut trailers);
        }
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http_body::Body as _;

    fn poll(body: &mut FramedBody) -> Option<Result<Frame<Bytes>, Status>> {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match Pin::new(body).poll_frame(&mut cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => panic!("pending"),
        }
    }

    fn text(s: &str) -> Bytes {
        frame(&s.to_owned())
    }

    #[test]
    fn frames_carry_the_length_and_the_message_as_it_is() {
        use prost::Message as _;
        let event = banco_wire::pb::TableEvent {
            seq: 7,
            table_id: "T01".into(),
            ..Default::default()
        };
        let framed = frame(&event);
        let len = u32::from_be_bytes(framed[1..GRPC_HEADER].try_into().unwrap());
        assert_eq!(framed[0], 0);
        assert_eq!(len as usize, framed.len() - GRPC_HEADER);
        assert_eq!(
            banco_wire::pb::TableEvent::decode(&framed[GRPC_HEADER..]).unwrap(),
            event
        );
        assert_eq!(
            &frame(&banco_wire::pb::TableEvent::default())[..],
            &[0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn messages_then_the_status_in_the_trailers() {
        let messages: Vec<Result<Bytes, Status>> = vec![
            Ok(text("one")),
            Ok(text("two")),
            Err(Status::resource_exhausted("too slow")),
        ];
        let mut body = FramedBody {
            messages: Box::pin(futures::stream::iter(messages)),
            done: false,
        };
        for expected in ["one", "two"] {
            let data = poll(&mut body).unwrap().unwrap().into_data().unwrap();
            assert_eq!(data, text(expected));
        }
        let trailers = poll(&mut body).unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "8");
        assert_eq!(trailers["grpc-message"], "too%20slow");
        assert!(body.is_end_stream());
        assert!(poll(&mut body).is_none());

        let mut ended = FramedBody {
            messages: Box::pin(futures::stream::empty()),
            done: false,
        };
        let trailers = poll(&mut ended).unwrap().unwrap().into_trailers().unwrap();
        assert_eq!(trailers["grpc-status"], "0");
    }
}
