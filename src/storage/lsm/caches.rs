//! [`LsmCaches`]: what the LSM floor keeps per table between statements — decoded key sets and page
//! fences of data files, their Parquet footers and the decoded pages reads by key went
//! to, decoded index manifests, and the live files of the newest snapshot a write started
//! from. Data files are immutable, so entries never go stale; the live files move forward by
//! snapshot id. All of them draw on the warehouse's cache budget (`io::cache_budget`), so any
//! of them may be gone at the next use: each is rebuilt from the files on a miss.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::RecordBatch;

use crate::storage::io::cache_budget::BudgetedCache;
use crate::storage::lsm::data_file::Footer;
use crate::storage::lsm::deletions::DeletionIndex;
use crate::storage::lsm::fences::PageFences;
use crate::storage::lsm::live_files::LiveFiles;
use crate::storage::meta::table::TableShared;

/// The kinds of cache of this floor (the `kind` label of `tarn_cache_*` in `/metrics`).
pub(crate) mod cache_kinds {
    pub(crate) const KEY_SET: &str = "key_set";
    pub(crate) const INDEX_MANIFEST: &str = "index_manifest";
    pub(crate) const LIVE_FILES: &str = "live_files";
    pub(crate) const FOOTER: &str = "footer";
    pub(crate) const PAGE: &str = "page";
    pub(crate) const PAGE_FENCES: &str = "page_fences";
}

/// A table's LSM caches ([`TableShared::lsm_caches`]).
#[derive(Debug)]
pub(crate) struct LsmCaches {
    /// Key sets of data files, for duplicate-key and conflict checks.
    pub(crate) key_sets: BudgetedCache<Arc<HashSet<Vec<u8>>>>,
    /// Decoded index manifests by file name (immutable once written).
    pub(crate) deletion_indexes: BudgetedCache<Arc<DeletionIndex>>,
    /// The live files of the latest snapshot a write started from, under [`LATEST`].
    pub(crate) live_files: BudgetedCache<Arc<LiveFiles>>,
    /// Parquet footers (with page indexes) of data files, by file name.
    pub(crate) footers: BudgetedCache<Arc<Footer>>,
    /// Decoded pages of data files that reads by key went to (`key_read.rs`).
    pub(crate) pages: BudgetedCache<RecordBatch>,
    /// First keys of data files' pages, for reads by key and compaction's lookups
    /// (`fences.rs`).
    pub(crate) page_fences: BudgetedCache<Arc<PageFences>>,
}

/// The one name of [`LsmCaches::live_files`].
pub(crate) const LATEST: &str = "latest";

impl TableShared {
    /// The table's LSM caches, made on the table's cache budget on first use.
    pub(crate) fn lsm_caches(&self) -> Arc<LsmCaches> {
        self.state_with(|shared| {
            let budget = shared.cache_budget();
            LsmCaches {
                key_sets: budget.cache(cache_kinds::KEY_SET),
                deletion_indexes: budget.cache(cache_kinds::INDEX_MANIFEST),
                live_files: budget.cache(cache_kinds::LIVE_FILES),
                footers: budget.cache(cache_kinds::FOOTER),
                pages: budget.cache(cache_kinds::PAGE),
                page_fences: budget.cache(cache_kinds::PAGE_FENCES),
            }
        })
    }
}
