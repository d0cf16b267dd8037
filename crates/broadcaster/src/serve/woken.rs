//! A call's task woken from inside its connection thread when the wake-up comes from
//! another thread.
//!
//! A call's answer comes from its table's tasks, on the tables' runtime. A task of a
//! connection thread's runtime woken from outside it is queued, and the thread woken
//! through its reactor: a write to an eventfd for every call, whether the thread slept or
//! not (measured at 20,000 bets a second: 0.78 such writes a bet, more than half of all
//! the process's `write` calls). A table answers the calls of a journal record together;
//! handed to the thread's relay instead, they are woken from inside the thread, and the
//! relay, woken by the first, takes the others with it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

use crate::hub::{Relay, current_relay};

/// `future`, whose wake-ups from other threads go through the current thread's relay (if
/// this is a connection thread).
pub(super) fn woken_here<F: Future>(future: F) -> WokenHere<F> {
    WokenHere {
        future,
        waker: current_relay().map(|relay| {
            Arc::new(HereWaker {
                task: AtomicWaker::new(),
                relay,
            })
        }),
    }
}

pin_project_lite::pin_project! {
    pub(super) struct WokenHere<F> {
        // In place: every call is one, and its task is allocated already.
        #[pin]
        future: F,
        // `None` off the connection threads: woken as usual.
        waker: Option<Arc<HereWaker>>,
    }
}

/// What the wrapped future is given as its waker.
struct HereWaker {
    /// The task's own waker, as of its last poll.
    task: AtomicWaker,
    relay: Relay,
}

impl Wake for HereWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.relay.is_current() {
            self.task.wake();
        } else if let Some(task) = self.task.take()
            && let Err(task) = self.relay.wake(task)
        {
            // The thread is stopping: its runtime wakes the task, if it still runs.
            task.wake();
        }
    }
}

impl<F: Future> Future for WokenHere<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        match this.waker {
            None => this.future.poll(cx),
            Some(here) => {
                // Registered before the poll: a wake-up during it wakes the task again.
                here.task.register(cx.waker());
                let waker = Waker::from(Arc::clone(here));
                this.future.poll(&mut Context::from_waker(&waker))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::sync::oneshot;

    use super::*;
    use crate::hub::install_relay;

    fn connection_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn calls_answered_from_another_thread_are_woken_through_the_relay() {
        connection_thread().block_on(async {
            install_relay();
            let (answers, waits): (Vec<_>, Vec<_>) =
                (0..100).map(|_| oneshot::channel::<usize>()).unzip();
            let calls: Vec<_> = waits
                .into_iter()
                .map(|wait| {
                    let call = woken_here(async move { wait.await.unwrap() });
                    assert!(call.waker.is_some(), "a connection thread has a relay");
                    tokio::spawn(call)
                })
                .collect();
            // Every call waits before the answers come.
            tokio::task::yield_now().await;
            std::thread::spawn(move || {
                for (i, answer) in answers.into_iter().enumerate() {
                    answer.send(i).unwrap();
                }
            })
            .join()
            .unwrap();
            for (i, call) in calls.into_iter().enumerate() {
                let woken = tokio::time::timeout(std::time::Duration::from_secs(30), call);
                assert_eq!(woken.await.expect("the call was never woken").unwrap(), i);
            }
        });
    }

    #[test]
    fn a_call_woken_on_its_own_thread_or_off_the_connection_threads_runs_as_before() {
        connection_thread().block_on(async {
            // No relay: woken as usual.
            let (answer, wait) = oneshot::channel();
            let call = woken_here(async move { wait.await.unwrap() });
            assert!(call.waker.is_none());
            let call = tokio::spawn(call);
            tokio::task::yield_now().await;
            answer.send(1).unwrap();
            assert_eq!(call.await.unwrap(), 1);

            install_relay();
            let (answer, wait) = oneshot::channel();
            let call = tokio::spawn(woken_here(async move { wait.await.unwrap() }));
            tokio::task::yield_now().await;
            answer.send(2).unwrap();
            assert_eq!(call.await.unwrap(), 2);
        });
    }
}
