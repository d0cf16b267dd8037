//! [`EventOptions`], apart from the NATS client: a build without `jetstream` still has
//! their defaults (the CLI's `--events-kept`).

use std::time::Duration;

/// How each table's events are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventOptions {
    /// Events each table's stream keeps; the oldest go first (default 1,000,000).
    pub max_events: i64,
    /// Events a table's publisher keeps in memory while the server is away; older ones
    /// are made again from the journal when it is back (default 100,000).
    pub max_buffered: usize,
    /// How often a table's record is written while the table changes (default 1 s).
    pub record_every: Duration,
}

impl Default for EventOptions {
    fn default() -> EventOptions {
        EventOptions {
            max_events: 1_000_000,
            max_buffered: 100_000,
            record_every: Duration::from_secs(1),
        }
    }
}
