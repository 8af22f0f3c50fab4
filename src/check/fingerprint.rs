//! State fingerprints for the visited set: XXH3-64 (a published, fixed algorithm, seed 0) of the state's
//! injective byte packing (`Model::pack`), or XXH64 (seed 0) of its `Hash` for models that do not pack. Two
//! distinct states colliding on 64 bits would merge them; at 10^8 states the chance is about 3 in 10^4.

use std::hash::{BuildHasherDefault, Hash, Hasher};
use twox_hash::{XxHash3_64, XxHash64};

/// The fingerprint of a state that is not packed: its `Hash`, streamed through XXH64 (which allocates nothing).
pub fn hashed_fingerprint<T: Hash>(state: &T) -> u64 {
    let mut hasher = XxHash64::with_seed(0);
    state.hash(&mut hasher);
    hasher.finish()
}

/// The fingerprint of a state from its packing.
#[inline]
pub fn packed_fingerprint(bytes: &[u8]) -> u64 {
    XxHash3_64::oneshot(bytes)
}

/// The fingerprint of `state` as the visited set knows it (`scratch` holds the packing).
pub(crate) fn state_fingerprint<M: super::model::Model>(
    model: &M,
    state: &M::State,
    scratch: &mut Vec<u8>,
) -> u64 {
    if M::PACKED {
        scratch.clear();
        model.pack(state, scratch);
        packed_fingerprint(scratch)
    } else {
        hashed_fingerprint(state)
    }
}

/// The fingerprints are already hashes: the set uses them as they are.
#[derive(Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 << 8) | u64::from(*byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

pub type FingerprintSet = std::collections::HashSet<u64, BuildHasherDefault<PassThrough>>;
