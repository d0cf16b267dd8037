//! Where a table's events and record live on NATS JetStream, and how an event is carried
//! (`proto/banco/v1/events.proto` says the same for other readers).

use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::stream;
use bytes::{BufMut as _, Bytes, BytesMut};

use crate::hub::Encoded;
use crate::subscribe::GRPC_HEADER;

/// The key-value bucket of every table's [`banco_wire::pb::TableRecord`].
pub(crate) const BUCKET: &str = "banco_tables";

/// The player a private event is for.
const TO: &str = "Banco-To";
/// The broadcaster process that published an event.
const OWNER: &str = "Banco-Owner";

/// How long the server remembers message ids to drop a republished event.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// The stream of `table`'s events.
pub(crate) fn stream_name(table: &str) -> String {
    format!("BANCO_EVENTS_{table}")
}

/// The subject of `table`'s events.
pub(crate) fn subject(table: &str) -> String {
    format!("banco.events.{table}")
}

/// The stream of `table`, keeping at most `max_events` events (the oldest go first).
pub(crate) fn stream_config(table: &str, max_events: i64) -> stream::Config {
    stream::Config {
        name: stream_name(table),
        subjects: vec![subject(table)],
        description: Some(format!("banco: every event of table {table}, in order")),
        storage: stream::StorageType::File,
        max_messages: max_events,
        discard: stream::DiscardPolicy::Old,
        duplicate_window: DUPLICATE_WINDOW,
        allow_direct: true,
        ..stream::Config::default()
    }
}

/// The headers `event` is published with, by `owner`, after stream sequence
/// `expected_last`.
pub(crate) fn headers(event: &Encoded, owner: &str, expected_last: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, event.seq.to_string());
    headers.insert(
        async_nats::header::NATS_EXPECTED_LAST_SEQUENCE,
        expected_last.to_string(),
    );
    headers.insert(OWNER, owner);
    if let Some(to) = &event.to {
        headers.insert(TO, to.as_ref());
    }
    headers
}

/// The TableEvent itself, without gRPC's frame.
pub(crate) fn payload(event: &Encoded) -> Bytes {
    event.bytes.slice(GRPC_HEADER.min(event.bytes.len())..)
}

/// A message of a table's stream that is not one of its events.
#[derive(Debug, thiserror::Error)]
#[error("a message of the table's stream is not a banco event: {0}")]
pub(crate) struct NotAnEvent(&'static str);

/// The event a stream message carries, framed for subscribers as the table's hub framed
/// it.
pub(crate) fn event(headers: Option<&HeaderMap>, payload: &[u8]) -> Result<Encoded, NotAnEvent> {
    let headers = headers.ok_or(NotAnEvent("it has no headers"))?;
    let seq = headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .and_then(|id| id.as_str().parse::<u64>().ok())
        .ok_or(NotAnEvent("its Nats-Msg-Id is not a seq"))?;
    let len = u32::try_from(payload.len()).map_err(|_| NotAnEvent("it is over 4 GiB"))?;
    let mut framed = BytesMut::with_capacity(GRPC_HEADER + payload.len());
    framed.put_u8(0);
    framed.put_u32(len);
    framed.put_slice(payload);
    Ok(Encoded {
        seq,
        to: headers.get(TO).map(|to| Arc::from(to.as_str())),
        bytes: framed.freeze(),
    })
}

/// The broadcaster process that published a message, if it says.
pub(crate) fn owner(headers: Option<&HeaderMap>) -> Option<&str> {
    headers.and_then(|h| h.get(OWNER)).map(|o| o.as_str())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use banco_wire::pb;

    #[test]
    fn an_event_goes_out_and_comes_back_as_it_was_framed() {
        let framed = banco_wire::framing::frame(&pb::TableEvent {
            seq: 42,
            table_id: "T01".into(),
            ..pb::TableEvent::default()
        });
        let private = Encoded {
            seq: 42,
            to: Some(Arc::from("alice")),
            bytes: framed.clone(),
        };
        let headers = headers(&private, "b-1", 7);
        let back = event(Some(&headers), &payload(&private)).unwrap();
        assert_eq!(back.seq, 42);
        assert_eq!(back.to.as_deref(), Some("alice"));
        assert_eq!(back.bytes, framed);
        assert_eq!(owner(Some(&headers)), Some("b-1"));
        assert_eq!(
            headers
                .get(async_nats::header::NATS_EXPECTED_LAST_SEQUENCE)
                .map(|v| v.as_str()),
            Some("7")
        );
        let public = Encoded {
            to: None,
            ..private
        };
        let back = event(Some(&super::headers(&public, "b-1", 7)), &payload(&public)).unwrap();
        assert_eq!(back.to, None);
        assert!(event(None, b"").is_err());
        let mut bad = HeaderMap::new();
        bad.insert(async_nats::header::NATS_MESSAGE_ID, "not-a-number");
        assert!(event(Some(&bad), b"").is_err());
    }
}
