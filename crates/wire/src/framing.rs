//! gRPC's framing of messages on an HTTP/2 stream, for the code that speaks gRPC over
//! HTTP/2 itself: the broadcaster's Subscribe streams and the fan-out bench's subscribers.
//! A frame is a compression flag (0 here: nothing is compressed), the message's length
//! as four big-endian bytes, then the message.

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};

/// The bytes before a gRPC message: its compression flag and length.
pub const GRPC_HEADER: usize = 5;

/// `message` as a gRPC frame, uncompressed.
pub fn frame(message: &impl prost::Message) -> Bytes {
    let len = message.encoded_len();
    let mut framed = BytesMut::with_capacity(GRPC_HEADER + len);
    framed.put_u8(0);
    // Messages here are at most a snapshot: kilobytes, far from 4 GiB.
    framed.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut framed);
    framed.freeze()
}

/// A frame that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a message came compressed (flag {0}), which was not asked for")]
    Compressed(u8),
}

/// Takes the first whole message off `buffer` (bytes received, in order); `None` while
/// it holds only part of one.
pub fn take_message(buffer: &mut Bytes) -> Result<Option<Bytes>, FrameError> {
    let Some(header) = buffer.get(..GRPC_HEADER) else {
        return Ok(None);
    };
    if header[0] != 0 {
        return Err(FrameError::Compressed(header[0]));
    }
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if buffer.len() < GRPC_HEADER + len {
        return Ok(None);
    }
    buffer.advance(GRPC_HEADER);
    Ok(Some(buffer.split_to(len)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::pb;
    use prost::Message as _;

    #[test]
    fn frames_carry_the_length_and_the_message_as_it_is() {
        let event = pb::TableEvent {
            seq: 7,
            table_id: "T01".into(),
            ..Default::default()
        };
        let framed = frame(&event);
        let len = u32::from_be_bytes(framed[1..GRPC_HEADER].try_into().unwrap());
        assert_eq!(framed[0], 0);
        assert_eq!(len as usize, framed.len() - GRPC_HEADER);
        assert_eq!(
            pb::TableEvent::decode(&framed[GRPC_HEADER..]).unwrap(),
            event
        );
        assert_eq!(&frame(&pb::TableEvent::default())[..], &[0, 0, 0, 0, 0]);
    }

    #[test]
    fn messages_are_taken_whole_across_and_within_chunks() {
        let one = frame(&pb::TableEvent {
            seq: 1,
            ..Default::default()
        });
        let two = frame(&pb::TableEvent {
            seq: 2,
            table_id: "T01".into(),
            ..Default::default()
        });
        let mut both = BytesMut::new();
        both.extend_from_slice(&one);
        both.extend_from_slice(&two);
        let both = both.freeze();
        // Every cut of the two frames: what is taken is always the messages, whole, in
        // order.
        for cut in 0..=both.len() {
            let mut buffer = both.slice(..cut);
            let mut taken = Vec::new();
            while let Some(message) = take_message(&mut buffer).unwrap() {
                taken.push(pb::TableEvent::decode(message).unwrap().seq);
            }
            let rest = both.slice(cut..);
            let mut joined = BytesMut::from(&buffer[..]);
            joined.extend_from_slice(&rest);
            let mut buffer = joined.freeze();
            while let Some(message) = take_message(&mut buffer).unwrap() {
                taken.push(pb::TableEvent::decode(message).unwrap().seq);
            }
            assert_eq!(taken, [1, 2], "cut at {cut}");
            assert!(buffer.is_empty());
        }
    }

    #[test]
    fn a_compressed_message_is_refused_by_its_flag() {
        let mut buffer = Bytes::from_static(&[1, 0, 0, 0, 0]);
        assert_eq!(take_message(&mut buffer), Err(FrameError::Compressed(1)));
    }
}
