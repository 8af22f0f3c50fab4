//! State fingerprints for the visited set: XXH3-64 (a published, fixed algorithm, seed 0) of the state's
//! injective byte packing (`Model::pack`), or XXH64 (seed 0) of its `Hash` for models that do not pack. Two
//! distinct states colliding on 64 bits would merge them; at 10^8 states the chance is about 3 in 10^4.

use std::hash::{Hash, Hasher};
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
