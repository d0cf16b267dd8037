//! The events of journal records that never reached the table's stream (the broadcaster
//! was killed before they left it, or the stream was away longer than the publisher keeps
//! events), made again from the journal exactly as the hub made them: the same
//! translation, the same numbers. The hub's own events (coalesced totals, warnings,
//! refusals) are in no journal record and are not made again; nobody can tell a number
//! that was never sent from one that was.

use std::sync::Arc;

use banco_table::actor::Republished;

use super::encode;
use super::ring::{Encoded, INDEX_HALF, wire_seq};
use super::translate::translate;

/// The events of `republished`'s records with a seq in `(after, through]`, in order.
pub(crate) fn regenerate(
    republished: &Republished,
    table_id: &str,
    currency: &str,
    after: u64,
    through: u64,
) -> Vec<Arc<Encoded>> {
    let mut before = &republished.before;
    let mut board = republished.scoreboard.clone();
    let mut events = Vec::new();
    for record in &republished.records {
        let outgoing = translate(
            &record.events,
            before,
            &record.snapshot,
            &mut board,
            currency,
        );
        before = &record.snapshot;
        for (index, out) in (0..INDEX_HALF).zip(outgoing) {
            let seq = wire_seq(record.seq, index);
            if seq <= after || seq > through {
                continue;
            }
            events.push(Arc::new(Encoded {
                seq,
                bytes: encode(seq, table_id, &out.round_id, out.event),
                to: out.to,
            }));
        }
    }
    events
}
