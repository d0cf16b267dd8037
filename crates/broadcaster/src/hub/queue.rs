//! One subscriber's queue of events, and how the hub wakes many subscribers at once.
//!
//! The hub pushes an event into every subscriber's queue without waking anyone, then hands
//! the wakers of each connection thread's subscribers to that thread's relay in one
//! message. The relay wakes them from inside its own runtime, so that all of that thread's
//! streams run before any of its connections writes: each connection then sends the event
//! to all its subscribers in one write (see `serve`'s connection threads). A subscriber
//! outside such a thread (tests, a single-threaded server) is woken directly.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures::task::AtomicWaker;
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
}

/// A bounded queue the hub fills and one stream empties.
#[derive(Debug)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
    waker: AtomicWaker,
    capacity: usize,
}

/// Why an event could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

impl Queue {
    pub(crate) fn new(capacity: usize, backlog: Vec<Arc<Encoded>>) -> Queue {
        Queue {
            inner: Mutex::new(Inner {
                events: backlog.into(),
                cut: None,
            }),
            waker: AtomicWaker::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `event` without waking the stream; the events now waiting, or `Full` when
    /// `capacity` events already wait unread.
    pub(crate) fn push(&self, event: Arc<Encoded>) -> Result<usize, Full> {
        let mut inner = self.lock();
        if inner.events.len() >= self.capacity {
            return Err(Full);
        }
        inner.events.push_back(event);
        Ok(inner.events.len())
    }

    /// Ends the queue: what is queued is still delivered, then `reason`.
    pub(crate) fn cut(&self, reason: String) {
        self.lock().cut.get_or_insert(reason);
        self.waker.wake();
    }

    /// The stream's waker, if it is waiting, for the caller to wake.
    pub(crate) fn take_waker(&self) -> Option<Waker> {
        self.waker.take()
    }

    /// The next event, or `Pending` with the stream's waker registered.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Next> {
        if let Some(next) = self.try_next() {
            return Poll::Ready(next);
        }
        self.waker.register(cx.waker());
        // Again: the hub may have pushed between the first look and the registration.
        match self.try_next() {
            Some(next) => Poll::Ready(next),
            None => Poll::Pending,
        }
    }

    fn try_next(&self) -> Option<Next> {
        let mut inner = self.lock();
        if let Some(event) = inner.events.pop_front() {
            return Some(Next::Event(event));
        }
        inner.cut.take().map(Next::Cut)
    }
}

/// Wakes a connection thread's subscribers from inside that thread.
#[derive(Clone, Debug)]
pub(crate) struct Relay(mpsc::UnboundedSender<Vec<Waker>>);

impl Relay {
    pub(crate) fn same(&self, other: &Relay) -> bool {
        self.0.same_channel(&other.0)
    }

    /// Wakes `wakers` on the relay's thread; directly if that thread has stopped.
    pub(crate) fn wake(&self, wakers: Vec<Waker>) {
        if let Err(returned) = self.0.send(wakers) {
            returned.0.into_iter().for_each(Waker::wake);
        }
    }
}

thread_local! {
    static RELAY: RefCell<Option<Relay>> = const { RefCell::new(None) };
}

/// Makes the current thread's runtime a relay: its subscribers are woken from inside it.
/// Call once, inside the runtime of a connection thread.
pub(crate) fn install_relay() {
    let (sender, mut batches) = mpsc::unbounded_channel::<Vec<Waker>>();
    tokio::spawn(async move {
        while let Some(wakers) = batches.recv().await {
            wakers.into_iter().for_each(Waker::wake);
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
        queue.push(event(2)).unwrap();
        queue.push(event(3)).unwrap();
        assert_eq!(queue.push(event(4)), Err(Full));
        // Pushing does not wake; the hub takes the waker and wakes it in a batch.
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        queue.take_waker().unwrap().wake();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        queue.cut("too slow".into());
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Event(e)) if e.seq == 2));
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Event(e)) if e.seq == 3));
        assert!(matches!(queue.poll_next(&mut cx), Poll::Ready(Next::Cut(r)) if r == "too slow"));
    }
}
