//! NATS JetStream for the tests of `--events` and the edges: a server of the test's own
//! (JetStream storing in a temporary folder, killed after), and a table's stream read back
//! message by message to compare with what subscribers were sent.

use std::path::Path;

use async_nats::jetstream;
use banco_natsd::NatsServer;
use banco_wire::pb;
use prost::Message as _;

/// `nats-server -js` on a free loopback port, storing in `dir`.
pub fn start_nats(dir: &Path) -> NatsServer {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    NatsServer::jetstream(dir).unwrap_or_else(|e| panic!("{e}"))
}

/// One message of a table's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Streamed {
    /// Its stream sequence.
    pub stream_seq: u64,
    /// `Nats-Msg-Id`: the event's seq.
    pub msg_id: String,
    /// `Banco-To`: the player of a private event.
    pub to: Option<String>,
    /// `Banco-Owner`: the broadcaster process that published it.
    pub owner: String,
    pub event: pb::TableEvent,
}

/// Every message of `table`'s stream on the server at `url`, in order (none if the stream
/// does not exist yet).
pub async fn stream_of(url: &str, table: &str) -> Vec<Streamed> {
    let client = async_nats::connect(url)
        .await
        .unwrap_or_else(|e| panic!("NATS at {url}: {e}"));
    let js = jetstream::new(client);
    let Ok(stream) = js.get_stream(format!("BANCO_EVENTS_{table}")).await else {
        return Vec::new();
    };
    let info = stream
        .get_info()
        .await
        .unwrap_or_else(|e| panic!("stream info: {e}"));
    let mut messages = Vec::new();
    for seq in info.state.first_sequence..=info.state.last_sequence {
        let Ok(message) = stream.get_raw_message(seq).await else {
            continue;
        };
        let header = |name: &str| message.headers.get(name).map(|v| v.as_str().to_owned());
        messages.push(Streamed {
            stream_seq: message.sequence,
            msg_id: header("Nats-Msg-Id").unwrap_or_default(),
            to: header("Banco-To"),
            owner: header("Banco-Owner").unwrap_or_default(),
            event: pb::TableEvent::decode(message.payload.as_ref())
                .unwrap_or_else(|e| panic!("stream message {seq}: {e}")),
        });
    }
    messages
}

/// The events of `stream` that `player` is sent: the public ones and their own.
pub fn visible_to<'a>(stream: &'a [Streamed], player: &str) -> Vec<&'a pb::TableEvent> {
    stream
        .iter()
        .filter(|m| m.to.as_deref().is_none_or(|to| to == player))
        .map(|m| &m.event)
        .collect()
}

/// `event` without its send time, which differs between two sendings of one event.
pub fn timeless(event: &pb::TableEvent) -> pb::TableEvent {
    pb::TableEvent {
        server_time: None,
        ..event.clone()
    }
}
