//! The live data files of a snapshot, per bucket — what a write checks new keys against and
//! numbers its sequences above.
//!
//! Replaying every manifest of a snapshot costs O(files in the table); a server doing
//! hundreds of small commits a second starts a write per statement, nearly always from the
//! latest snapshot or one just after the last it used. So each table keeps the live files of
//! the newest snapshot a write started from, and moves it forward by applying the DELTA
//! manifests of the snapshots since (each snapshot's delta list holds exactly its changes):
//! O(change) per statement. Buckets share their file lists between versions (copy on write),
//! so a version costs one pointer per bucket plus the buckets that changed. The cached version
//! is weighed against the warehouse's cache budget like any other entry; its weight is kept up
//! to date as files come and go, so moving forward stays O(change).

use std::collections::HashMap;
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::io::heap_size::{ARC_HEADER, HeapSize, arc_size};
use crate::storage::lsm::caches::LATEST;
use crate::storage::lsm::deletions::{BucketDeletions, DeletionIndex};
use crate::storage::lsm::scan_plan::{ScanFilter, ScanPlan};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::{DataFileMeta, FileKind, ManifestEntry};

/// (partition bytes, bucket).
pub(crate) type BucketId = (Vec<u8>, i32);

/// How many snapshots a cached version may be moved forward by before a full replay is cheaper
/// to reason about (a snapshot missing in between, e.g. expired, also forces a replay).
const MAX_FORWARD: i64 = 256;

/// Live files of one snapshot, per bucket, in manifest order (oldest first).
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveFiles {
    snapshot_id: i64,
    buckets: HashMap<BucketId, Arc<Vec<Arc<DataFileMeta>>>>,
    /// The snapshot's deletion vectors.
    deletions: Arc<DeletionIndex>,
    /// Estimated bytes of `buckets` ([`file_bytes`], [`bucket_bytes`]), kept by `apply`.
    bytes: usize,
}

/// What one live file costs: its shared `DataFileMeta` and its slot in a bucket's list (twice
/// a pointer: lists grow by doubling).
fn file_bytes(f: &DataFileMeta) -> usize {
    2 * std::mem::size_of::<usize>() + arc_size(f)
}

/// What one bucket costs beyond its files: its map slot (a hash table is at most 7/8 full and
/// grows by doubling: count two), its partition bytes and its list's allocation.
fn bucket_bytes(at: &BucketId) -> usize {
    2 * (std::mem::size_of::<(BucketId, Arc<Vec<Arc<DataFileMeta>>>)>() + 1)
        + at.0.heap_size()
        + ARC_HEADER
        + std::mem::size_of::<Vec<Arc<DataFileMeta>>>()
}

impl LiveFiles {
    /// The files of a table without snapshots.
    pub(crate) fn empty() -> Self {
        Self::default()
    }

    pub(crate) fn bucket(&self, at: &BucketId) -> &[Arc<DataFileMeta>] {
        self.buckets.get(at).map_or(&[], |files| files.as_slice())
    }

    /// The snapshot these are the live files of.
    pub(crate) fn snapshot_id(&self) -> i64 {
        self.snapshot_id
    }

    /// The deletion vectors of bucket `at`.
    pub(crate) fn deletions(&self, at: &BucketId) -> Option<Arc<BucketDeletions>> {
        self.deletions.bucket(at)
    }

    /// The snapshot's whole index manifest.
    pub(crate) fn deletion_index(&self) -> &Arc<DeletionIndex> {
        &self.deletions
    }

    /// Estimated bytes of this version, its deletion index included (shared with the
    /// index-manifest cache, but kept alive by this version too).
    pub(crate) fn memory_size(&self) -> usize {
        std::mem::size_of::<Self>() + self.bytes + arc_size(self.deletions.as_ref())
    }

    /// [`Self::memory_size`]'s file part counted afresh (what `apply` keeps up to date).
    fn count_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|(at, files)| {
                bucket_bytes(at) + files.iter().map(|f| file_bytes(f)).sum::<usize>()
            })
            .sum()
    }

    /// Every bucket with files, and its file list (shared with other versions while unchanged).
    pub(crate) fn buckets(
        &self,
    ) -> impl Iterator<Item = (&BucketId, &Arc<Vec<Arc<DataFileMeta>>>)> {
        self.buckets.iter()
    }

    fn apply(&mut self, e: &ManifestEntry) {
        let at = (e.partition.clone(), e.bucket);
        match e.kind {
            FileKind::Add => {
                if !self.buckets.contains_key(&at) {
                    self.bytes += bucket_bytes(&at);
                }
                let files = Arc::make_mut(self.buckets.entry(at).or_default());
                if !files.iter().any(|f| same_file(f, &e.file)) {
                    self.bytes += file_bytes(&e.file);
                    files.push(Arc::new(e.file.clone()));
                }
            }
            FileKind::Delete => {
                if let Some(files) = self.buckets.get_mut(&at) {
                    let files = Arc::make_mut(files);
                    if let Some(i) = files.iter().position(|f| same_file(f, &e.file)) {
                        self.bytes -= file_bytes(&files.remove(i));
                    }
                    if files.is_empty() {
                        self.buckets.remove(&at);
                        self.bytes -= bucket_bytes(&at);
                    }
                }
            }
        }
    }
}

/// Paimon identifies a file within its bucket by level and name.
fn same_file(a: &DataFileMeta, b: &DataFileMeta) -> bool {
    a.level == b.level && a.file_name == b.file_name
}

impl Table {
    /// The live files of `snapshot`, from the table's cached version when one is close behind.
    pub(crate) async fn live_files(
        &self,
        snapshot: &Snapshot,
    ) -> Result<Arc<LiveFiles>, StorageError> {
        let caches = self.shared().lsm_caches();
        let cached = caches.live_files.get(LATEST);
        if let Some(c) = &cached
            && c.snapshot_id == snapshot.id
        {
            return Ok(Arc::clone(c));
        }
        let forward = match &cached {
            Some(c)
                if c.snapshot_id < snapshot.id && snapshot.id - c.snapshot_id <= MAX_FORWARD =>
            {
                self.forward(c, snapshot).await?
            }
            _ => None,
        };
        let mut live = match forward {
            Some(live) => live,
            None => self.replay(snapshot).await?,
        };
        live.deletions = self.deletion_index(snapshot).await?;
        let live = Arc::new(live);
        let bytes = ARC_HEADER + live.memory_size();
        caches
            .live_files
            .put_if(LATEST, Arc::clone(&live), bytes, |cached| {
                cached.is_none_or(|c| c.snapshot_id < live.snapshot_id)
            });
        Ok(live)
    }

    /// `from` moved forward to `to` by the delta manifests in between; `None` when a snapshot
    /// in between is gone.
    async fn forward(
        &self,
        from: &LiveFiles,
        to: &Snapshot,
    ) -> Result<Option<LiveFiles>, StorageError> {
        let mut live = from.clone();
        for id in from.snapshot_id + 1..=to.id {
            let snapshot = if id == to.id {
                to.clone()
            } else {
                match self.snapshots().get(id).await? {
                    Some(s) => s,
                    None => return Ok(None),
                }
            };
            for meta in self
                .read_manifest_list(&snapshot.delta_manifest_list)
                .await?
            {
                for e in self.read_manifest(&meta.file_name).await?.iter() {
                    live.apply(e);
                }
            }
        }
        live.snapshot_id = to.id;
        Ok(Some(live))
    }

    /// Every manifest of `snapshot` replayed.
    async fn replay(&self, snapshot: &Snapshot) -> Result<LiveFiles, StorageError> {
        let mut plan = ScanPlan::default();
        let mut live = LiveFiles {
            snapshot_id: snapshot.id,
            buckets: HashMap::new(),
            deletions: Arc::default(),
            bytes: 0,
        };
        for e in self
            .live_entries(snapshot, &ScanFilter::default(), &mut plan)
            .await?
        {
            Arc::make_mut(live.buckets.entry((e.partition, e.bucket)).or_default())
                .push(Arc::new(e.file));
        }
        live.bytes = live.count_bytes();
        Ok(live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::meta::heap_sizes::tests::entry;

    fn change(kind: FileKind, i: usize) -> ManifestEntry {
        let mut e = entry(&format!("data-{i}.parquet"), 8 + i);
        e.kind = kind;
        e.partition = vec![(i % 3) as u8; 12];
        e.bucket = (i % 4) as i32;
        e
    }

    /// Moving forward keeps the weight a recount would give, as files and buckets come and go.
    #[test]
    fn the_weight_kept_by_apply_equals_a_recount() {
        let mut live = LiveFiles::empty();
        for i in 0..50 {
            live.apply(&change(FileKind::Add, i));
        }
        assert_eq!(live.bytes, live.count_bytes());
        let full = live.bytes;
        assert!(full > 50 * std::mem::size_of::<DataFileMeta>());
        live.apply(&change(FileKind::Add, 7));
        assert_eq!(live.bytes, full, "a file added twice is there once");
        for i in (0..50).filter(|i| i % 2 == 0) {
            live.apply(&change(FileKind::Delete, i));
        }
        assert_eq!(live.bytes, live.count_bytes());
        assert!(live.bytes < full);
        live.apply(&change(FileKind::Delete, 1000));
        assert_eq!(live.bytes, live.count_bytes(), "deleting a file not there");
        for i in (0..50).filter(|i| i % 2 == 1) {
            live.apply(&change(FileKind::Delete, i));
        }
        assert_eq!((live.bytes, live.buckets.len()), (0, 0));
    }
}
