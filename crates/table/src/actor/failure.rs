//! [`Failure`]: why the journal last failed, shared by the actor and its release task.
//!
//! Set by whichever of them first sees a record fail; cleared by the actor once it has
//! reopened the journal and rebuilt the table from what is on disk (see
//! `Actor::recover`), so a journal that failed because its disk was full takes commands
//! again as soon as there is room.

use std::sync::{Mutex, MutexGuard, PoisonError};

#[derive(Debug, Default)]
pub(crate) struct Failure(Mutex<Option<String>>);

impl Failure {
    /// A plain `Option<String>` cannot be left half-updated: a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, Option<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the journal failed, if it has and the actor has not recovered yet.
    pub(crate) fn get(&self) -> Option<String> {
        self.lock().clone()
    }

    pub(crate) fn is_set(&self) -> bool {
        self.lock().is_some()
    }

    /// Records `reason` unless a failure is already recorded; whether this was the first.
    pub(crate) fn set(&self, reason: String) -> bool {
        let mut failed = self.lock();
        if failed.is_some() {
            return false;
        }
        *failed = Some(reason);
        true
    }

    /// Records `reason` in place of any earlier one.
    pub(crate) fn replace(&self, reason: String) {
        *self.lock() = Some(reason);
    }

    pub(crate) fn clear(&self) {
        *self.lock() = None;
    }
}
