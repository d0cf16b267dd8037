//! One subscriber's queue of events, and how the hub wakes many subscribers at once.
//!
//! The hub pushes an event into every subscriber's queue without waking anyone, then hands
//! the wakers of each connection thread's subscribers to that thread's relay in one
//! message, sorted by connection and cut into batches of whole connections. The relay
//! wakes one batch from inside its own runtime, so that all of the batch's streams run
//! before their connections write: each connection then sends the event to all its
//! subscribers in one write (see `serve`'s connection threads). It wakes the next batch
//! only after those connections have written, so the first subscribers are sent the event
//! while the hub's later ones wait their turn, instead of every connection writing only
//! after every stream of the thread has run. A subscriber outside such a thread (tests, a
//! single-threaded server) is woken directly.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::sync::mpsc;

use super::ring::Encoded;

/// What a subscriber's stream gets next.
pub(crate) enum Next {
    Event(Arc<Encoded>),
    /// The hub let go of the subscriber, saying why; nothing more comes.
    Cut(String),
}

#[derive(Debug, Default)]
struct Inner {
    events: VecDeque<Arc<Encoded>>,
    cut: Option<String>,
    /// The stream's, while it waits for an event.
    waker: Option<Waker>,
}

/// A bounded queue the hub fills and one stream empties. One lock guards the events and
/// the stream's waker: each event costs the hub one lock and the stream one, which
/// matters when every event goes to thousands of queues.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
    capacity: usize,
}

/// Why an event could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// An event queued: how many now wait, and the stream's waker if it was waiting (for the
/// hub to wake, with the others, in a batch).
#[derive(Debug)]
pub(crate) struct Queued {
    pub(crate) waiting: usize,
    pub(crate) waker: Option<Waker>,
}

impl Queue {
    pub(crate) fn new(capacity: usize, backlog: Vec<Arc<Encoded>>) -> Queue {
        Queue {
            inner: Mutex::new(Inner {
                events: backlog.into(),
                cut: None,
                waker: None,
            }),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `event` without waking the stream, or `Full` when `capacity` events already
    /// wait unread.
    pub(crate) fn push(&self, event: Arc<Encoded>) -> Result<Queued, Full> {
        let mut inner = self.lock();
        if inner.events.len() >= self.capacity {
            return Err(Full);
        }
        inner.events.push_back(event);
        Ok(Queued {
            waiting: inner.events.len(),
            waker: inner.waker.take(),
        })
    }

    /// Ends the queue: what is queued is still delivered, then `reason`.
    pub(crate) fn cut(&self, reason: String) {
        let waker = {
            let mut inner = self.lock();
            inner.cut.get_or_insert(reason);
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The next event, or `Pending` with the stream's waker kept for the hub.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Next> {
        let mut inner = self.lock();
        if let Some(event) = inner.events.pop_front() {
            return Poll::Ready(Next::Event(event));
        }
        if let Some(reason) = inner.cut.take() {
            return Poll::Ready(Next::Cut(reason));
        }
        match &inner.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => inner.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// The connection a subscriber is served on, as a key that groups its wakeups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Connection(u64);

impl Connection {
    /// The connection from `peer` (its address and port name it while it is open);
    /// without one, all such subscribers share one key.
    pub(crate) fn of(peer: Option<std::net::SocketAddr>) -> Connection {
        use std::hash::{Hash as _, Hasher as _};
        let Some(peer) = peer else {
            return Connection(0);
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        peer.hash(&mut hasher);
        Connection(hasher.finish())
    }
}

/// Wakers a relay wakes before it lets the thread's connections write. Whole
/// connections go in a batch, so a connection still writes an event once for all its
/// subscribers; with a subscriber per connection, this many connections write per batch.
const BATCH: usize = 128;

/// The wakers of one event's subscribers, by the connection thread that serves them.
#[derive(Default)]
pub(crate) struct Wakeups {
    by_relay: Vec<(Relay, Vec<(Connection, Waker)>)>,
}

impl Wakeups {
    pub(crate) fn add(&mut self, relay: Option<&Relay>, connection: Connection, waker: Waker) {
        let Some(relay) = relay else {
            waker.wake();
            return;
        };
        match self.by_relay.iter_mut().find(|(r, _)| r.same(relay)) {
            Some((_, wakers)) => wakers.push((connection, waker)),
            None => self
                .by_relay
                .push((relay.clone(), vec![(connection, waker)])),
        }
    }

    pub(crate) fn send(self) {
        for (relay, mut wakers) in self.by_relay {
            wakers.sort_unstable_by_key(|(connection, _)| *connection);
            relay.wake(batches(wakers));
        }
    }
}

/// `wakers`, sorted by connection, in batches of whole connections of at least [`BATCH`]
/// wakers (but the last).
fn batches(wakers: Vec<(Connection, Waker)>) -> Vec<Vec<Waker>> {
    let mut batches = Vec::with_capacity(wakers.len() / BATCH + 1);
    let mut batch = Vec::with_capacity(BATCH);
    let mut previous = None;
    for (connection, waker) in wakers {
        if batch.len() >= BATCH && previous != Some(connection) {
            batches.push(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
        }
        previous = Some(connection);
        // A connection's subscribers wait on the connection's own task: wake it once.
        if batch
            .last()
            .is_some_and(|last: &Waker| last.will_wake(&waker))
        {
            continue;
        }
        batch.push(waker);
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

/// Wakes a connection thread's subscribers from inside that thread.
#[derive(Clone, Debug)]
pub(crate) struct Relay(mpsc::UnboundedSender<Vec<Vec<Waker>>>);

impl Relay {
    pub(crate) fn same(&self, other: &Relay) -> bool {
        self.0.same_channel(&other.0)
    }

    /// Wakes `batches` on the relay's thread, in order; directly if that thread has
    /// stopped.
    fn wake(&self, batches: Vec<Vec<Waker>>) {
        if let Err(returned) = self.0.send(batches) {
            returned.0.into_iter().flatten().for_each(Waker::wake);
        }
    }
}

thread_local! {
    static RELAY: RefCell<Option<Relay>> = const { RefCell::new(None) };
}

/// Makes the current thread's runtime a relay: its subscribers are woken from inside it.
/// Call once, inside the runtime of a connection thread.
pub(crate) fn install_relay() {
    let (sender, mut events) = mpsc::unbounded_channel::<Vec<Vec<Waker>>>();
    tokio::spawn(async move {
        while let Some(batches) = events.recv().await {
            let mut first = true;
            for batch in batches {
                if !first {
                    // Back once the woken streams and their connections have run (a
                    // yield in tokio waits for the run queue to empty).
                    tokio::task::yield_now().await;
                }
                first = false;
                batch.into_iter().for_each(Waker::wake);
            }
        }
    });
    RELAY.with(|relay| *relay.borrow_mut() = Some(Relay(sender)));
}

/// The relay of the current thread, if it is a connection thread.
pub(crate) fn current_relay() -> Option<Relay> {
    RELAY.with(|relay| relay.borrow().clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use bytes::Bytes;
    use std::task::Wake;

    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn event(seq: u64) -> Arc<Encoded> {
        Arc::new(Encoded {
            seq,
            to: None,
            bytes: Bytes::new(),
        })
    }

    #[test]
    fn events_then_the_cut_in_order_and_a_bound() {
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let queue = Queue::new(2, vec![event(1)]);
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Event(e)) if e.seq == 1));
        assert!(queue.poll_next(&mut cx).is_pending());
        let first = queue.push(event(2)).unwrap();
        assert_eq!(first.waiting, 1);
        // The second push finds the waker already handed out.
        let second = queue.push(event(3)).unwrap();
        assert_eq!((second.waiting, second.waker.is_none()), (2, true));
        assert!(matches!(queue.push(event(4)), Err(Full)));
        // Pushing does not wake; the hub wakes the waker it was given, in a batch.
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        first.waker.unwrap().wake();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        queue.cut("too slow".into());
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Event(e)) if e.seq == 2));
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Event(e)) if e.seq == 3));
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Cut(r)) if r == "too slow"));
    }
}
