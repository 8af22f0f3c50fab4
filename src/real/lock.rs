//! The lock the in-memory store is generic over, so that std, loom and shuttle run the same store code.
//!
//! loom and shuttle are dev-dependencies, so their implementations live in the tests (`tests/common`), as newtypes
//! over `loom::sync::Mutex` and `shuttle::sync::Mutex`.

/// A mutual-exclusion lock around a `T`. Each call of [`Lock::with`] is one critical section; the store's atomicity
/// is exactly what it puts inside one call.
pub trait Lock<T>: Send + Sync {
    fn new(value: T) -> Self;
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

/// [`Lock`] on `std::sync::Mutex`. A poisoned lock (a handler panicked inside a critical section) is still
/// usable: every critical section leaves the tables consistent before it can panic.
#[derive(Debug, Default)]
pub struct StdLock<T>(std::sync::Mutex<T>);

impl<T: Send> Lock<T> for StdLock<T> {
    fn new(value: T) -> Self {
        StdLock(std::sync::Mutex::new(value))
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }
}
