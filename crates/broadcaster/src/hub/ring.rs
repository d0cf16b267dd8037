//! The recent events of a table, kept so that a subscriber who reconnects gets exactly what
//! it missed.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

/// Bits of a wire `seq` below the journal seq: the wire seq of the `i`-th event of journal
/// record `j` is `j << INDEX_BITS | i`, so numbers survive a broadcaster restart (the
/// journal's do) and strictly increase over public, private and hub-made events alike.
pub(crate) const INDEX_BITS: u32 = 20;

/// The largest index.
pub(crate) const INDEX_MAX: u64 = (1 << INDEX_BITS) - 1;

/// Indexes below this number the events of a record; `through(j)` is this index; the hub's
/// own events after record `j` (warnings, coalesced totals, refusals) take the ones above,
/// so a snapshot at record `j` is followed by exactly the hub events sent after it.
pub(crate) const INDEX_HALF: u64 = 1 << (INDEX_BITS - 1);

/// The wire seq of the `index`-th event after journal record `journal`.
pub(crate) const fn wire_seq(journal: u64, index: u64) -> u64 {
    (journal << INDEX_BITS) | index
}

/// The wire seq that stands for everything up to and including journal record `journal`:
/// a snapshot taken at that record carries it.
pub(crate) const fn through(journal: u64) -> u64 {
    wire_seq(journal, INDEX_HALF)
}

/// The journal record a wire seq belongs to.
pub(crate) const fn record_of(seq: u64) -> u64 {
    seq >> INDEX_BITS
}

/// A wire seq's index after its journal record.
pub(crate) const fn index_of(seq: u64) -> u64 {
    seq & INDEX_MAX
}

/// One wire event, numbered and encoded once for every subscriber.
#[derive(Debug)]
pub(crate) struct Encoded {
    pub(crate) seq: u64,
    /// `None`: public; `Some(player)`: that player's only.
    pub(crate) to: Option<Arc<str>>,
    /// A whole `banco.v1.TableEvent` in protobuf, framed as a gRPC message.
    pub(crate) bytes: Bytes,
}

impl Encoded {
    pub(crate) fn visible_to(&self, player: &str) -> bool {
        self.to.as_deref().is_none_or(|to| to == player)
    }
}

/// The last `capacity` events, and the seq above which nothing is missing.
#[derive(Debug)]
pub(crate) struct Ring {
    events: VecDeque<Arc<Encoded>>,
    capacity: usize,
    /// Every event with a greater seq is in `events` (or is still to come).
    floor: u64,
}

/// A resume point older than what the ring keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooOld {
    /// The oldest seq still kept (the ring's floor when it is empty).
    pub(crate) oldest_kept: u64,
}

impl Ring {
    /// An empty ring complete above `floor`.
    pub(crate) fn new(capacity: usize, floor: u64) -> Ring {
        Ring {
            events: VecDeque::with_capacity(capacity.min(4096)),
            capacity: capacity.max(1),
            floor,
        }
    }

    pub(crate) fn push(&mut self, event: Arc<Encoded>) {
        if self.events.len() == self.capacity
            && let Some(old) = self.events.pop_front()
        {
            self.floor = old.seq;
        }
        self.events.push_back(event);
    }

    /// Forgets everything: the ring is complete above `floor` only.
    pub(crate) fn reset(&mut self, floor: u64) {
        self.events.clear();
        self.floor = floor;
    }

    /// Every kept event after `after` that `player` may see, oldest first; `TooOld` when
    /// some event after `after` is no longer kept.
    pub(crate) fn since(&self, after: u64, player: &str) -> Result<Vec<Arc<Encoded>>, TooOld> {
        if after < self.floor {
            return Err(TooOld {
                oldest_kept: self.events.front().map_or(self.floor, |e| e.seq),
            });
        }
        let start = self.events.partition_point(|e| e.seq <= after);
        Ok(self
            .events
            .range(start..)
            .filter(|e| e.visible_to(player))
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn event(seq: u64, to: Option<&str>) -> Arc<Encoded> {
        Arc::new(Encoded {
            seq,
            to: to.map(Arc::from),
            bytes: Bytes::new(),
        })
    }

    fn seqs(events: &[Arc<Encoded>]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn numbers_keep_journal_order_and_leave_room_for_a_record_events() {
        assert!(wire_seq(7, 0) > through(6));
        assert!(wire_seq(7, 5) < through(7));
        assert!(through(7) < wire_seq(7, INDEX_HALF + 1));
        assert!(wire_seq(7, INDEX_MAX) < wire_seq(8, 0));
        let seq = wire_seq(7, INDEX_HALF + 3);
        assert_eq!((record_of(seq), index_of(seq)), (7, INDEX_HALF + 3));
    }

    #[test]
    fn resume_gives_what_was_missed_and_only_one_own_private_events() {
        let mut ring = Ring::new(8, 10);
        ring.push(event(11, None));
        ring.push(event(12, Some("alice")));
        ring.push(event(13, Some("bob")));
        ring.push(event(14, None));
        assert_eq!(seqs(&ring.since(10, "alice").unwrap()), vec![11, 12, 14]);
        assert_eq!(seqs(&ring.since(12, "bob").unwrap()), vec![13, 14]);
        assert_eq!(seqs(&ring.since(14, "bob").unwrap()), Vec::<u64>::new());
        assert_eq!(
            ring.since(9, "bob").unwrap_err(),
            TooOld { oldest_kept: 11 }
        );
    }

    #[test]
    fn evicted_events_move_the_floor() {
        let mut ring = Ring::new(2, 0);
        for seq in 1..=5 {
            ring.push(event(seq, None));
        }
        assert_eq!(seqs(&ring.since(3, "x").unwrap()), vec![4, 5]);
        assert_eq!(ring.since(2, "x").unwrap_err(), TooOld { oldest_kept: 4 });
        ring.reset(9);
        assert_eq!(ring.since(5, "x").unwrap_err(), TooOld { oldest_kept: 9 });
        assert!(ring.since(9, "x").unwrap().is_empty());
    }
}
