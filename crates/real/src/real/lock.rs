//! The lock the in-memory store is generic over, so that std, loom and shuttle run the same store code.
//!
//! loom and shuttle are dev-dependencies, so their implementations live in the tests (`tests/real/real_loom.rs`,
//! `tests/real/real_shuttle.rs`), as newtypes over their `Mutex` and `Condvar`.

/// A mutual-exclusion lock around a `T` that can also wait for a condition on it. Each call of [`Lock::with`] or
/// [`Lock::with_when`] is one critical section; the store's atomicity is exactly what it puts inside one call.
/// Waiting blocks on a condition variable rather than spinning, so loom and shuttle see a blocked thread (a
/// spinning one would make loom's search unbounded).
pub trait Lock<T>: Send + Sync {
    fn new(value: T) -> Self;
    /// Run `f` in a critical section, then wake the threads waiting in `with_when`.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
    /// Wait until `ready` holds, then run `f` in the same critical section (and wake the waiters).
    fn with_when<R>(&self, ready: impl Fn(&T) -> bool, f: impl FnOnce(&mut T) -> R) -> R;
}

/// [`Lock`] on `std::sync::Mutex` and `Condvar`. A poisoned lock (a handler panicked inside a critical section)
/// is still usable: every critical section leaves the tables consistent before it can panic.
#[derive(Debug, Default)]
pub struct StdLock<T> {
    value: std::sync::Mutex<T>,
    changed: std::sync::Condvar,
}

impl<T: Send> Lock<T> for StdLock<T> {
    fn new(value: T) -> Self {
        StdLock {
            value: std::sync::Mutex::new(value),
            changed: std::sync::Condvar::new(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.with_when(|_| true, f)
    }

    fn with_when<R>(&self, ready: impl Fn(&T) -> bool, f: impl FnOnce(&mut T) -> R) -> R {
        let guard = self
            .value
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut guard = self
            .changed
            .wait_while(guard, |value| !ready(value))
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = f(&mut guard);
        drop(guard);
        self.changed.notify_all();
        result
    }
}
