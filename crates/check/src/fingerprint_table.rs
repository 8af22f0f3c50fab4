//! A set of 64-bit fingerprints in 8 bytes a slot and nothing else: ordered linear probing (Amble and Knuth),
//! 0 marks an empty slot. A general-purpose hash set (hashbrown) spends a control byte a slot and doubles when
//! it fills, so between 7/16 and 7/8 full it holds 10 to 21 bytes a state; this table grows by a quarter when it
//! is 85% full, so it stays between 68% and 85% full: 9.4 to 11.8 bytes a state, whatever the state count.
//!
//! The home slot is the fingerprint's low 32 bits scaled to the capacity (`low * capacity >> 32`), so homes
//! follow the order of those bits, and the table keeps its keys sorted by them (ties by the high bits). Then
//! a lookup stops at the first key greater than the one sought: a miss costs as little as a hit (about 3.8
//! probes at 85%, most of them in one cache line) where plain linear probing would scan the rest of the
//! cluster. An insert shifts the rest of its cluster one slot on. Growing streams the sorted keys into the new
//! table in one pass. There is no wrap-around: the last homes spill into a few spare slots past the capacity.
//! Fingerprints are hashes (XXH3/XXH64), so the low bits are uniform.

/// An empty slot.
const EMPTY: u64 = 0;
/// Fingerprint 0 is stored as this value (so the two merge: one chance in 2^64 per state, far below the chance
/// of any collision among the states of a search).
const ZERO_STAND_IN: u64 = 0x9e37_79b9_7f4a_7c15;
/// The first capacity, in slots.
const CAPACITY_MIN: usize = 64;
/// Spare slots past the capacity for the clusters that reach its end; more are added when they fill.
const SPARE_SLOTS: usize = 64;
/// Grow when more than 17/20 (85%) of the capacity is full.
const FULL_NUMERATOR: usize = 17;
const FULL_DENOMINATOR: usize = 20;

#[derive(Default)]
pub struct FingerprintTable {
    /// `capacity` home slots and the spare ones after them.
    slots: Vec<u64>,
    capacity: usize,
    len: usize,
}

#[inline]
fn stored(fingerprint: u64) -> u64 {
    if fingerprint == EMPTY {
        ZERO_STAND_IN
    } else {
        fingerprint
    }
}

/// The order the table keeps: by the low 32 bits (so by home slot), then by the high ones.
#[inline]
fn order(key: u64) -> u64 {
    key.rotate_left(32)
}

/// The home slot of `key` in a table of `capacity` home slots (`capacity` < 2^32).
#[inline]
fn home(key: u64, capacity: usize) -> usize {
    (((key & 0xffff_ffff) * capacity as u64) >> 32) as usize
}

/// Where `key` is, or the slot it belongs in.
enum Probe {
    Found,
    Belongs(usize),
}

impl FingerprintTable {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated (8 bytes each).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The slot a lookup or insert of `fingerprint` reads first (read ahead of it, so that cache misses
    /// overlap).
    #[inline]
    pub fn first_slot(&self, fingerprint: u64) -> u64 {
        let key = stored(fingerprint);
        self.slots
            .get(home(key, self.capacity))
            .copied()
            .unwrap_or(EMPTY)
    }

    #[inline]
    fn probe(&self, key: u64) -> Probe {
        let wanted = order(key);
        let mut index = home(key, self.capacity);
        while let Some(&slot) = self.slots.get(index) {
            if slot == key {
                return Probe::Found;
            }
            if slot == EMPTY || order(slot) > wanted {
                break;
            }
            index += 1;
        }
        Probe::Belongs(index)
    }

    #[inline]
    pub fn contains(&self, fingerprint: u64) -> bool {
        matches!(self.probe(stored(fingerprint)), Probe::Found)
    }

    /// Insert; whether it was new.
    #[inline]
    pub fn insert(&mut self, fingerprint: u64) -> bool {
        if (self.len + 1) * FULL_DENOMINATOR > self.capacity * FULL_NUMERATOR {
            self.grow();
        }
        let key = stored(fingerprint);
        let at = match self.probe(key) {
            Probe::Found => return false,
            Probe::Belongs(at) => at,
        };
        // The cluster's rest moves one slot on, into its first empty slot.
        let empty = match self.slots[at.min(self.slots.len())..]
            .iter()
            .position(|slot| *slot == EMPTY)
        {
            Some(offset) => at + offset,
            None => {
                let end = self.slots.len();
                self.slots.resize(end + SPARE_SLOTS, EMPTY);
                end
            }
        };
        // Clusters are short: a loop beats a call to memmove.
        for index in (at..empty).rev() {
            self.slots[index + 1] = self.slots[index];
        }
        self.slots[at] = key;
        self.len += 1;
        true
    }

    /// A quarter more home slots; the keys, already in order, streamed into them.
    #[cold]
    fn grow(&mut self) {
        let capacity = (self.capacity + self.capacity / 4).max(CAPACITY_MIN);
        assert!(
            capacity < 1 << 32,
            "a fingerprint table of 2^32 slots (there are 256 of them)"
        );
        let mut slots = vec![EMPTY; capacity + SPARE_SLOTS];
        let mut next = 0;
        for key in self.slots.iter().copied().filter(|key| *key != EMPTY) {
            let at = home(key, capacity).max(next);
            if at >= slots.len() {
                slots.resize(at + SPARE_SLOTS, EMPTY);
            }
            slots[at] = key;
            next = at + 1;
        }
        self.slots = slots;
        self.capacity = capacity;
    }
}

#[cfg(test)]
mod tests {
    use super::FingerprintTable;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::collections::BTreeSet;

    #[test]
    fn agrees_with_a_btree_set_through_many_growths() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut table = FingerprintTable::default();
        let mut reference = BTreeSet::new();
        // Few distinct values, so many inserts are repeats; 0, the largest value, and runs that share their low
        // 32 bits (one home, ordered by the high bits) among them.
        let values: Vec<u64> = (0..20_000)
            .map(|_| rng.random::<u64>())
            .chain([0, 1, u64::MAX])
            .chain((1..64).map(|high| (high << 32) | 0xdead_beef))
            .chain((1..64).map(|high| (high << 32) | 0xffff_ffff))
            .collect();
        for _ in 0..60_000 {
            let value = values[rng.random_range(0..values.len())];
            assert_eq!(table.insert(value), reference.insert(value), "{value}");
        }
        assert_eq!(table.len(), reference.len());
        for value in &values {
            assert_eq!(table.contains(*value), reference.contains(value));
        }
        assert!(!table.contains(12345));
    }

    #[test]
    fn stays_between_68_and_85_percent_full_once_grown() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut table = FingerprintTable::default();
        for count in 1..=200_000usize {
            table.insert(rng.random());
            let load = count as f64 / table.slot_count() as f64;
            assert!(load <= 0.85, "{count}: {load}");
            if count > 10_000 {
                // Spare slots past the capacity count too: a few dozen.
                assert!(load >= 0.67, "{count}: {load}");
            }
        }
    }
}
