//! Copy-on-write parts of a handler world's state. The explorer clones a state for every successor and changes
//! one or two of its parts (a process's step leaves the clients and the network alone; a delivery leaves the
//! store alone), so each part is shared behind an `Arc` and copied only when a step writes to it
//! (`Arc::make_mut`). A part also keeps the hash of its content once computed, so a successor that shares the
//! store with its parent does not hash the store's strings again. Equality and `Debug` are the content's, and
//! the hash is a function of the content alone (XXH64 with seed 0), so states and output are the same whatever
//! is shared and whichever thread hashed a part first.

use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};
use twox_hash::XxHash64;

#[derive(Default)]
pub struct Shared<T>(Arc<Part<T>>);

#[derive(Default)]
struct Part<T> {
    value: T,
    /// The content's hash, computed on first use, forgotten on every write.
    hash: OnceLock<u64>,
}

impl<T: Clone> Clone for Part<T> {
    fn clone(&self) -> Part<T> {
        Part {
            value: self.value.clone(),
            hash: self.hash.clone(),
        }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(Arc::new(Part {
            value,
            hash: OnceLock::new(),
        }))
    }
}

impl<T: Hash> Shared<T> {
    fn content_hash(&self) -> u64 {
        *self.0.hash.get_or_init(|| {
            let mut hasher = XxHash64::with_seed(0);
            self.0.value.hash(&mut hasher);
            hasher.finish()
        })
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        let part = Arc::make_mut(&mut self.0);
        part.hash.take();
        &mut part.value
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.content_hash());
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;
    use std::hash::{Hash, Hasher};
    use twox_hash::XxHash64;

    fn hash_of(value: &impl Hash) -> u64 {
        let mut hasher = XxHash64::with_seed(0);
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn a_write_forgets_the_hash_and_equal_contents_hash_alike() {
        let mut shared = Shared::new(vec![1, 2]);
        let copy = shared.clone();
        let before = hash_of(&shared);
        shared.push(3);
        assert_ne!(hash_of(&shared), before, "the write was seen");
        assert_eq!(hash_of(&copy), before, "the copy kept its content");
        let rebuilt = Shared::new(vec![1, 2, 3]);
        assert_eq!(shared, rebuilt);
        assert_eq!(hash_of(&shared), hash_of(&rebuilt));
    }
}
