//! The gRPC of the Subscribe call, which the connection serves without tonic's server:
//! its request decoded as tonic decodes a unary request, its events framed once by the
//! hub for every subscriber, and the status it ends with as trailers.

use http::HeaderMap;
use tonic::Status;
use tonic::body::Body;
use tonic::metadata::MetadataMap;
use tonic_prost::ProstDecoder;

pub(crate) use banco_wire::framing::{GRPC_HEADER, frame};

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

/// The trailers that end a stream with `status`.
pub(crate) fn trailers(status: &Status) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    if let Err(unsendable) = status.add_header(&mut trailers) {
        trailers.clear();
        // Only a message that is not a valid header value fails, and this one is.
        let _ = Status::internal(format!(
            "the stream ended with a status that could not be sent: {}",
            unsendable.message()
        ))
        .add_header(&mut trailers);
    }
    trailers
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use banco_wire::pb;
    use bytes::{BufMut as _, Bytes, BytesMut};

    #[test]
    fn trailers_carry_the_code_and_the_message() {
        let trailers = trailers(&Status::unavailable("shutting down"));
        assert_eq!(trailers["grpc-status"], "14");
        assert_eq!(trailers["grpc-message"], "shutting%20down");
        let ok = super::trailers(&Status::ok(""));
        assert_eq!(ok["grpc-status"], "0");
        assert!(ok.get("grpc-message").is_none());
    }

    #[tokio::test]
    async fn a_request_is_decoded_and_a_bad_one_named() {
        let request = pb::SubscribeRequest {
            table_id: "T01".into(),
            resume_from_seq: 9,
        };
        let http = |body: Bytes| {
            http::Request::builder()
                .uri("/banco.v1.PlayerService/Subscribe")
                .header("authorization", "Bearer x")
                .body(Body::new(http_body_util_full(body)))
                .unwrap()
        };
        let decoded = unary_request::<pb::SubscribeRequest>(http(frame(&request)), 1024)
            .await
            .unwrap();
        assert_eq!(decoded.get_ref(), &request);
        assert_eq!(decoded.metadata().get("authorization").unwrap(), "Bearer x");
        // Too long for the limit: refused before decoding.
        let refused = unary_request::<pb::SubscribeRequest>(http(frame(&request)), 4)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::OutOfRange);
        // Not protobuf.
        let mut garbage = BytesMut::new();
        garbage.put_u8(0);
        garbage.put_u32(3);
        garbage.put_slice(&[0xff, 0xff, 0xff]);
        let refused = unary_request::<pb::SubscribeRequest>(http(garbage.freeze()), 1024)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Internal);
        // Nothing at all.
        let refused = unary_request::<pb::SubscribeRequest>(http(Bytes::new()), 1024)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    }

    /// A body of `bytes` in one frame.
    fn http_body_util_full(bytes: Bytes) -> impl http_body::Body<Data = Bytes, Error = Status> {
        struct Once(Option<Bytes>);
        impl http_body::Body for Once {
            type Data = Bytes;
            type Error = Status;
            fn poll_frame(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Status>>> {
                std::task::Poll::Ready(self.0.take().map(|b| Ok(http_body::Frame::data(b))))
            }
        }
        Once(Some(bytes).filter(|b| !b.is_empty()))
    }
}
