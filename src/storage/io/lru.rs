//! A small weighted least-recently-used map for immutable metadata a table reads again and
//! again (decoded manifests, key sets of data files). Paimon never rewrites a file under the
//! same name, so entries never go stale; they only cost memory, which the weight bounds.

use std::collections::HashMap;
use std::sync::Mutex;

/// Values by file name, bounded by the sum of their weights (least recently used go first;
/// the newest entry always stays, however heavy).
#[derive(Debug)]
pub(crate) struct WeightedLru<V> {
    inner: Mutex<Inner<V>>,
    limit: usize,
}

#[derive(Debug)]
struct Inner<V> {
    map: HashMap<String, Slot<V>>,
    weight: usize,
    tick: u64,
}

#[derive(Debug)]
struct Slot<V> {
    value: V,
    weight: usize,
    used: u64,
}

impl<V: Clone> WeightedLru<V> {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                weight: 0,
                tick: 0,
            }),
            limit,
        }
    }

    /// The weight the cache holds at most.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn get(&self, name: &str) -> Option<V> {
        let mut inner = self.inner.lock().expect("lru lock");
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.get_mut(name).map(|slot| {
            slot.used = tick;
            slot.value.clone()
        })
    }

    pub(crate) fn put(&self, name: &str, value: V, weight: usize) {
        let mut inner = self.inner.lock().expect("lru lock");
        inner.tick += 1;
        let used = inner.tick;
        inner.weight += weight;
        if let Some(old) = inner.map.insert(
            name.to_owned(),
            Slot {
                value,
                weight,
                used,
            },
        ) {
            inner.weight -= old.weight;
        }
        if inner.weight <= self.limit {
            return;
        }
        // Evict the least recently used until a quarter of the limit is free, so that a
        // full cache does not scan its map on every insert.
        let target = self.limit - self.limit / 4;
        let mut by_age: Vec<(u64, String)> = inner
            .map
            .iter()
            .filter(|(k, _)| k.as_str() != name)
            .map(|(k, s)| (s.used, k.clone()))
            .collect();
        by_age.sort_unstable();
        for (_, k) in by_age {
            if inner.weight <= target {
                break;
            }
            if let Some(old) = inner.map.remove(&k) {
                inner.weight -= old.weight;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_first_and_keeps_the_newest() {
        let lru = WeightedLru::new(10);
        lru.put("a", 1, 4);
        lru.put("b", 2, 4);
        assert_eq!(lru.get("a"), Some(1)); // a is now more recent than b
        lru.put("c", 3, 4); // 12 > 10: b goes (down to ≤ 8)
        assert_eq!(lru.get("b"), None);
        assert_eq!(lru.get("a"), Some(1));
        assert_eq!(lru.get("c"), Some(3));
        lru.put("huge", 4, 100); // heavier than the limit: everything else goes, it stays
        assert_eq!(lru.get("huge"), Some(4));
        assert_eq!(lru.get("a"), None);
        assert_eq!(lru.get("c"), None);
    }

    #[test]
    fn replacing_an_entry_replaces_its_weight() {
        let lru = WeightedLru::new(10);
        lru.put("a", 1, 8);
        lru.put("a", 2, 2);
        lru.put("b", 3, 8);
        assert_eq!(lru.get("a"), Some(2));
        assert_eq!(lru.get("b"), Some(3));
    }
}
