//! One subscriber's queue of its own events, and how the hub wakes many subscribers at
//! once.
//!
//! Public events reach a subscriber through its connection thread's feed (see `feed`);
//! its queue holds what only it gets (its bets, its balance, refusals) and, on a resume,
//! what it missed. Each connection thread has a relay: the hub hands it every public event
//! of the tables it serves, and every event (or cut-off) for a subscriber served there,
//! in order, so that a subscriber's own events never overtake the public ones before them;
//! the relay queues those and flags the subscriber in its feed, whose queue is otherwise
//! not looked at. The relay wakes connections in batches from inside its own runtime, so
//! that all of a batch's streams run before their connections write: each connection sends
//! the event to all its subscribers in one write (see `serve`'s connection threads). It
//! wakes the next batch only after those connections have written, so the first
//! subscribers are sent the event while later ones wait their turn, instead of every
//! connection writing only after every stream of the thread has run. A subscriber outside
//! such a thread (tests, a single-threaded server) is woken directly.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Waker};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use super::feed::{self, FeedSpec};
use super::ring::Encoded;

/// The front of a subscriber's queue.
pub(crate) enum Front {
    Event(Arc<Encoded>),
    /// Nothing queued: the caller's waker is kept (a subscriber outside the connection
    /// threads is woken with it).
    Empty,
    /// Nothing queued, and the hub let go of the subscriber, saying why.
    Cut(String),
}

#[derive(Debug, Default)]
struct Inner {
    events: VecDeque<Arc<Encoded>>,
    cut: Option<String>,
    /// The stream's, while it waits for an event.
    waker: Option<Waker>,
}

/// A bounded queue the relay (or, outside the connection threads, the hub) fills and one
/// stream empties; one lock guards the events and the stream's waker.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
    capacity: usize,
    /// The subscriber's place in its thread's feed, once it has one (`usize::MAX` before).
    reader: AtomicUsize,
}

/// Why an event could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// An event queued: the stream's waker if it was waiting.
#[derive(Debug)]
pub(crate) struct Queued {
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
            reader: AtomicUsize::new(usize::MAX),
        }
    }

    /// Notes the subscriber's place in its feed, for the relay to flag when an event comes.
    pub(crate) fn set_reader(&self, reader: usize) {
        self.reader.store(reader, Ordering::Relaxed);
    }

    fn reader(&self) -> Option<usize> {
        Some(self.reader.load(Ordering::Relaxed)).filter(|&r| r != usize::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `event` without waking the stream; when `capacity` events already wait
    /// unread, ends the queue instead, saying so, and counts that in `cut_off` (once: more
    /// may come before the stream ends), then `Full`.
    pub(crate) fn offer(&self, event: Arc<Encoded>, cut_off: &Counter) -> Result<Queued, Full> {
        let full = self.push(event);
        if full.is_err()
            && self.cut_first(format!(
                "{} events of your own were waiting unread: resume from your last seq",
                self.capacity
            ))
        {
            cut_off.inc();
        }
        full
    }

    /// Queues `event` without waking the stream, or `Full` when `capacity` events already
    /// wait unread.
    fn push(&self, event: Arc<Encoded>) -> Result<Queued, Full> {
        let mut inner = self.lock();
        if inner.events.len() >= self.capacity {
            return Err(Full);
        }
        inner.events.push_back(event);
        Ok(Queued {
            waker: inner.waker.take(),
        })
    }

    /// Ends the queue: what is queued is still delivered, then `reason`.
    pub(crate) fn cut(&self, reason: String) {
        self.cut_first(reason);
    }

    /// [`cut`](Self::cut); true if the queue was not cut already.
    fn cut_first(&self, reason: String) -> bool {
        let (first, waker) = {
            let mut inner = self.lock();
            let first = inner.cut.is_none();
            inner.cut.get_or_insert(reason);
            (first, inner.waker.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        first
    }

    /// The first event queued, left in the queue; when there is none, the stream's waker
    /// is kept for the hub.
    pub(crate) fn front(&self, cx: &mut Context<'_>) -> Front {
        let mut inner = self.lock();
        if let Some(event) = inner.events.front() {
            return Front::Event(Arc::clone(event));
        }
        if let Some(reason) = &inner.cut {
            return Front::Cut(reason.clone());
        }
        match &inner.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => inner.waker = Some(cx.waker().clone()),
        }
        Front::Empty
    }

    /// Drops the first event queued (the one [`front`](Self::front) gave).
    pub(crate) fn pop(&self) {
        self.lock().events.pop_front();
    }
}

/// Wakers a relay wakes before it lets the thread's connections write. Whole
/// connections go in a batch, so a connection still writes an event once for all its
/// subscribers; with a subscriber per connection, this many connections write per batch.
const BATCH: usize = 128;

/// `wakers` (each with how many subscribers wait on it), in batches of at least [`BATCH`]
/// subscribers (but the last).
fn batches(wakers: Vec<(Waker, usize)>) -> Vec<Vec<Waker>> {
    let mut batches = Vec::with_capacity(wakers.len() / BATCH + 1);
    let mut batch = Vec::new();
    let mut subscribers = 0;
    for (waker, count) in wakers {
        if subscribers >= BATCH {
            batches.push(std::mem::take(&mut batch));
            subscribers = 0;
        }
        batch.push(waker);
        subscribers += count;
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

/// What a relay is handed.
enum Relayed {
    /// A public event for this thread's feed of a table.
    Public(Arc<FeedSpec>, Arc<Encoded>),
    /// An event for one subscriber's queue.
    Own(Arc<FeedSpec>, Arc<Queue>, Arc<Encoded>),
    /// The hub lets go of a subscriber, saying why.
    Cut(Arc<FeedSpec>, Arc<Queue>, String),
    /// A task of this thread woken from another (`serve::woken`).
    Wake(Waker),
}

/// Hands a connection thread the public events of its tables, and the events and cut-offs
/// of its subscribers, to be dealt with inside it.
#[derive(Clone, Debug)]
pub(crate) struct Relay(mpsc::UnboundedSender<Relayed>);

impl std::fmt::Debug for Relayed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Relayed::Public(_, event) => write!(f, "Public(seq {})", event.seq),
            Relayed::Own(_, _, event) => write!(f, "Own(seq {})", event.seq),
            Relayed::Cut(_, _, reason) => write!(f, "Cut({reason})"),
            Relayed::Wake(_) => write!(f, "Wake"),
        }
    }
}

impl Relay {
    pub(crate) fn same(&self, other: &Relay) -> bool {
        self.0.same_channel(&other.0)
    }

    /// Hands `event` to the relay's thread, for its feed of `spec`'s table; nothing if
    /// that thread has stopped (its subscribers are gone with it).
    pub(crate) fn publish(&self, spec: &Arc<FeedSpec>, event: &Arc<Encoded>) {
        let _ = self
            .0
            .send(Relayed::Public(Arc::clone(spec), Arc::clone(event)));
    }

    /// Hands `event` to the relay's thread, for `queue` (a subscriber served there).
    pub(crate) fn own(&self, spec: &Arc<FeedSpec>, queue: &Arc<Queue>, event: &Arc<Encoded>) {
        let _ = self.0.send(Relayed::Own(
            Arc::clone(spec),
            Arc::clone(queue),
            Arc::clone(event),
        ));
    }

    /// Wakes `task`, a task of the relay's thread, from inside that thread; gives it back
    /// if the thread has stopped.
    pub(crate) fn wake(&self, task: Waker) -> Result<(), Waker> {
        if let Err(returned) = self.0.send(Relayed::Wake(task))
            && let Relayed::Wake(task) = returned.0
        {
            return Err(task);
        }
        Ok(())
    }

    /// Whether this is the current thread's relay.
    pub(crate) fn is_current(&self) -> bool {
        RELAY.with(|relay| relay.borrow().as_ref().is_some_and(|r| r.same(self)))
    }

    /// Ends `queue` with `reason`, on the relay's thread; directly if it has stopped.
    pub(crate) fn cut(&self, spec: &Arc<FeedSpec>, queue: &Arc<Queue>, reason: String) {
        if let Err(returned) =
            self.0
                .send(Relayed::Cut(Arc::clone(spec), Arc::clone(queue), reason))
            && let Relayed::Cut(_, queue, reason) = returned.0
        {
            queue.cut(reason);
        }
    }
}

thread_local! {
    static RELAY: RefCell<Option<Relay>> = const { RefCell::new(None) };
}

/// Makes the current thread's runtime a relay: its subscribers are woken, and its feeds
/// filled, from inside it. Call once, inside the runtime of a connection thread.
pub(crate) fn install_relay() {
    let (sender, mut relayed) = mpsc::unbounded_channel::<Relayed>();
    tokio::spawn(async move {
        while let Some(first) = relayed.recv().await {
            // Whatever else has come too (the events of one journal record come together,
            // a result and the roads after it): each connection then sends them in one
            // write.
            let mut wakers = deal_with(first);
            while let Ok(next) = relayed.try_recv() {
                wakers.extend(deal_with(next));
            }
            let batches = batches(wakers);
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

/// Does what the relay was handed, on its thread; the connections to wake, each with how
/// many of its subscribers wait.
fn deal_with(relayed: Relayed) -> Vec<(Waker, usize)> {
    match relayed {
        Relayed::Public(spec, event) => feed::on_this_thread(&spec).append(&event),
        Relayed::Own(spec, queue, event) => {
            // Full: cut off, and the hub lets go of it when its stream ends.
            let _ = queue.offer(event, &spec.cut_off);
            reader_of(&spec, &queue)
        }
        Relayed::Cut(spec, queue, reason) => {
            queue.cut(reason);
            reader_of(&spec, &queue)
        }
        Relayed::Wake(task) => {
            task.wake();
            Vec::new()
        }
    }
}

/// Tells the reader of `queue` on this thread that its queue changed; its waker, if it
/// waits.
fn reader_of(spec: &Arc<FeedSpec>, queue: &Queue) -> Vec<(Waker, usize)> {
    queue
        .reader()
        .and_then(|reader| feed::on_this_thread(spec).mark_own(reader))
        .map(|waker| (waker, 1))
        .into_iter()
        .collect()
}

/// Wakes `wakers` (from a feed outside the connection threads) at once.
pub(crate) fn wake_now(wakers: Vec<(Waker, usize)>) {
    wakers.into_iter().for_each(|(waker, _)| waker.wake());
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

    fn take(queue: &Queue, cx: &mut Context<'_>) -> Option<Result<u64, String>> {
        match queue.front(cx) {
            Front::Event(e) => {
                queue.pop();
                Some(Ok(e.seq))
            }
            Front::Empty => None,
            Front::Cut(reason) => Some(Err(reason)),
        }
    }

    #[test]
    fn events_then_the_cut_in_order_and_a_bound() {
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let queue = Queue::new(2, vec![event(1)]);
        assert_eq!(take(&queue, &mut cx), Some(Ok(1)));
        assert_eq!(take(&queue, &mut cx), None);
        let first = queue.push(event(2)).unwrap();
        assert!(first.waker.is_some());
        // The second push finds the waker already handed out.
        let second = queue.push(event(3)).unwrap();
        assert!(second.waker.is_none());
        assert!(matches!(queue.push(event(4)), Err(Full)));
        // Pushing does not wake; the caller wakes the waker it was given.
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        first.waker.unwrap().wake();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        queue.cut("too slow".into());
        assert_eq!(take(&queue, &mut cx), Some(Ok(2)));
        assert_eq!(take(&queue, &mut cx), Some(Ok(3)));
        assert_eq!(take(&queue, &mut cx), Some(Err("too slow".to_owned())));
    }

    #[test]
    fn wakers_go_in_batches_of_whole_connections() {
        let wakers: Vec<(Waker, usize)> = (0..5).map(|_| (Waker::noop().clone(), 60)).collect();
        let sizes: Vec<usize> = batches(wakers).iter().map(Vec::len).collect();
        // 60 subscribers a connection: three connections make the first batch of 128.
        assert_eq!(sizes, [3, 2]);
    }

    #[test]
    fn the_relay_queues_own_events_flags_the_reader_and_counts_a_cut_once() {
        use prometheus_client::metrics::gauge::Gauge;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            install_relay();
            let relay = current_relay().unwrap();
            let spec = Arc::new(FeedSpec::new(8, Counter::default(), Gauge::default()));
            let queue = Arc::new(Queue::new(2, Vec::new()));
            let feed = feed::on_this_thread(&spec);
            let reader = feed.join(0);
            queue.set_reader(reader);
            let mut cx = Context::from_waker(Waker::noop());
            // Nothing for it: its queue is no longer looked at.
            feed.queue_empty(reader);
            assert!(matches!(
                feed.next(reader, 0, u64::MAX, false, &mut cx),
                feed::Next::Nothing
            ));
            relay.publish(&spec, &event(1));
            relay.own(&spec, &queue, &event(2));
            tokio::task::yield_now().await;
            // The relay flagged its queue, which has the own event.
            assert!(matches!(
                feed.next(reader, 0, u64::MAX, false, &mut cx),
                feed::Next::Queue
            ));
            assert_eq!(take(&queue, &mut cx), Some(Ok(2)));
            // Three more for a queue of two: cut once, counted once.
            for seq in 3..=6 {
                relay.own(&spec, &queue, &event(seq));
            }
            tokio::task::yield_now().await;
            assert_eq!(spec.cut_off.get(), 1);
            assert_eq!(take(&queue, &mut cx), Some(Ok(3)));
            assert_eq!(take(&queue, &mut cx), Some(Ok(4)));
            assert!(matches!(take(&queue, &mut cx), Some(Err(r)) if r.contains("unread")));
        });
    }
}
