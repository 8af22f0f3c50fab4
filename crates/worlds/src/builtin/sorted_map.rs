//! A small ordered map kept inline: a sorted vector of (key, value) pairs that spills to the heap only past `N`
//! entries. States hold a handful of messages and records; a `BTreeMap` per field made every state clone a
//! series of allocations, which dominated exploration time. Iteration is in key order, like a `BTreeMap`.

use smallvec::SmallVec;

#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SortedMap<K, V, const N: usize> {
    entries: SmallVec<[(K, V); N]>,
}

/// A plain copy of the inline entries (the derived `Clone` clones element by element, and states are cloned
/// once per explored transition).
impl<K: Copy, V: Copy, const N: usize> Clone for SortedMap<K, V, N> {
    #[inline]
    fn clone(&self) -> Self {
        SortedMap {
            entries: SmallVec::from_slice(&self.entries),
        }
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        copy_items(&mut self.entries, &source.entries);
    }
}

impl<K: Ord + Copy, V, const N: usize> Default for SortedMap<K, V, N> {
    fn default() -> Self {
        SortedMap {
            entries: SmallVec::new(),
        }
    }
}

/// Make `target` a copy of `source` without allocating (unless it must spill) and without a `memcpy` call: the
/// vectors hold a handful of items, and `extend_from_slice` on them cost more in call overhead than in copying.
#[inline]
pub(super) fn copy_items<A: smallvec::Array>(target: &mut SmallVec<A>, source: &[A::Item])
where
    A::Item: Copy,
{
    if target.len() == source.len() {
        for (to, from) in target.iter_mut().zip(source) {
            *to = *from;
        }
    } else {
        target.clear();
        target.extend(source.iter().copied());
    }
}

impl<K: Ord + Copy, V, const N: usize> SortedMap<K, V, N> {
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(probe, _)| probe.cmp(key))
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.position(key).ok().map(|index| &self.entries[index].1)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match self.position(key) {
            Ok(index) => Some(&mut self.entries[index].1),
            Err(_) => None,
        }
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.position(key).is_ok()
    }

    /// Insert or replace; returns the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Ok(index) => Some(std::mem::replace(&mut self.entries[index].1, value)),
            Err(index) => {
                self.entries.insert(index, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        match self.position(key) {
            Ok(index) => Some(self.entries.remove(index).1),
            Err(_) => None,
        }
    }

    /// The value for `key`, inserting `default` first when absent.
    pub fn get_or_insert(&mut self, key: K, default: V) -> &mut V {
        let index = match self.position(&key) {
            Ok(index) => index,
            Err(index) => {
                self.entries.insert(index, (key, default));
                index
            }
        };
        &mut self.entries[index].1
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Append an entry whose key is greater than every key present (rebuilding a map in order).
    #[inline]
    pub fn push_last(&mut self, key: K, value: V) {
        debug_assert!(self.entries.last().is_none_or(|(last, _)| *last < key));
        self.entries.push((key, value));
    }

    /// Rewrite every entry in place with `rewrite`, then restore the key order. The rewrite must keep keys
    /// distinct (a relabelling does: it is a bijection).
    pub fn rewrite(&mut self, mut rewrite: impl FnMut(&mut K, &mut V)) {
        for (key, value) in self.entries.iter_mut() {
            rewrite(key, value);
        }
        self.entries.sort_unstable_by_key(|entry| entry.0);
        debug_assert!(self.entries.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain(|(key, value)| keep(key, value));
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(key, _)| key)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, value)| value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(key, value)| (key, value))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a, K: Ord + Copy, V, const N: usize> IntoIterator for &'a SortedMap<K, V, N> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(key, value)| (key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_an_ordered_map() {
        let mut map: SortedMap<u8, u8, 2> = SortedMap::new();
        assert_eq!(map.insert(5, 1), None);
        map.insert(1, 2);
        map.insert(3, 3);
        assert_eq!(map.insert(3, 4), Some(3));
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), vec![1, 3, 5]);
        *map.get_or_insert(2, 0) += 7;
        assert_eq!(map.get(&2), Some(&7));
        assert_eq!(map.remove(&1), Some(2));
        map.retain(|key, _| *key != 5);
        assert_eq!(
            map.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
            vec![(2, 7), (3, 4)]
        );
        assert!(map.contains_key(&3) && !map.contains_key(&5));
    }
}
