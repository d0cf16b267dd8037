//! [`EventLog`]: the client of the NATS server the tables' streams are on, and how a
//! table's hub starts from its stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream;
use banco_table::actor::ActorConfig;
use futures::StreamExt as _;
use tokio::sync::mpsc;

use crate::hub::{Encoded, StreamStart, Streamed, record_of};
use crate::metrics::EventMetricFamilies;

use super::{EventOptions, layout, publisher, tail};

/// Why the NATS server the events go to cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("NATS server `{url}`: {why}")]
    Connect { url: String, why: String },
}

/// The tables' streams on one NATS server (or cluster).
#[derive(Debug)]
pub struct EventLog {
    js: jetstream::Context,
    /// This process, in each message's `Banco-Owner`.
    owner: Arc<str>,
    options: EventOptions,
    /// Each table's journal, to make again what its stream missed.
    journals: Mutex<HashMap<String, ActorConfig>>,
    metrics: EventMetricFamilies,
}

impl EventLog {
    /// A client of the NATS server at `url`. Returns at once: the connection is made (and
    /// made again) in the background, and nothing waits for it.
    pub async fn connect(
        url: &str,
        options: EventOptions,
        metrics: EventMetricFamilies,
    ) -> Result<EventLog, EventsError> {
        let client = connect(url, "banco broadcaster").await?;
        Ok(EventLog {
            js: jetstream::new(client),
            owner: Arc::from(owner_id()),
            options,
            journals: Mutex::new(HashMap::new()),
            metrics,
        })
    }

    /// Publishes the events of the table whose actor runs with `journal`.
    pub fn add_table(&self, journal: ActorConfig) {
        self.journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(journal.table.table_id.clone(), journal);
    }

    pub(crate) fn context(&self) -> &jetstream::Context {
        &self.js
    }

    pub(crate) fn options(&self) -> &EventOptions {
        &self.options
    }

    /// How the hub of `table_id` starts from its stream, if its events are published.
    pub(crate) fn start(&self, table_id: &str, currency: &str, keep: usize) -> Option<StreamStart> {
        let journal = self
            .journals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(table_id)
            .cloned()?;
        let js = self.js.clone();
        let owner = Arc::clone(&self.owner);
        let options = self.options.clone();
        let metrics = self.metrics.for_table(table_id);
        let table_id = table_id.to_owned();
        let currency = currency.to_owned();
        Some(Box::new(move |through: u64| {
            Box::pin(async move {
                let (publish, events) = mpsc::unbounded_channel();
                let read = tokio::time::timeout(
                    tail::START_READ,
                    read_latest(&js, &table_id, keep, options.max_events),
                )
                .await;
                let (kept, last, known) = match read {
                    Ok(Ok((kept, last))) => (kept, last, true),
                    Ok(Err(e)) => {
                        tracing::warn!(table = %table_id, error = %e, "events: the table starts without its stream's latest events");
                        (Vec::new(), 0, false)
                    }
                    Err(_) => {
                        tracing::warn!(table = %table_id, "events: the stream did not answer within {:?}; the table starts without its latest events", tail::START_READ);
                        (Vec::new(), 0, false)
                    }
                };
                if record_of(last) > record_of(through) {
                    tracing::error!(
                        table = %table_id,
                        stream = last,
                        journal = record_of(through),
                        "events: the table's stream has events of journal records this journal does not have (another broadcaster's, or another journal's); this table's events are not published"
                    );
                    metrics.fenced.set(1);
                    return Streamed {
                        tail: Vec::new(),
                        last: 0,
                        publish,
                    };
                }
                // What a broadcaster killed before it published them left out.
                let (first, complete_after) = if known && last < through {
                    match publisher::remake(&journal, &table_id, &currency, last, through).await {
                        Ok(made) => {
                            if !made.is_empty() {
                                tracing::info!(table = %table_id, after = last, events = made.len(), "events: made again from the journal, to publish first");
                            }
                            metrics.remade.inc_by(made.len() as u64);
                            (made, last)
                        }
                        Err(e) => {
                            tracing::warn!(table = %table_id, error = %e, "events: will try again to make the missing events");
                            (Vec::new(), through)
                        }
                    }
                } else {
                    (Vec::new(), through.max(last))
                };
                let mut tail = kept;
                tail.extend(first.iter().cloned());
                tokio::spawn(publisher::run(publisher::Start {
                    js,
                    table_id,
                    currency,
                    owner,
                    journal,
                    max_events: options.max_events,
                    max_buffered: options.max_buffered,
                    events,
                    first,
                    complete_after,
                    metrics,
                }));
                Streamed {
                    tail,
                    last,
                    publish,
                }
            })
        }))
    }
}

/// The stream's latest `keep` events and its last seq (0: none).
async fn read_latest(
    js: &jetstream::Context,
    table_id: &str,
    keep: usize,
    max_events: i64,
) -> Result<(Vec<Arc<Encoded>>, u64), String> {
    let mut tail = tail::open(js, table_id, keep, None, Some(max_events))
        .await
        .map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    if tail.last == 0 {
        return Ok((events, 0));
    }
    while let Some(message) = tail.messages.next().await {
        let message = message.map_err(|e| e.to_string())?;
        let info = message.info().map_err(|e| e.to_string())?;
        let stream_seq = info.stream_sequence;
        let pending = info.pending;
        let event =
            layout::event(message.headers.as_ref(), &message.payload).map_err(|e| e.to_string())?;
        events.push(Arc::new(event));
        if pending == 0 || stream_seq >= tail.last {
            break;
        }
    }
    let last = events.last().map_or(0, |e| e.seq);
    Ok((events, last))
}

/// A NATS client of `url` that connects (and reconnects) in the background.
pub(crate) async fn connect(url: &str, name: &str) -> Result<async_nats::Client, EventsError> {
    async_nats::ConnectOptions::new()
        .name(name)
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(2))
        .connect(url)
        .await
        .map_err(|e| EventsError::Connect {
            url: url.to_owned(),
            why: e.to_string(),
        })
}

/// This process among every broadcaster that ever published: the host's pid and random
/// bits (a restart is a new owner, which takes the table's stream over).
fn owner_id() -> String {
    let mut random = [0u8; 6];
    // Without randomness the pid alone still tells processes on one host apart.
    let _ = getrandom::fill(&mut random);
    let hex = banco_records::hex::to_hex(&random);
    format!("{}-{hex}", std::process::id())
}
