//! Conversions between the table's types and the wire ([`banco_wire::pb`]), beside those
//! of `banco_wire::convert` for the rules' types (which cannot know the table's).
//!
//! - Outward (table → wire): infallible `From` impls, e.g. `pb::TablePhase::from(phase)`,
//!   `pb::Refusal::from(&refusal)`. A conversion that needs more than the value (the
//!   table's currency), or of a type this crate only re-exports from `banco_records`
//!   (dealt cards, card sources), is a function here.
//! - Inward (wire → table): `TryFrom` impls for the croupier's requests, read into
//!   [`Command`](crate::Command)s; the caller's name comes with the request as a tuple
//!   `(&request, by)`. Values proto3 stores bare go through functions taking the field's
//!   path (`card_source("source", raw)`, `key("idempotency_key", text)`). Every refusal is a
//!   [`ConversionError`](banco_wire::ConversionError) naming the field at fault.
//!
//! `now_ms` of every command built here is 0: the actor stamps it from its clock.

mod cards;
mod command;
mod phase;
mod refusal;
mod snapshot;

pub use cards::{dealt_card_to_pb, position_totals};
pub use command::{MAX_KEY_LEN, MAX_REASON_CHARS, key, reason, round_id};
pub use phase::{balance_reason, card_source, card_source_to_pb};
pub use refusal::{bet_refusal, position_kind, wallet_refusal};
pub use snapshot::winners;
