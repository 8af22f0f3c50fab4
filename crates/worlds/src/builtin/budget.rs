//! Fault budgets left along a path: how many more of each fault the explorer may inject. Spent only through
//! `spend`, which refuses to spend what is not there: an action offered without its budget is a bug of
//! `enabled`, and a `u8` decrement would wrap silently in release builds (255 more faults) rather than fail.
//!
//! A plain array inside, so a state's hash and packing are the array's (the same as before this type).

/// What is left of `N` fault budgets, each indexed by its kind (`Fault` for the built-in worlds).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Budgets<const N: usize>([u8; N]);

impl<const N: usize> Budgets<N> {
    /// Budgets of `left[i]` faults of kind `i`.
    pub const fn new(left: [u8; N]) -> Self {
        Budgets(left)
    }

    /// How many faults of kind `index` are left.
    #[inline]
    pub fn left(&self, index: usize) -> u8 {
        self.0[index]
    }

    /// Whether a fault of kind `index` may still happen.
    #[inline]
    pub fn has(&self, index: usize) -> bool {
        self.0[index] > 0
    }

    /// One fault of kind `index` happened. Panics when none was left.
    #[inline]
    #[track_caller]
    pub fn spend(&mut self, index: usize) {
        let left = &mut self.0[index];
        assert!(*left > 0, "fault budget {index} spent with none left");
        *left -= 1;
    }

    /// What is left of every kind, in index order.
    #[inline]
    pub fn to_array(self) -> [u8; N] {
        self.0
    }
}

/// As the array it holds (what traces and test failures printed before).
impl<const N: usize> std::fmt::Debug for Budgets<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Budgets<N> {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::Budgets;
    use std::hash::{DefaultHasher, Hash, Hasher};

    #[test]
    fn spend_takes_one_of_its_own_kind() {
        let mut budgets = Budgets::new([2, 1]);
        budgets.spend(0);
        assert_eq!(budgets, [1, 1]);
        assert_eq!((budgets.left(0), budgets.has(1)), (1, true));
        budgets.spend(1);
        assert!(!budgets.has(1));
    }

    /// The twin: spending a budget that is used up is caught, not wrapped to 255.
    #[test]
    #[should_panic(expected = "fault budget 1 spent with none left")]
    fn spending_an_empty_budget_panics() {
        let mut budgets = Budgets::new([2, 0]);
        budgets.spend(1);
    }

    /// States hash their budgets as the bare array did, so fingerprints of hashed states are unchanged.
    #[test]
    fn hashes_as_its_array() {
        let hash = |value: &dyn Fn(&mut DefaultHasher)| {
            let mut hasher = DefaultHasher::new();
            value(&mut hasher);
            hasher.finish()
        };
        let array = [3u8, 0, 7];
        assert_eq!(
            hash(&|h| Budgets::new(array).hash(h)),
            hash(&|h| array.hash(h))
        );
        assert_ne!(
            hash(&|h| Budgets::new([3u8, 0, 6]).hash(h)),
            hash(&|h| array.hash(h))
        );
    }
}
