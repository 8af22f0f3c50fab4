//! State fingerprints for the visited set: XXH64 (a published, fixed algorithm, seed 0) over the state's `Hash`.
//! Two distinct states colliding on 64 bits would merge them; at 10^8 states the chance is about 3 in 10^4.

use std::hash::{BuildHasherDefault, Hash, Hasher};
use twox_hash::XxHash64;

pub fn state_fingerprint<S: Hash>(state: &S) -> u64 {
    let mut hasher = XxHash64::with_seed(0);
    state.hash(&mut hasher);
    hasher.finish()
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
