//! [`CacheBudget`]: one memory budget for every cache of every table of a warehouse, and
//! [`BudgetedCache`], one cache's handle on it.
//!
//! Tables cache what they decode again and again: schemas, manifest lists and manifests,
//! deletion vectors, file indexes, index manifests, the live files of the newest snapshot, key
//! sets, key positions, Parquet footers and decoded pages of data files, dynamic-bucket hash
//! indexes. Bounding each cache of
//! each table on its own bounds nothing for a server with a thousand tables, so all of them
//! share one least-recently-used order weighed in bytes ([`super::heap_size`]): the entry
//! evicted is the one used longest ago, whatever table and cache it belongs to, and the bytes
//! held never exceed the budget. An entry heavier than a quarter of the budget is not kept at
//! all (it would flush everything else); the caller still gets its value.
//!
//! Paimon never rewrites a file under the same name, so entries never go stale; they only cost
//! memory. Nothing may depend on a hit: a miss reads the file again. The budget bounds what the
//! caches hold, not what running statements hold (an evicted value a statement still uses
//! lives until the statement drops it).
//!
//! Each cache has a kind (`"manifest"`, `"key_set"`, …) given by the floor that owns it; hits,
//! misses, evictions, entries and bytes are counted per kind (atomics, read without the lock)
//! for `/metrics`.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The budget of a server that was not given one (`--cache-memory`): 512 MiB.
pub const DEFAULT_CACHE_MEMORY: usize = 512 << 20;

/// What an entry costs beyond its key and value: its slot, the hash-table slot holding it, its
/// place in the LRU order (a B-tree entry) and the key's second copy there.
const ENTRY_OVERHEAD: usize = 128;

/// One byte-weighted LRU shared by every cache of a warehouse.
#[derive(Debug)]
pub(crate) struct CacheBudget {
    limit: AtomicUsize,
    next_id: AtomicU64,
    lru: Mutex<Lru>,
    /// Counters by kind, made when the first cache of a kind is.
    kinds: Mutex<BTreeMap<&'static str, Arc<KindCounters>>>,
}

impl Default for CacheBudget {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_MEMORY)
    }
}

#[derive(Debug, Default)]
struct Lru {
    caches: HashMap<u64, Entries>,
    /// Every entry by the tick of its last use: the first is the next to go.
    order: BTreeMap<u64, (u64, String)>,
    tick: u64,
    bytes: usize,
}

/// The entries of one cache.
#[derive(Debug)]
struct Entries {
    counters: Arc<KindCounters>,
    slots: HashMap<String, Slot>,
}

struct Slot {
    value: Box<dyn Any + Send + Sync>,
    bytes: usize,
    used: u64,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("bytes", &self.bytes)
            .field("used", &self.used)
            .finish()
    }
}

/// The counters of one kind of cache.
#[derive(Debug, Default)]
struct KindCounters {
    bytes: AtomicUsize,
    entries: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

/// The figures of one kind of cache, summed over the tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub kind: &'static str,
    /// Bytes its entries hold now (estimated, see `heap_size`).
    pub bytes: u64,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    /// Entries dropped to make room (not those of dropped tables).
    pub evictions: u64,
}

impl CacheBudget {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            next_id: AtomicU64::new(1),
            lru: Mutex::default(),
            kinds: Mutex::default(),
        }
    }

    /// Bytes the caches may hold together.
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Bytes the caches hold now.
    pub(crate) fn used(&self) -> usize {
        self.lock().bytes
    }

    /// Changes the budget, evicting at once what no longer fits.
    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
        let evicted = self.lock().evict_to(limit);
        drop(evicted);
    }

    /// Whether an entry of `bytes` (its value's estimate) would be kept.
    pub(crate) fn admits(&self, bytes: usize) -> bool {
        bytes.saturating_add(ENTRY_OVERHEAD) <= self.limit() / 4
    }

    /// A new cache of `kind` on this budget.
    pub(crate) fn cache<V>(self: &Arc<Self>, kind: &'static str) -> BudgetedCache<V> {
        let counters = Arc::clone(
            self.kinds
                .lock()
                .expect("cache kinds lock")
                .entry(kind)
                .or_default(),
        );
        BudgetedCache {
            budget: Arc::clone(self),
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            counters,
            _value: PhantomData,
        }
    }

    /// The figures of every kind of cache made so far, by kind.
    pub(crate) fn stats(&self) -> Vec<CacheStats> {
        self.kinds
            .lock()
            .expect("cache kinds lock")
            .iter()
            .map(|(kind, c)| CacheStats {
                kind,
                bytes: c.bytes.load(Ordering::Relaxed) as u64,
                entries: c.entries.load(Ordering::Relaxed) as u64,
                hits: c.hits.load(Ordering::Relaxed),
                misses: c.misses.load(Ordering::Relaxed),
                evictions: c.evictions.load(Ordering::Relaxed),
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        // A panic while the lock was held leaves whole entries and sums behind (each update
        // completes before anything that could panic), so a poisoned lock is still usable.
        self.lru.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Values dropped after the lock is released (dropping a large value takes a while).
type Dropped = Vec<Box<dyn Any + Send + Sync>>;

impl Lru {
    fn take(&mut self, id: u64, key: &str) -> Option<Slot> {
        let entries = self.caches.get_mut(&id)?;
        let slot = entries.slots.remove(key)?;
        self.order.remove(&slot.used);
        self.bytes -= slot.bytes;
        entries
            .counters
            .bytes
            .fetch_sub(slot.bytes, Ordering::Relaxed);
        entries.counters.entries.fetch_sub(1, Ordering::Relaxed);
        Some(slot)
    }

    /// Evicts the least recently used entries until at most `limit` bytes are held.
    fn evict_to(&mut self, limit: usize) -> Dropped {
        let mut dropped = Vec::new();
        while self.bytes > limit {
            let Some((_, (id, key))) = self.order.pop_first() else {
                break;
            };
            let entries = self.caches.get_mut(&id).expect("ordered entry has a cache");
            let slot = entries
                .slots
                .remove(&key)
                .expect("ordered entry has a slot");
            self.bytes -= slot.bytes;
            let c = &entries.counters;
            c.bytes.fetch_sub(slot.bytes, Ordering::Relaxed);
            c.entries.fetch_sub(1, Ordering::Relaxed);
            c.evictions.fetch_add(1, Ordering::Relaxed);
            dropped.push(slot.value);
        }
        dropped
    }
}

/// One cache (of one table) on a [`CacheBudget`]: values of type `V` by name. Dropping it
/// drops its entries.
pub(crate) struct BudgetedCache<V> {
    budget: Arc<CacheBudget>,
    id: u64,
    counters: Arc<KindCounters>,
    _value: PhantomData<fn() -> V>,
}

impl<V> std::fmt::Debug for BudgetedCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetedCache")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<V> Drop for BudgetedCache<V> {
    fn drop(&mut self) {
        let mut lru = self.budget.lock();
        let Some(entries) = lru.caches.remove(&self.id) else {
            return;
        };
        let mut freed = 0;
        for slot in entries.slots.values() {
            lru.order.remove(&slot.used);
            freed += slot.bytes;
        }
        lru.bytes -= freed;
        drop(lru);
        let c = &entries.counters;
        c.bytes.fetch_sub(freed, Ordering::Relaxed);
        c.entries.fetch_sub(entries.slots.len(), Ordering::Relaxed);
    }
}

impl<V: Clone + Send + Sync + 'static> BudgetedCache<V> {
    /// The value stored under `name` (counted as a hit or a miss; a hit makes it the most
    /// recently used entry of the budget).
    pub(crate) fn get(&self, name: &str) -> Option<V> {
        let mut guard = self.budget.lock();
        let lru = &mut *guard;
        lru.tick += 1;
        let tick = lru.tick;
        let found = lru
            .caches
            .get_mut(&self.id)
            .and_then(|e| e.slots.get_mut(name))
            .map(|slot| {
                let used = std::mem::replace(&mut slot.used, tick);
                (slot.value.downcast_ref::<V>().cloned(), used)
            });
        let value = match found {
            Some((value, used)) => {
                if let Some(at) = lru.order.remove(&used) {
                    lru.order.insert(tick, at);
                }
                value
            }
            None => None,
        };
        drop(guard);
        let counter = if value.is_some() {
            &self.counters.hits
        } else {
            &self.counters.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        value
    }

    /// The value stored under `name`, neither counted nor made more recent (for looking
    /// without using).
    pub(crate) fn peek(&self, name: &str) -> Option<V> {
        self.budget
            .lock()
            .caches
            .get(&self.id)
            .and_then(|e| e.slots.get(name))
            .and_then(|slot| slot.value.downcast_ref::<V>().cloned())
    }

    /// Stores `value` under `name`, weighing `bytes` (the value's estimate, see `heap_size`),
    /// evicting the least recently used entries of the budget to make room. Returns whether it
    /// was kept: an entry heavier than a quarter of the budget is not.
    pub(crate) fn put(&self, name: &str, value: V, bytes: usize) -> bool {
        self.put_if(name, value, bytes, |_| true)
    }

    /// [`Self::put`] unless `replace` (given the value stored under `name`, if any) says no;
    /// decided under the budget's lock, so two racing puts cannot undo each other's choice.
    pub(crate) fn put_if(
        &self,
        name: &str,
        value: V,
        bytes: usize,
        replace: impl FnOnce(Option<&V>) -> bool,
    ) -> bool {
        let bytes = bytes.saturating_add(name.len() * 2 + ENTRY_OVERHEAD);
        let limit = self.budget.limit();
        let mut guard = self.budget.lock();
        let lru = &mut *guard;
        let old = lru
            .caches
            .get(&self.id)
            .and_then(|e| e.slots.get(name))
            .and_then(|slot| slot.value.downcast_ref::<V>());
        if !replace(old) {
            return false;
        }
        let mut dropped: Dropped = lru
            .take(self.id, name)
            .map(|s| s.value)
            .into_iter()
            .collect();
        if bytes > limit / 4 {
            drop(guard);
            drop(dropped);
            return false;
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.order.insert(tick, (self.id, name.to_owned()));
        lru.bytes += bytes;
        lru.caches
            .entry(self.id)
            .or_insert_with(|| Entries {
                counters: Arc::clone(&self.counters),
                slots: HashMap::new(),
            })
            .slots
            .insert(
                name.to_owned(),
                Slot {
                    value: Box::new(value),
                    bytes,
                    used: tick,
                },
            );
        self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.counters.entries.fetch_add(1, Ordering::Relaxed);
        // The new entry is the most recent and at most a quarter of the limit: it stays.
        dropped.extend(lru.evict_to(limit));
        drop(guard);
        drop(dropped);
        true
    }

    /// Forgets the value under `name`.
    pub(crate) fn remove(&self, name: &str) {
        let slot = self.budget.lock().take(self.id, name);
        drop(slot);
    }

    /// Whether a value whose estimate is `bytes` would be kept.
    pub(crate) fn admits(&self, bytes: usize) -> bool {
        self.budget.admits(bytes)
    }
}

#[cfg(test)]
#[path = "cache_budget_tests.rs"]
mod tests;
