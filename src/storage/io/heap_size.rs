//! [`HeapSize`]: how many bytes a value owns on the heap, so that cache entries are weighed in
//! bytes ([`super::cache_budget`]) rather than in entries, which say nothing about memory (a
//! manifest entry with wide statistics is ten times one without).
//!
//! Estimates, not measurements: allocations are counted by capacity, hash tables by their
//! slots (hashbrown keeps one control byte per slot and at most 7/8 of its slots full), and the
//! allocator's own rounding is ignored. They err on the high side where a layout is unknown,
//! so the budget stays a bound.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::mem::size_of;

/// Bytes a value owns beyond its own `size_of` (what it keeps alive on the heap).
pub(crate) trait HeapSize {
    fn heap_size(&self) -> usize;
}

/// The whole size of `value`: itself plus what it owns.
pub(crate) fn total_size<T: HeapSize>(value: &T) -> usize {
    size_of::<T>() + value.heap_size()
}

/// Per-allocation overhead of an `Arc` (its strong and weak counts).
pub(crate) const ARC_HEADER: usize = 2 * size_of::<usize>();

/// The whole size of a value kept behind an `Arc` (as caches keep their values).
pub(crate) fn arc_size<T: HeapSize>(value: &T) -> usize {
    ARC_HEADER + total_size(value)
}

macro_rules! no_heap {
    ($($t:ty),*) => {
        $(impl HeapSize for $t {
            fn heap_size(&self) -> usize {
                0
            }
        })*
    };
}

no_heap!(bool, u8, i8, u16, i16, u32, i32, u64, i64, usize, f32, f64);

impl HeapSize for String {
    fn heap_size(&self) -> usize {
        self.capacity()
    }
}

impl<T: HeapSize> HeapSize for Option<T> {
    fn heap_size(&self) -> usize {
        self.as_ref().map_or(0, HeapSize::heap_size)
    }
}

impl<T: HeapSize> HeapSize for Box<T> {
    fn heap_size(&self) -> usize {
        total_size(self.as_ref())
    }
}

impl<T: HeapSize> HeapSize for Vec<T> {
    fn heap_size(&self) -> usize {
        self.capacity() * size_of::<T>() + self.iter().map(HeapSize::heap_size).sum::<usize>()
    }
}

impl<A: HeapSize, B: HeapSize> HeapSize for (A, B) {
    fn heap_size(&self) -> usize {
        self.0.heap_size() + self.1.heap_size()
    }
}

/// Slots of a hash table holding `capacity` (hashbrown: a power of two, at most 7/8 full).
fn hash_slots(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        (capacity * 8 / 7).next_power_of_two()
    }
}

/// Bytes of the slots of a hash table with room for `capacity` values of `value` bytes.
pub(crate) fn hash_table_size(capacity: usize, value: usize) -> usize {
    hash_slots(capacity) * (value + 1)
}

impl<K: HeapSize, V: HeapSize, S> HeapSize for HashMap<K, V, S> {
    fn heap_size(&self) -> usize {
        hash_table_size(self.capacity(), size_of::<(K, V)>())
            + self
                .iter()
                .map(|(k, v)| k.heap_size() + v.heap_size())
                .sum::<usize>()
    }
}

impl<T: HeapSize, S> HeapSize for HashSet<T, S> {
    fn heap_size(&self) -> usize {
        hash_table_size(self.capacity(), size_of::<T>())
            + self.iter().map(HeapSize::heap_size).sum::<usize>()
    }
}

impl<K: HeapSize, V: HeapSize> HeapSize for BTreeMap<K, V> {
    fn heap_size(&self) -> usize {
        // B-tree leaves hold up to 11 pairs and are about two thirds full: count 3/2 per pair
        // plus a parent pointer and lengths per node.
        self.len() * (size_of::<(K, V)>() * 3 / 2 + 8)
            + self
                .iter()
                .map(|(k, v)| k.heap_size() + v.heap_size())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_capacity_and_what_elements_own() {
        let mut s = String::with_capacity(100);
        s.push('x');
        assert_eq!(s.heap_size(), 100);
        let v: Vec<String> = vec!["abc".to_owned(), String::with_capacity(10)];
        assert_eq!(
            v.heap_size(),
            v.capacity() * size_of::<String>() + 3 + 10,
            "the vector's slots plus each string's bytes"
        );
        assert_eq!(Some(vec![1u8; 7]).heap_size(), 7);
        assert_eq!(None::<Vec<u8>>.heap_size(), 0);
        assert_eq!(total_size(&5i64), 8);
    }

    #[test]
    fn hash_tables_count_their_slots() {
        let mut keys: HashSet<Vec<u8>> = HashSet::new();
        for i in 0..1000u32 {
            keys.insert(i.to_le_bytes().to_vec());
        }
        let slots = hash_slots(keys.capacity());
        assert!(slots >= 1000, "{slots}");
        assert_eq!(
            keys.heap_size(),
            slots * (size_of::<Vec<u8>>() + 1) + 1000 * 4
        );
        let map: HashMap<Vec<u8>, u32> = keys.into_iter().map(|k| (k, 1)).collect();
        assert!(map.heap_size() > 1000 * (size_of::<Vec<u8>>() + 4 + 4));
        assert_eq!(HashMap::<u64, u64>::new().heap_size(), 0);
    }
}
