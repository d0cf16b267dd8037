//! Each table's events on NATS JetStream (`banco broadcaster --events nats://…`), for edges
//! to serve players from, and for this broadcaster's own subscribers to resume across its
//! restarts.
//!
//! - [`layout`]: the stream of each table, its subject, the headers an event carries, the
//!   bucket of table records (`proto/banco/v1/events.proto`).
//! - [`publisher`]: every event the table's hub numbers, published in order, exactly
//!   once, never making the table wait; what the stream missed is made again from the
//!   table's journal.
//! - [`records`]: each table's record (owner, lobby entry, public snapshot and the seq it
//!   covers), written about once a second while the table changes.
//! - [`tail`]: reading a stream from its latest events.
//!
//! A table's hub starts from the stream: the latest events are kept for resumes, numbers
//! go on after the stream's last one, and the events of journal records the stream lacks
//! (a broadcaster killed before they left it) are made again and published first.

#[cfg(feature = "jetstream")]
pub(crate) mod layout;
#[cfg(feature = "jetstream")]
mod log;
mod options;
#[cfg(feature = "jetstream")]
mod publisher;
#[cfg(feature = "jetstream")]
mod records;
#[cfg(feature = "jetstream")]
pub(crate) mod tail;

#[cfg(feature = "jetstream")]
pub(crate) use log::connect;
#[cfg(feature = "jetstream")]
pub use log::{EventLog, EventsError};
pub use options::EventOptions;
#[cfg(feature = "jetstream")]
pub(crate) use records::write_records;
