//! A sliding window of two counters over time, in a fixed ring of buckets.
//!
//! The retry ratio and the circuit breaker both ask "how many of X and of Y in the last W ms?".
//! Exact sliding windows need a queue per client; a ring of `BUCKET_COUNT` buckets is bounded
//! and close enough (the window's edge moves in steps of `window_ms / BUCKET_COUNT`).

/// Buckets per window: the edge of the window is accurate to a tenth of its length.
pub const BUCKET_COUNT: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Bucket {
    /// Which slice of time (`now_ms / bucket_ms`) the counts belong to.
    epoch: u64,
    total: u32,
    marked: u32,
}

/// Counts of events (`total`) and of a marked subset (`marked`: retries, failures) over the
/// last `window_ms`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowCounts {
    bucket_ms: f64,
    buckets: [Bucket; BUCKET_COUNT],
}

impl WindowCounts {
    /// `window_ms` must be finite and positive (checked by the callers' constructors).
    pub fn new(window_ms: f64) -> Self {
        debug_assert!(window_ms.is_finite() && window_ms > 0.0);
        WindowCounts {
            bucket_ms: window_ms / BUCKET_COUNT as f64,
            buckets: [Bucket::default(); BUCKET_COUNT],
        }
    }

    fn epoch(&self, now_ms: f64) -> u64 {
        // `as` saturates: negative times land in epoch 0.
        (now_ms / self.bucket_ms) as u64
    }

    /// Adds one event at `now_ms`, marked or not. Times must not go backwards by more than a
    /// bucket (events of a simulation arrive in time order).
    pub fn add(&mut self, now_ms: f64, marked: bool) {
        let epoch = self.epoch(now_ms);
        let bucket = &mut self.buckets[(epoch % BUCKET_COUNT as u64) as usize];
        if bucket.epoch != epoch {
            *bucket = Bucket {
                epoch,
                total: 0,
                marked: 0,
            };
        }
        bucket.total = bucket.total.saturating_add(1);
        bucket.marked = bucket.marked.saturating_add(u32::from(marked));
    }

    /// `(total, marked)` over the buckets that still lie in the window ending at `now_ms`.
    pub fn counts(&self, now_ms: f64) -> (u32, u32) {
        let epoch_now = self.epoch(now_ms);
        let oldest = epoch_now.saturating_sub(BUCKET_COUNT as u64 - 1);
        self.buckets
            .iter()
            .filter(|b| (b.total > 0) && b.epoch >= oldest && b.epoch <= epoch_now)
            .fold((0, 0), |(total, marked), b| {
                (total + b.total, marked + b.marked)
            })
    }

    /// Forgets everything (a breaker that closes starts a fresh window).
    pub fn clear(&mut self) {
        self.buckets = [Bucket::default(); BUCKET_COUNT];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_fall_out_of_the_window() {
        let mut window = WindowCounts::new(1000.0);
        window.add(0.0, true);
        window.add(50.0, false);
        window.add(950.0, false);
        assert_eq!(window.counts(950.0), (3, 1));
        // At 1000 ms the first bucket (0..100 ms) has left the window.
        assert_eq!(window.counts(1000.0), (1, 0));
        assert_eq!(window.counts(5000.0), (0, 0));
        window.add(5000.0, true);
        assert_eq!(window.counts(5000.0), (1, 1));
        window.clear();
        assert_eq!(window.counts(5000.0), (0, 0));
    }

    #[test]
    fn a_reused_slot_is_reset() {
        let mut window = WindowCounts::new(100.0);
        window.add(5.0, true);
        // Same slot (epoch 10 % 10 == 0), a later epoch: the old counts must not leak in.
        window.add(105.0, false);
        assert_eq!(window.counts(105.0), (1, 0));
    }
}
