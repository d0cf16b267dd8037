//! Reading a table's stream from its latest events on: what a restarted broadcaster keeps
//! for its subscribers' resumes, and what an edge serves its subscribers from.

use std::time::Duration;

use async_nats::jetstream::consumer::push::{Ordered, OrderedConfig};
use async_nats::jetstream::consumer::{DeliverPolicy, ReplayPolicy};
use async_nats::jetstream::{self, stream};

use super::layout;

/// A reader of a table's stream.
pub(crate) struct Tail {
    /// The stream's messages from the first one read, in order.
    pub(crate) messages: Ordered,
    /// The stream's last sequence when it was opened (0: the stream was empty).
    pub(crate) last: u64,
    /// The first message read is the table's first ever: nothing came before it.
    pub(crate) whole: bool,
}

/// Why a table's stream could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the stream of table {table} cannot be read: {why}")]
pub(crate) struct TailError {
    table: String,
    why: String,
}

/// A reader of `table`'s stream from its `keep` latest messages on (from `after + 1` when
/// given: a reader starting again after the last message it had). `create`: make the
/// stream if it does not exist (its publisher); otherwise it must.
pub(crate) async fn open(
    js: &jetstream::Context,
    table: &str,
    keep: usize,
    after: Option<u64>,
    create: Option<i64>,
) -> Result<Tail, TailError> {
    let fail = |why: &dyn std::fmt::Display| TailError {
        table: table.to_owned(),
        why: why.to_string(),
    };
    let stream: stream::Stream = match create {
        Some(max_events) => js
            .get_or_create_stream(layout::stream_config(table, max_events))
            .await
            .map_err(|e| fail(&e))?,
        None => js
            .get_stream(layout::stream_name(table))
            .await
            .map_err(|e| fail(&e))?,
    };
    let info = stream.get_info().await.map_err(|e| fail(&e))?;
    let state = info.state;
    let keep = u64::try_from(keep.max(1)).unwrap_or(u64::MAX);
    let from = match after {
        Some(after) => (after + 1).max(state.first_sequence),
        None => state
            .last_sequence
            .saturating_sub(keep - 1)
            .max(state.first_sequence)
            .max(1),
    };
    let consumer = stream
        .create_consumer(OrderedConfig {
            deliver_subject: js.client().new_inbox(),
            filter_subject: layout::subject(table),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: from,
            },
            replay_policy: ReplayPolicy::Instant,
            ..OrderedConfig::default()
        })
        .await
        .map_err(|e| fail(&e))?;
    let messages = consumer.messages().await.map_err(|e| fail(&e))?;
    Ok(Tail {
        messages,
        last: if state.messages == 0 {
            0
        } else {
            state.last_sequence
        },
        whole: from <= 1,
    })
}

/// How long a broadcaster starting a table waits for the stream's latest events before
/// starting without them (the table never waits longer for the server).
pub(crate) const START_READ: Duration = Duration::from_secs(3);
