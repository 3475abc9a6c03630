//! [`LsmCaches`]: what the LSM floor keeps per table between statements — decoded key sets and
//! key positions of data files, decoded index manifests, and the live files of the newest
//! snapshot a write started from. Data files are immutable, so entries never go stale; the
//! live files move forward by snapshot id.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::storage::io::lru::WeightedLru;
use crate::storage::lsm::deletions::DeletionIndex;
use crate::storage::lsm::live_files::LiveFiles;
use crate::storage::lsm::lookup::KeyPositions;

/// How many keys of data files a table keeps in memory for duplicate-key checks (about
/// 64 bytes each); the same bound holds for key positions.
const KEY_SET_CACHE_KEYS: usize = 1_000_000;
/// Index manifest entries kept decoded.
const INDEX_MANIFEST_CACHE_ENTRIES: usize = 100_000;

/// A table's LSM caches ([`Table::state`](crate::storage::meta::table::Table::state)).
#[derive(Debug)]
pub(crate) struct LsmCaches {
    /// Key sets of data files, for duplicate-key and conflict checks (weight: keys).
    pub(crate) key_sets: WeightedLru<Arc<HashSet<Vec<u8>>>>,
    /// Key positions of data files, for compaction's lookups (weight: keys).
    pub(crate) key_positions: WeightedLru<Arc<KeyPositions>>,
    /// Decoded index manifests by file name (immutable once written).
    pub(crate) deletion_indexes: WeightedLru<Arc<DeletionIndex>>,
    /// The live files of the latest snapshot a write started from.
    pub(crate) live_files: Mutex<Option<Arc<LiveFiles>>>,
}

impl Default for LsmCaches {
    fn default() -> Self {
        Self {
            key_sets: WeightedLru::new(KEY_SET_CACHE_KEYS),
            key_positions: WeightedLru::new(KEY_SET_CACHE_KEYS),
            deletion_indexes: WeightedLru::new(INDEX_MANIFEST_CACHE_ENTRIES),
            live_files: Mutex::default(),
        }
    }
}
