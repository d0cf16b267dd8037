//! The codec of the Subscribe route: events leave as the bytes the hub encoded once for
//! every subscriber; only the request is decoded.

use banco_wire::pb;
use bytes::{BufMut as _, Bytes};
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic_prost::ProstDecoder;

/// Bytes a subscriber's encode buffer starts with (it grows for a large snapshot).
const EVENT_BUFFER: usize = 512;

/// Queued events are sent together up to this many bytes (tonic's default).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// Writes pre-encoded `TableEvent`s as they are; decodes `SubscribeRequest`s.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EncodedEventsCodec;

impl Codec for EncodedEventsCodec {
    type Encode = Bytes;
    type Decode = pb::SubscribeRequest;
    type Encoder = PreEncoded;
    type Decoder = ProstDecoder<pb::SubscribeRequest>;

    fn encoder(&mut self) -> PreEncoded {
        PreEncoded
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::default()
    }
}

/// Copies an already encoded message into the frame.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PreEncoded;

impl Encoder for PreEncoded {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }

    /// Events are tens of bytes: tonic's default 8 KiB buffer per stream was most of a
    /// subscriber's memory (measured 9.5 KB each at 10,000 subscribers).
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(EVENT_BUFFER, YIELD_THRESHOLD)
    }
}
