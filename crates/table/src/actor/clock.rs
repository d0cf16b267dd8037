//! The actor's clock: unix milliseconds, injectable so that tests control time.
//!
//! The actor reads the clock once per command and writes the value into the command
//! ([`crate::Command::stamp`]), so the table itself never reads a clock and a replay of the
//! journal sees the very same times.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of unix milliseconds.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Clock(now = {})", self.now_ms())
    }
}

impl Clock {
    /// Any function returning unix milliseconds.
    pub fn new(now_ms: impl Fn() -> u64 + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(now_ms))
    }

    /// The system clock (a clock before 1970 reads 0).
    pub fn system() -> Clock {
        Clock::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        })
    }

    /// `start_ms` plus the time elapsed on tokio's clock since this call: follows
    /// `tokio::time::pause`/`advance`, so the actor's timers and its clock agree in tests.
    /// Must be called inside a tokio runtime.
    pub fn tokio(start_ms: u64) -> Clock {
        let origin = tokio::time::Instant::now();
        Clock::new(move || {
            let elapsed = u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX);
            start_ms.saturating_add(elapsed)
        })
    }

    /// A clock that moves only when told, and the control to move it.
    pub fn manual(start_ms: u64) -> (Clock, ManualClock) {
        let now = Arc::new(AtomicU64::new(start_ms));
        let read = Arc::clone(&now);
        (
            Clock::new(move || read.load(Ordering::SeqCst)),
            ManualClock(now),
        )
    }

    pub fn now_ms(&self) -> u64 {
        (self.0)()
    }
}

/// Moves a [`Clock::manual`] clock.
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
