//! Copy-on-write parts of a handler world's state. The explorer clones a state for every successor and changes
//! one or two of its parts (a process's step leaves the clients and the network alone; a delivery leaves the
//! store alone), so each part is shared behind an `Arc` and copied only when a step writes to it
//! (`Arc::make_mut`). Equality, hashing and `Debug` are the content's, so the states explored, their
//! fingerprints and everything printed are what they would be without the sharing.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(Arc::new(value))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
