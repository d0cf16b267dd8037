//! The codec of the WatchVideo route: video units leave as the bytes encoded once for
//! every viewer; only the request is decoded.

use std::marker::PhantomData;

use banco_wire::pb;
use bytes::{BufMut as _, Bytes};
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic_prost::ProstDecoder;

/// A viewer's encode buffer: most video units fit without growing it.
const VIDEO_BUFFER: usize = 64 * 1024;

/// Queued units are sent together up to this many bytes (tonic's default).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// Writes pre-encoded messages as they are; decodes requests of type `D`.
#[derive(Debug)]
pub(crate) struct PreEncodedCodec<D> {
    buffer: usize,
    request: PhantomData<fn() -> D>,
}

/// WatchVideo: pre-encoded `VideoAccessUnit`s.
pub(crate) fn video_codec() -> PreEncodedCodec<pb::WatchVideoRequest> {
    PreEncodedCodec {
        buffer: VIDEO_BUFFER,
        request: PhantomData,
    }
}

impl<D: prost::Message + Default + Send + 'static> Codec for PreEncodedCodec<D> {
    type Encode = Bytes;
    type Decode = D;
    type Encoder = PreEncoded;
    type Decoder = ProstDecoder<D>;

    fn encoder(&mut self) -> PreEncoded {
        PreEncoded {
            buffer: self.buffer,
        }
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::default()
    }
}

/// Copies an already encoded message into the frame.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PreEncoded {
    buffer: usize,
}

impl Encoder for PreEncoded {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }

    /// Most video units fit in the buffer without its growing.
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::new(self.buffer, YIELD_THRESHOLD)
    }
}
