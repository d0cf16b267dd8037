//! The public events of one table as one connection thread has them, read by every
//! subscriber served on that thread, each at its own cursor.
//!
//! Why: the hub used to push each public event into every subscriber's queue, a lock the
//! hub's thread and then the connection's thread took in turn for each of ten thousand
//! subscribers, and only then woke anyone: the pushing alone delayed every receipt, and
//! the queues were the broadcaster's largest cost after HTTP/2 itself (perf). Now the hub
//! hands each public event once to each connection thread (its relay, see `queue`),
//! which appends it here and wakes the connections waiting for it. A subscriber that falls
//! more than [`Feed`] keeps behind is cut off with its resume point, as a full queue was;
//! a stalled one is found out on the next event even while it cannot be sent anything.
//! Private events still go to the subscriber's own queue (see `Subscription` for the
//! merge by seq).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

use super::ring::Encoded;

/// What every feed of one table is made with, handed from the hub to the connection
/// threads with each event.
#[derive(Debug)]
pub(crate) struct FeedSpec {
    /// Which table's hub (unique in the process).
    pub(crate) hub: u64,
    /// Events kept: how far behind a subscriber may fall before it is cut off.
    pub(crate) keep: usize,
    pub(crate) cut_off: Counter,
    pub(crate) lag: LagBoard,
}

impl FeedSpec {
    pub(crate) fn new(keep: usize, cut_off: Counter, lag: Gauge) -> FeedSpec {
        static HUBS: AtomicU64 = AtomicU64::new(0);
        FeedSpec {
            hub: HUBS.fetch_add(1, Ordering::Relaxed),
            keep: keep.max(1),
            cut_off,
            lag: LagBoard {
                gauge: lag,
                by_feed: Mutex::new(Vec::new()),
            },
        }
    }
}

/// The table's lag gauge: the furthest-behind subscriber over every connection thread,
/// each thread reporting its own after every event.
#[derive(Debug)]
pub(crate) struct LagBoard {
    gauge: Gauge,
    by_feed: Mutex<Vec<(u64, usize)>>,
}

impl LagBoard {
    fn report(&self, feed: u64, behind: usize) {
        let mut by_feed = self.by_feed.lock().unwrap_or_else(PoisonError::into_inner);
        match by_feed.iter_mut().find(|(f, _)| *f == feed) {
            Some((_, b)) => *b = behind,
            None => by_feed.push((feed, behind)),
        }
        let deepest = by_feed.iter().map(|(_, b)| *b).max().unwrap_or(0);
        self.gauge.set(i64::try_from(deepest).unwrap_or(i64::MAX));
    }

    fn forget(&self, feed: u64) {
        let mut by_feed = self.by_feed.lock().unwrap_or_else(PoisonError::into_inner);
        by_feed.retain(|(f, _)| *f != feed);
    }
}

/// A subscriber's place in a feed.
#[derive(Debug)]
struct Reader {
    /// The position of the next event to read (positions count every event the feed was
    /// ever given).
    cursor: u64,
    /// Fell too far behind: the subscriber is to be cut off.
    lagged: bool,
    /// Its queue may have something (set by the relay, and on joining).
    own: bool,
    /// Its connection's waker, while it waits: for an event of its own.
    waker: Option<Waker>,
    /// Counted among its connection's waiting subscribers for the next event.
    waiting: bool,
    used: bool,
}

#[derive(Debug)]
struct State {
    events: VecDeque<Encoded>,
    /// The position of `events[0]`.
    base: u64,
    /// The seq of the newest event dropped from the front (0: none).
    dropped: u64,
    readers: Vec<Reader>,
    free: Vec<usize>,
    /// Connections waiting for the next event, each once, with how many of their
    /// subscribers wait; and where each is in that list, by its waker.
    waiting: Vec<(Waker, usize)>,
    waiting_at: HashMap<WakerKey, usize>,
}

/// What tells two wakers apart: the addresses of their data and of their functions (the
/// same ones wake the same task).
type WakerKey = (usize, usize);

/// One table's public events on one thread (or, for subscribers served outside the
/// connection threads, the hub's own).
#[derive(Debug)]
pub(crate) struct Feed {
    spec: Arc<FeedSpec>,
    /// Names this feed on the lag board.
    id: u64,
    state: Mutex<State>,
}

/// A reader's next public event.
pub(crate) enum Next {
    /// Taken: the reader has moved past it.
    Event { seq: u64, bytes: bytes::Bytes },
    /// The next one's seq is not below the limit asked for: it stays.
    Later,
    /// The reader's queue may have something: look, then ask again.
    Queue,
    /// Nothing yet.
    Nothing,
    /// The reader fell more than the feed keeps ([`Feed::kept`]) behind.
    Lagged,
}

impl Feed {
    pub(crate) fn new(spec: Arc<FeedSpec>) -> Feed {
        static FEEDS: AtomicU64 = AtomicU64::new(0);
        Feed {
            spec,
            id: FEEDS.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State {
                events: VecDeque::new(),
                base: 0,
                dropped: 0,
                readers: Vec::new(),
                free: Vec::new(),
                waiting: Vec::new(),
                waiting_at: HashMap::new(),
            }),
        }
    }

    /// How far behind a reader may fall before it is cut off.
    pub(crate) fn kept(&self) -> usize {
        self.spec.keep
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A reader of every event after seq `after` (those up to it the subscriber has
    /// already, from its snapshot or backlog). Lagged at once if some of them are gone.
    pub(crate) fn join(&self, after: u64) -> usize {
        let mut state = self.lock();
        let skip = state.events.partition_point(|e| e.seq <= after) as u64;
        let reader = Reader {
            cursor: state.base + skip,
            lagged: state.dropped > after,
            own: true,
            waker: None,
            waiting: false,
            used: true,
        };
        match state.free.pop() {
            Some(slot) => {
                state.readers[slot] = reader;
                slot
            }
            None => {
                state.readers.push(reader);
                state.readers.len() - 1
            }
        }
    }

    pub(crate) fn leave(&self, reader: usize) {
        let mut state = self.lock();
        if let Some(r) = state.readers.get_mut(reader)
            && r.used
        {
            r.used = false;
            r.waker = None;
            state.free.push(reader);
        }
    }

    /// Takes the reader's next event with a seq above `last`, if its seq is below `limit`;
    /// when there is none, the caller's waker is kept for the next event. Unless
    /// `queue_read` (the caller has just looked at its queue), [`Next::Queue`] first when
    /// the reader's queue may have something.
    pub(crate) fn next(
        &self,
        reader: usize,
        last: u64,
        limit: u64,
        queue_read: bool,
        cx: &mut Context<'_>,
    ) -> Next {
        let mut state = self.lock();
        let state = &mut *state;
        let Some(r) = state.readers.get_mut(reader).filter(|r| !r.lagged) else {
            return Next::Lagged;
        };
        if r.own && !queue_read {
            return Next::Queue;
        }
        // Below the feed's first event only if marking it lagged was missed: it is then.
        let Some(index) = r.cursor.checked_sub(state.base) else {
            r.lagged = true;
            return Next::Lagged;
        };
        for event in state.events.range(
            usize::try_from(index)
                .unwrap_or(usize::MAX)
                .min(state.events.len())..,
        ) {
            if event.seq <= last {
                r.cursor += 1;
                continue;
            }
            if event.seq >= limit {
                return Next::Later;
            }
            r.cursor += 1;
            return Next::Event {
                seq: event.seq,
                bytes: event.bytes.clone(),
            };
        }
        match &r.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => r.waker = Some(cx.waker().clone()),
        }
        wait(&mut state.waiting, &mut state.waiting_at, r, cx);
        Next::Nothing
    }

    /// Notes that the reader's queue has found nothing (it is flagged again when the
    /// relay gives it something).
    pub(crate) fn queue_empty(&self, reader: usize) {
        if let Some(r) = self.lock().readers.get_mut(reader) {
            r.own = false;
        }
    }

    /// Flags the reader's queue as having something; the waker to wake, if it waits.
    pub(crate) fn mark_own(&self, reader: usize) -> Option<Waker> {
        let mut state = self.lock();
        let r = state.readers.get_mut(reader).filter(|r| r.used)?;
        r.own = true;
        r.waker.take()
    }

    /// Whether the reader fell too far behind; if not, the caller's waker is kept for the
    /// next event, so that a subscriber that cannot be sent anything is still found out.
    pub(crate) fn lagged(&self, reader: usize, cx: &mut Context<'_>) -> bool {
        let mut state = self.lock();
        let state = &mut *state;
        let Some(r) = state.readers.get_mut(reader).filter(|r| !r.lagged) else {
            return true;
        };
        wait(&mut state.waiting, &mut state.waiting_at, r, cx);
        false
    }

    /// Appends `event`, marks the readers it leaves too far behind, and returns the
    /// connections to wake, with how many of their subscribers waited.
    pub(crate) fn append(&self, event: &Encoded) -> Vec<(Waker, usize)> {
        let keep = self.spec.keep;
        // A copy of its own: every subscriber served here takes a reference to the bytes,
        // and sharing one count with the other threads would move its cache line between
        // the cores for each of them.
        let event = Encoded {
            seq: event.seq,
            to: None,
            bytes: bytes::Bytes::copy_from_slice(&event.bytes),
        };
        let mut state = self.lock();
        let state = &mut *state;
        state.events.push_back(event);
        let head = state.base + state.events.len() as u64;
        let mut deepest = 0;
        let mut lagged = 0;
        for r in state.readers.iter_mut().filter(|r| r.used && !r.lagged) {
            r.waiting = false;
            let behind = usize::try_from(head - r.cursor).unwrap_or(usize::MAX);
            if behind > keep {
                r.lagged = true;
                lagged += 1;
            } else {
                deepest = deepest.max(behind);
            }
        }
        while state.events.len() > keep {
            if let Some(old) = state.events.pop_front() {
                state.dropped = old.seq;
            }
            state.base += 1;
        }
        self.spec.cut_off.inc_by(lagged);
        self.spec.lag.report(self.id, deepest);
        state.waiting_at.clear();
        std::mem::take(&mut state.waiting)
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.spec.lag.forget(self.id);
    }
}

/// Keeps `cx`'s waker among those to wake at the next event, once per connection (a
/// connection polls all its subscribers, and may be polled for other reasons between two
/// events), counting `reader` among its waiting subscribers once.
fn wait(
    waiting: &mut Vec<(Waker, usize)>,
    waiting_at: &mut HashMap<WakerKey, usize>,
    reader: &mut Reader,
    cx: &Context<'_>,
) {
    let new_reader = usize::from(!reader.waiting);
    reader.waiting = true;
    let waker = cx.waker();
    // The usual case: the subscriber polled just before was the same connection's.
    if let Some((last, count)) = waiting.last_mut()
        && last.will_wake(waker)
    {
        *count += new_reader;
        return;
    }
    let key: WakerKey = (
        waker.data().addr(),
        std::ptr::from_ref(waker.vtable()).addr(),
    );
    match waiting_at.get(&key) {
        Some(&at) => waiting[at].1 += new_reader,
        None => {
            waiting_at.insert(key, waiting.len());
            waiting.push((waker.clone(), new_reader));
        }
    }
}

thread_local! {
    static FEEDS: RefCell<HashMap<u64, Arc<Feed>>> = RefCell::new(HashMap::new());
}

/// This thread's feed of the table `spec` is for, made on first use.
pub(crate) fn on_this_thread(spec: &Arc<FeedSpec>) -> Arc<Feed> {
    FEEDS.with(|feeds| {
        Arc::clone(
            feeds
                .borrow_mut()
                .entry(spec.hub)
                .or_insert_with(|| Arc::new(Feed::new(Arc::clone(spec)))),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use bytes::Bytes;

    fn event(seq: u64) -> Encoded {
        Encoded {
            seq,
            to: None,
            bytes: Bytes::new(),
        }
    }

    fn feed(keep: usize) -> Feed {
        Feed::new(Arc::new(FeedSpec::new(
            keep,
            Counter::default(),
            Gauge::default(),
        )))
    }

    fn next(feed: &Feed, reader: usize, last: &mut u64, cx: &mut Context<'_>) -> Option<u64> {
        match feed.next(reader, *last, u64::MAX, true, cx) {
            Next::Event { seq, .. } => {
                *last = seq;
                Some(seq)
            }
            Next::Nothing => None,
            Next::Later | Next::Queue => panic!("not asked"),
            Next::Lagged => panic!("lagged"),
        }
    }

    #[test]
    fn readers_start_after_what_they_have_and_read_in_order() {
        let mut cx = Context::from_waker(Waker::noop());
        let feed = feed(8);
        feed.append(&event(10));
        feed.append(&event(20));
        let early = feed.join(5);
        let late = feed.join(10);
        let (mut a, mut b) = (5, 10);
        assert_eq!(next(&feed, early, &mut a, &mut cx), Some(10));
        assert_eq!(next(&feed, early, &mut a, &mut cx), Some(20));
        assert_eq!(next(&feed, early, &mut a, &mut cx), None);
        // A new reader looks at its queue first; the relay flags it again.
        assert!(matches!(
            feed.next(early, a, u64::MAX, false, &mut cx),
            Next::Queue
        ));
        feed.queue_empty(early);
        assert!(matches!(
            feed.next(early, a, u64::MAX, false, &mut cx),
            Next::Nothing
        ));
        assert!(
            feed.mark_own(early).is_some(),
            "it waited: its waker is given"
        );
        assert!(matches!(
            feed.next(early, a, u64::MAX, false, &mut cx),
            Next::Queue
        ));
        // A snapshot ahead of the feed: what the feed has up to it is skipped.
        let ahead = feed.join(25);
        let mut c = 25;
        assert_eq!(next(&feed, ahead, &mut c, &mut cx), None);
        assert_eq!(next(&feed, late, &mut b, &mut cx), Some(20));
        // Two subscribers waited (one of them twice) with the same waker, one
        // connection's: it is woken once for the next event, for two subscribers.
        let woken = feed.append(&event(30));
        assert_eq!(woken.len(), 1);
        assert_eq!(woken[0].1, 2);
        // An event of the subscriber's own before it: the public one waits.
        assert!(matches!(
            feed.next(ahead, c, 30, true, &mut cx),
            Next::Later
        ));
        assert_eq!(next(&feed, ahead, &mut c, &mut cx), Some(30));
        feed.leave(late);
        assert_eq!(feed.join(30), late, "a slot left is used again");
    }

    #[test]
    fn a_reader_more_than_the_feed_keeps_behind_is_lagged_and_counted() {
        let mut cx = Context::from_waker(Waker::noop());
        let spec = Arc::new(FeedSpec::new(3, Counter::default(), Gauge::default()));
        let feed = Feed::new(Arc::clone(&spec));
        let slow = feed.join(0);
        let quick = feed.join(0);
        let mut last = 0;
        for seq in 1..=3 {
            feed.append(&event(seq));
            assert_eq!(next(&feed, quick, &mut last, &mut cx), Some(seq));
        }
        assert!(!feed.lagged(slow, &mut cx));
        assert_eq!(spec.lag.gauge.get(), 3);
        feed.append(&event(4));
        assert!(feed.lagged(slow, &mut cx));
        assert!(matches!(
            feed.next(slow, 0, u64::MAX, true, &mut cx),
            Next::Lagged
        ));
        assert_eq!(feed.kept(), 3);
        assert_eq!(spec.cut_off.get(), 1);
        assert_eq!(next(&feed, quick, &mut last, &mut cx), Some(4));
        // A reader joining after what was dropped is lagged at once; one after it is not.
        assert!(feed.lagged(feed.join(0), &mut cx));
        assert!(!feed.lagged(feed.join(1), &mut cx));
    }

    #[test]
    fn connections_polled_in_turn_are_each_woken_once_with_their_count() {
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let (one, two) = (Waker::from(Arc::new(Task)), Waker::from(Arc::new(Task)));
        let feed = feed(8);
        let readers: Vec<usize> = (0..4).map(|_| feed.join(0)).collect();
        // Subscribers of two connections waiting in turn, the first of them twice.
        for (reader, waker) in [(0, &one), (1, &two), (2, &one), (3, &two), (0, &one)] {
            let mut cx = Context::from_waker(waker);
            feed.queue_empty(readers[reader]);
            assert!(matches!(
                feed.next(readers[reader], 0, u64::MAX, false, &mut cx),
                Next::Nothing
            ));
        }
        let woken = feed.append(&event(1));
        assert_eq!(woken.len(), 2);
        assert!(woken[0].0.will_wake(&one) && woken[1].0.will_wake(&two));
        assert_eq!((woken[0].1, woken[1].1), (2, 2));
        // Woken: nobody waits for the next one until it asks again.
        assert!(feed.append(&event(2)).is_empty());
    }
}
