//! Paimon's dynamic bucket mode (`bucket = -1` on a primary-key table): which bucket a key goes
//! to, and the `HASH` index files that remember it.
//!
//! With fixed buckets a key's bucket is a function of the key. With dynamic buckets it is a
//! decision: a new key goes to the lowest bucket of its partition holding fewer than
//! `dynamic-bucket.target-row-num` keys, or opens a new bucket, and every later write of that key
//! (by any engine) must find the same bucket — readers merge a key's versions only within one
//! bucket, so a key in two buckets is two live rows. Paimon records the decision per
//! (partition, bucket) in a `HASH` index file listed by the snapshot's index manifest: the key
//! hashes (Java `BinaryRow.hashCode()` of the trimmed primary key, the same Murmur3 as
//! [`crate::storage::spec::bucket`]) of every key ever written to that bucket, as big-endian 4-byte ints
//! (Java `IntFileUtils`). A writer loads the hashes of the partitions it writes, looks each key's
//! hash up (known: its bucket; unknown: assigned as above), and commits, for every bucket that
//! gained hashes, a complete new `HASH` file that replaces the old one in the index manifest (Java
//! `DynamicBucketIndexMaintainer`, `PartitionIndex`, `HashBucketAssigner`; pypaimon
//! `index/dynamic_bucket.py`).
//!
//! This module holds the file format ([`encode_hashes`], [`decode_hashes`]), the pure assigner
//! ([`PartitionAssigner`]: no I/O, one partition's state), a transaction's assigner over the
//! partitions it writes ([`DynamicBuckets`], loading a partition's index lazily from the write's
//! snapshot; index files are cached by name), and the commit step ([`IndexRebase`],
//! [`commit_entries_hashed`]).
//!
//! **One writer, rebased.** Paimon allows one writer per dynamic-bucket table. tarn runs many
//! transactions at once, each assigning against its own snapshot, so at COMMIT (under the commit
//! lock) each transaction's hashes are rebased onto the latest snapshot's index: a hash the
//! latest index (or an earlier transaction of the same group commit) puts in another bucket fails
//! the commit with 40001 — "another writer changed the bucket index" — and anything else is a
//! union per bucket. So no key is ever committed to two buckets, whichever writer (this process,
//! another tarn, pypaimon) got there first. Two transactions adding different new keys both
//! commit; a bucket may then end slightly above the target (a soft limit in Paimon too).
//!
//! Differences from Java: when `dynamic-bucket.max-buckets` is reached, Java puts a new key into
//! a random bucket; tarn picks the bucket with the fewest keys (lowest id on ties), so the
//! assignment is a pure function of the index and the keys. Deleted keys keep their hash (as in
//! Java: the index only grows). A hash found in two buckets (possible only after two engines wrote
//! concurrently) is taken to be in the lower one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};

use crate::storage::StorageError;
use crate::storage::io::cache_budget::BudgetedCache;
use crate::storage::io::heap_size::arc_size;
use crate::storage::lsm::live_files::LiveFiles;
use crate::storage::meta::deletion_vector::{index_file_path, index_path};
use crate::storage::meta::index_manifest::{
    self, HASH_INDEX, IndexFileMeta, IndexManifestEntry, write_index_manifest_file,
};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row::ArrowRowEncoder;
use crate::storage::spec::bucket::hash_row;
use crate::storage::spec::manifest::FileKind;
use crate::storage::spec::options;
use crate::storage::spec::options::dynamic_bucket::{AssignOptions, TARGET_ROW_NUM};
use crate::storage::spec::schema::TableSchema;

/// Bucket ids are Java shorts (`Int2ShortHashMap`): with no `max-buckets`, Java opens buckets up
/// to `Short.MAX_VALUE - 1`.
pub const UNLIMITED_MAX_BUCKET_ID: i32 = i16::MAX as i32 - 1;

/// Whether `schema` is a primary-key table in dynamic bucket mode.
pub fn is_dynamic(schema: &TableSchema) -> bool {
    schema.has_primary_key() && schema.bucket() == -1
}

/// Why tarn cannot write the dynamic-bucket table `schema`, if it cannot.
pub fn write_restriction(schema: &TableSchema) -> Option<String> {
    if schema
        .partition_keys
        .iter()
        .any(|p| !schema.primary_keys.contains(p))
    {
        // Java's KEY_DYNAMIC mode: a global key index across partitions, no HASH files.
        return Some(
            "dynamic-bucket tables whose primary key lacks a partition column (cross-partition \
             updates) are not supported for writing"
                .to_owned(),
        );
    }
    if schema.option(options::BUCKET_KEY).is_some() {
        return Some("a dynamic-bucket table (bucket = -1) cannot have a bucket-key".to_owned());
    }
    if schema.core_options().index_file_in_data_file_dir() {
        return Some(
            "index-file-in-data-file-dir is not supported: tarn keeps index files in index/"
                .to_owned(),
        );
    }
    AssignOptions::from_schema(schema).err()
}

// ---------------------------------------------------------------------------------------------
// The HASH index file
// ---------------------------------------------------------------------------------------------

/// A `HASH` index file's bytes: each hash as a big-endian 4-byte int, nothing else (Java
/// `IntFileUtils.writeInts`). tarn writes them sorted (pypaimon does too; Java in hash-set order).
pub fn encode_hashes(hashes: &[i32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hashes.len() * 4);
    for h in hashes {
        out.extend_from_slice(&h.to_be_bytes());
    }
    out
}

/// The hashes of a `HASH` index file, sorted and without repeats.
pub fn decode_hashes(bytes: &[u8]) -> Result<Vec<i32>, StorageError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(StorageError::format(format!(
            "a HASH index file of {} bytes: expected whole 4-byte ints",
            bytes.len()
        )));
    }
    let mut hashes: Vec<i32> = bytes
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    Ok(hashes)
}

/// The key hash of every row of `batch` (columns in the table's order): Java
/// `BinaryRow.hashCode()` of the trimmed primary key, as Paimon's assigners compute it.
pub fn key_hashes(schema: &TableSchema, batch: &RecordBatch) -> Result<Vec<i32>, StorageError> {
    let idx = schema.indexes_of(&schema.trimmed_primary_keys());
    let columns: Vec<ArrayRef> = idx.iter().map(|&i| Arc::clone(batch.column(i))).collect();
    let types: Vec<_> = idx
        .iter()
        .map(|&i| schema.fields[i].data_type.clone())
        .collect();
    let mut encoder = ArrowRowEncoder::new(&columns, &types)?;
    (0..batch.num_rows())
        .map(|row| Ok(hash_row(encoder.encode(row)?)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The pure assigner
// ---------------------------------------------------------------------------------------------

/// One partition's `HASH` index in one snapshot: each bucket's key hashes, sorted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionBase {
    buckets: BTreeMap<i32, Arc<Vec<i32>>>,
}

impl PartitionBase {
    /// From each bucket's hashes (sorted, without repeats, as [`decode_hashes`] returns them).
    pub fn new(buckets: impl IntoIterator<Item = (i32, Arc<Vec<i32>>)>) -> Self {
        Self {
            buckets: buckets.into_iter().collect(),
        }
    }

    /// The bucket holding `hash` (the lowest, should two hold it).
    pub fn bucket_of(&self, hash: i32) -> Option<i32> {
        self.buckets
            .iter()
            .find(|(_, hashes)| hashes.binary_search(&hash).is_ok())
            .map(|(b, _)| *b)
    }

    /// The hashes of `bucket` (empty if it has no index).
    pub fn hashes(&self, bucket: i32) -> &[i32] {
        self.buckets.get(&bucket).map_or(&[], |h| h.as_slice())
    }

    /// Each bucket and how many hashes its index holds.
    pub fn counts(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.buckets.iter().map(|(b, h)| (*b, h.len() as u64))
    }
}

/// A key hash a transaction wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    bucket: i32,
    /// The first statement that wrote it (a rollback past it forgets it).
    stmt: u32,
    /// Not in the base index: the bucket's index file must gain it.
    new: bool,
}

/// The bucket of a key hash that [`PartitionBase`] (or the transaction) has in another bucket
/// than the one a write used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub hash: i32,
    pub ours: i32,
    pub theirs: i32,
}

/// One partition's bucket assignment within one transaction: the base index, bucket sizes, and
/// the hashes the transaction wrote. Pure: no I/O, deterministic (Java `PartitionIndex` with one
/// assigner).
#[derive(Debug, Clone)]
pub struct PartitionAssigner {
    options: AssignOptions,
    base: PartitionBase,
    /// Hashes per bucket: the base's and the transaction's new ones.
    counts: BTreeMap<i32, u64>,
    /// Buckets that may still take new keys, lowest first (Java `nonFullBucketInformation`:
    /// a bucket found full is dropped for good, sizes only grow).
    non_full: BTreeSet<i32>,
    written: HashMap<i32, Written>,
}

impl PartitionAssigner {
    pub fn new(base: PartitionBase, options: AssignOptions) -> Self {
        let mut out = Self {
            options,
            base,
            counts: BTreeMap::new(),
            non_full: BTreeSet::new(),
            written: HashMap::new(),
        };
        out.recount();
        out
    }

    /// Recomputes bucket sizes from the base and the new hashes written.
    fn recount(&mut self) {
        self.counts = self.base.counts().collect();
        for w in self.written.values().filter(|w| w.new) {
            *self.counts.entry(w.bucket).or_default() += 1;
        }
        self.non_full = self.counts.keys().copied().collect();
    }

    /// The bucket of key hash `hash`, written by statement `stmt`: where the index or this
    /// transaction has it, else the lowest bucket below the target, else a new bucket (the
    /// lowest free id), else — at `max-buckets` — the bucket with the fewest keys.
    pub fn assign(&mut self, hash: i32, stmt: u32) -> Result<i32, StorageError> {
        if let Some(w) = self.written.get(&hash) {
            return Ok(w.bucket);
        }
        if let Some(bucket) = self.base.bucket_of(hash) {
            self.written.insert(
                hash,
                Written {
                    bucket,
                    stmt,
                    new: false,
                },
            );
            return Ok(bucket);
        }
        let bucket = self.pick()?;
        *self.counts.entry(bucket).or_default() += 1;
        self.written.insert(
            hash,
            Written {
                bucket,
                stmt,
                new: true,
            },
        );
        Ok(bucket)
    }

    /// Where a new key goes.
    fn pick(&mut self) -> Result<i32, StorageError> {
        let target = self.options.target_row_num;
        while let Some(&b) = self.non_full.first() {
            if self.counts.get(&b).copied().unwrap_or(0) < target {
                return Ok(b);
            }
            self.non_full.remove(&b);
        }
        let max_id = self
            .options
            .max_buckets
            .map_or(UNLIMITED_MAX_BUCKET_ID, |m| m - 1);
        let mut free = 0;
        for &b in self.counts.keys() {
            if b != free {
                break;
            }
            free += 1;
        }
        if free <= max_id {
            self.non_full.insert(free);
            return Ok(free);
        }
        if self.options.max_buckets.is_none() {
            return Err(StorageError::Unsupported(format!(
                "a partition has {} dynamic buckets, Paimon's most: raise {TARGET_ROW_NUM} \
                 (now {target})",
                UNLIMITED_MAX_BUCKET_ID + 1
            )));
        }
        // Java picks at random; the emptiest bucket keeps this a function of the state.
        Ok(self
            .counts
            .iter()
            .min_by_key(|(b, c)| (**c, **b))
            .map(|(b, _)| *b)
            .expect("max-buckets >= 1, so a bucket exists"))
    }

    /// Forgets the hashes first written after statement `stmt` (ROLLBACK TO, a failed
    /// statement): the state is as if they had never been assigned.
    pub fn forget_after(&mut self, stmt: u32) {
        let before = self.written.len();
        self.written.retain(|_, w| w.stmt <= stmt);
        if self.written.len() != before {
            self.recount();
        }
    }

    /// Moves the transaction onto a newer index of the partition (a statement that reads a
    /// later snapshot): its hashes stay where it wrote them; one the new index has in another
    /// bucket is returned and nothing changes.
    pub fn rebase(&mut self, base: PartitionBase) -> Result<(), Moved> {
        let mut written = self.written.clone();
        for (&hash, w) in written.iter_mut() {
            match base.bucket_of(hash) {
                Some(theirs) if theirs != w.bucket => {
                    return Err(Moved {
                        hash,
                        ours: w.bucket,
                        theirs,
                    });
                }
                found => w.new = found.is_none(),
            }
        }
        self.base = base;
        self.written = written;
        self.recount();
        Ok(())
    }

    /// Every hash the transaction wrote, by bucket, sorted.
    pub fn written_by_bucket(&self) -> BTreeMap<i32, Vec<i32>> {
        let mut out: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for (&hash, w) in &self.written {
            out.entry(w.bucket).or_default().push(hash);
        }
        for hashes in out.values_mut() {
            hashes.sort_unstable();
        }
        out
    }

    /// Buckets whose index gains hashes (a new file at COMMIT).
    #[cfg(test)]
    pub fn changed_buckets(&self) -> BTreeSet<i32> {
        self.written
            .values()
            .filter(|w| w.new)
            .map(|w| w.bucket)
            .collect()
    }

    /// Keys (hashes) of `bucket`: its index's and the new ones written.
    #[cfg(test)]
    pub fn count(&self, bucket: i32) -> u64 {
        self.counts.get(&bucket).copied().unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// A transaction's assigner (loads indexes)
// ---------------------------------------------------------------------------------------------

/// The key hashes a transaction wrote: partition bytes → bucket → hashes (sorted).
pub(crate) type WrittenHashes = BTreeMap<Vec<u8>, BTreeMap<i32, Vec<i32>>>;

/// A transaction's dynamic-bucket assignment over the partitions it writes, each loaded from the
/// snapshot its statements read when first written.
#[derive(Debug)]
pub(crate) struct DynamicBuckets {
    options: AssignOptions,
    /// The snapshot whose index the loaded partitions come from.
    live: Arc<LiveFiles>,
    /// The snapshot the current statement reads (the index moves there before it assigns).
    read_at: i64,
    partitions: HashMap<Vec<u8>, PartitionAssigner>,
}

impl DynamicBuckets {
    /// The assigner of a write starting at `live` (`None` unless the table is in dynamic bucket
    /// mode).
    pub(crate) fn for_table(
        table: &Table,
        live: &Arc<LiveFiles>,
    ) -> Result<Option<Self>, StorageError> {
        let schema = table.schema();
        if !is_dynamic(schema) {
            return Ok(None);
        }
        let options =
            AssignOptions::from_schema(schema).map_err(|reason| StorageError::ReadOnly {
                table: table.name().to_owned(),
                reason,
            })?;
        Ok(Some(Self {
            options,
            live: Arc::clone(live),
            read_at: live.snapshot_id(),
            partitions: HashMap::new(),
        }))
    }

    /// The snapshot the next statement reads.
    pub(crate) fn read_at(&mut self, snapshot_id: i64) {
        self.read_at = self.read_at.max(snapshot_id);
    }

    /// The bucket of each row of `batch`, given as its rows per partition (partition bytes, row
    /// indexes), for statement `stmt`.
    pub(crate) async fn assign(
        &mut self,
        table: &Table,
        batch: &RecordBatch,
        groups: &[(Vec<u8>, &[u32])],
        stmt: u32,
    ) -> Result<Vec<i32>, StorageError> {
        self.advance(table).await?;
        let hashes = key_hashes(table.schema(), batch)?;
        let mut out = vec![0; batch.num_rows()];
        for (partition, rows) in groups {
            if !self.partitions.contains_key(partition) {
                let base = load_base(table, &self.live, partition).await?;
                self.partitions.insert(
                    partition.clone(),
                    PartitionAssigner::new(base, self.options),
                );
            }
            let assigner = self.partitions.get_mut(partition).expect("loaded");
            for &r in rows.iter() {
                out[r as usize] = assigner.assign(hashes[r as usize], stmt)?;
            }
        }
        Ok(out)
    }

    /// Moves the loaded partitions to the index of the snapshot the statement reads, if newer.
    async fn advance(&mut self, table: &Table) -> Result<(), StorageError> {
        if self.read_at <= self.live.snapshot_id() {
            return Ok(());
        }
        let Some(snapshot) = table.snapshots().get(self.read_at).await? else {
            self.read_at = self.live.snapshot_id();
            return Ok(());
        };
        let live = table.live_files(&snapshot).await?;
        for (partition, assigner) in self.partitions.iter_mut() {
            let base = load_base(table, &live, partition).await?;
            assigner.rebase(base).map_err(|m| index_changed(table, m))?;
        }
        self.live = live;
        Ok(())
    }

    /// Forgets what statements after `stmt` assigned.
    pub(crate) fn forget_after(&mut self, stmt: u32) {
        for a in self.partitions.values_mut() {
            a.forget_after(stmt);
        }
    }

    /// Every key hash written, by partition and bucket.
    pub(crate) fn written(&self) -> WrittenHashes {
        self.partitions
            .iter()
            .map(|(p, a)| (p.clone(), a.written_by_bucket()))
            .filter(|(_, b)| !b.is_empty())
            .collect()
    }
}

/// The 40001 of a key hash another writer put into another bucket.
fn index_changed(table: &Table, m: Moved) -> StorageError {
    StorageError::CommitConflict(format!(
        "another writer changed the bucket index of {} (dynamic bucket table) since this \
         transaction's snapshot: a key this transaction wrote to bucket {} is in bucket {} now \
         (Paimon allows one writer per dynamic-bucket table)",
        table.qualified_name(),
        m.ours,
        m.theirs
    ))
}

/// One partition's index in the snapshot of `live`. A bucket with data files but no `HASH`
/// index fails: its keys' buckets are unknown, so a key could be put into a second bucket
/// (pypaimon refuses such partitions too).
async fn load_base(
    table: &Table,
    live: &LiveFiles,
    partition: &[u8],
) -> Result<PartitionBase, StorageError> {
    let base = load_partition(table, &live.deletion_index().entries, partition).await?;
    let mut missing: Vec<i32> = live
        .buckets()
        .filter(|((p, b), files)| {
            p.as_slice() == partition && !files.is_empty() && !base.buckets.contains_key(b)
        })
        .map(|((_, b), _)| *b)
        .collect();
    if missing.is_empty() {
        return Ok(base);
    }
    missing.sort_unstable();
    Err(StorageError::Unsupported(format!(
        "table {} has data in dynamic buckets {missing:?} of a partition without a HASH index \
         (written by a writer that does not keep Paimon's bucket index): tarn cannot tell which \
         bucket holds a key there",
        table.qualified_name()
    )))
}

/// One partition's `HASH` index among `entries`.
async fn load_partition(
    table: &Table,
    entries: &[IndexManifestEntry],
    partition: &[u8],
) -> Result<PartitionBase, StorageError> {
    let mut buckets: BTreeMap<i32, Arc<Vec<i32>>> = BTreeMap::new();
    for e in entries.iter().filter(|e| {
        e.kind == FileKind::Add && e.index_file.index_type == HASH_INDEX && e.partition == partition
    }) {
        if buckets.contains_key(&e.bucket) {
            return Err(StorageError::format(format!(
                "two HASH index files for bucket {} of one partition of {}",
                e.bucket,
                table.qualified_name()
            )));
        }
        buckets.insert(e.bucket, read_hash_file(table, &e.index_file).await?);
    }
    Ok(PartitionBase::new(buckets))
}

/// Key hashes of a table's `HASH` index files by file name, cached per table on the
/// warehouse's cache budget: index files never change.
#[derive(Debug)]
pub(in crate::storage) struct HashIndexes(BudgetedCache<Arc<Vec<i32>>>);

/// The kind of [`HashIndexes`] (the `kind` label of `tarn_cache_*` in `/metrics`).
pub(crate) const HASH_INDEX_CACHE: &str = "hash_index";

/// The table's hash-index cache, made on its cache budget on first use.
fn hash_indexes(table: &Table) -> Arc<HashIndexes> {
    table
        .shared()
        .state_with(|shared| HashIndexes(shared.cache_budget().cache(HASH_INDEX_CACHE)))
}

/// The hashes of one `HASH` index file (cached by name: index files never change).
async fn read_hash_file(
    table: &Table,
    meta: &IndexFileMeta,
) -> Result<Arc<Vec<i32>>, StorageError> {
    let hash_indexes = hash_indexes(table);
    let cache = &hash_indexes.0;
    if let Some(h) = cache.get(&meta.file_name) {
        return Ok(h);
    }
    let bytes = table
        .io()
        .read(&index_file_path(table.path(), meta)?)
        .await?;
    let hashes = Arc::new(decode_hashes(&bytes)?);
    cache.put(
        &meta.file_name,
        Arc::clone(&hashes),
        arc_size(hashes.as_ref()),
    );
    Ok(hashes)
}

// ---------------------------------------------------------------------------------------------
// Commit
// ---------------------------------------------------------------------------------------------

/// The `HASH` index of a commit: the transactions' hashes rebased onto the latest snapshot's
/// index, one transaction at a time (all of its hashes or none).
pub(crate) struct IndexRebase<'a> {
    table: &'a Table,
    latest: Option<&'a Snapshot>,
    /// The latest snapshot's index entries (read on first use).
    entries: Option<Vec<IndexManifestEntry>>,
    partitions: HashMap<Vec<u8>, PartitionBase>,
    /// Hashes the transactions added, partition → hash → bucket.
    owner: HashMap<Vec<u8>, HashMap<i32, i32>>,
    /// New hashes per (partition, bucket).
    adds: BTreeMap<(Vec<u8>, i32), BTreeSet<i32>>,
}

impl<'a> IndexRebase<'a> {
    pub(crate) fn new(table: &'a Table, latest: Option<&'a Snapshot>) -> Self {
        Self {
            table,
            latest,
            entries: None,
            partitions: HashMap::new(),
            owner: HashMap::new(),
            adds: BTreeMap::new(),
        }
    }

    async fn partition(&mut self, partition: &[u8]) -> Result<&PartitionBase, StorageError> {
        if self.entries.is_none() {
            self.entries = Some(match self.latest {
                Some(s) => self.table.deletion_index(s).await?.entries.clone(),
                None => Vec::new(),
            });
        }
        if !self.partitions.contains_key(partition) {
            let entries = self.entries.as_deref().unwrap_or_default();
            let base = load_partition(self.table, entries, partition).await?;
            self.partitions.insert(partition.to_vec(), base);
        }
        Ok(&self.partitions[partition])
    }

    /// Adds one transaction's hashes; fails with 40001 (adding nothing) when the latest index
    /// or an earlier transaction has one of them in another bucket.
    pub(crate) async fn add(&mut self, written: &WrittenHashes) -> Result<(), StorageError> {
        let mut staged: Vec<(&Vec<u8>, i32, i32)> = Vec::new();
        for (partition, buckets) in written {
            let base = self.partition(partition).await?.clone();
            let owner = self.owner.get(partition);
            for (&bucket, hashes) in buckets {
                for &hash in hashes {
                    let theirs = owner
                        .and_then(|o| o.get(&hash).copied())
                        .or_else(|| base.bucket_of(hash));
                    match theirs {
                        Some(theirs) if theirs != bucket => {
                            return Err(index_changed(
                                self.table,
                                Moved {
                                    hash,
                                    ours: bucket,
                                    theirs,
                                },
                            ));
                        }
                        Some(_) => {}
                        None => staged.push((partition, bucket, hash)),
                    }
                }
            }
        }
        for (partition, bucket, hash) in staged {
            self.owner
                .entry(partition.clone())
                .or_default()
                .insert(hash, bucket);
            self.adds
                .entry((partition.clone(), bucket))
                .or_default()
                .insert(hash);
        }
        Ok(())
    }

    /// Writes a new `HASH` file for every bucket that gained hashes and the index manifest
    /// listing them in place of the old ones.
    pub(crate) async fn write(mut self) -> Result<PreparedIndex, StorageError> {
        let mut prepared = PreparedIndex {
            manifest: self.latest.and_then(|s| s.index_manifest.clone()),
            written_manifest: None,
            files: Vec::new(),
        };
        if self.adds.is_empty() {
            return Ok(prepared);
        }
        match self.write_files(&mut prepared).await {
            Ok(()) => Ok(prepared),
            Err(e) => {
                for path in prepared.files(self.table) {
                    let _ = self.table.io().delete(&path).await;
                }
                Err(e)
            }
        }
    }

    async fn write_files(&mut self, prepared: &mut PreparedIndex) -> Result<(), StorageError> {
        let mut changes = Vec::new();
        for ((partition, bucket), new) in std::mem::take(&mut self.adds) {
            let base = self.partition(&partition).await?;
            let mut hashes: Vec<i32> = base.hashes(bucket).to_vec();
            hashes.extend(new);
            hashes.sort_unstable();
            hashes.dedup();
            let name = self.table.shared().index_file_names.next_name();
            let bytes = encode_hashes(&hashes);
            let size = bytes.len() as i64;
            self.table
                .io()
                .write(&index_path(self.table.path(), &name), bytes)
                .await?;
            prepared.files.push(name.clone());
            // Cached now: the next write of this partition reads it back.
            let cached = Arc::new(hashes.clone());
            let bytes = arc_size(cached.as_ref());
            hash_indexes(self.table).0.put(&name, cached, bytes);
            changes.push(IndexManifestEntry {
                kind: FileKind::Add,
                partition,
                bucket,
                index_file: IndexFileMeta {
                    index_type: HASH_INDEX.to_owned(),
                    file_name: name,
                    file_size: size,
                    row_count: hashes.len() as i64,
                    dv_ranges: None,
                    external_path: None,
                    global_index: None,
                },
            });
        }
        let entries = index_manifest::combine(self.entries.take().unwrap_or_default(), changes);
        let name = write_index_manifest_file(self.table.io(), self.table.path(), &entries).await?;
        prepared.written_manifest = Some(name.clone());
        prepared.manifest = Some(name);
        Ok(())
    }
}

/// A commit's index manifest and the files written for it (deleted unless it commits).
#[derive(Debug)]
pub(crate) struct PreparedIndex {
    pub(crate) manifest: Option<String>,
    written_manifest: Option<String>,
    files: Vec<String>,
}

impl PreparedIndex {
    /// Every file written for it (removed when its commit is not published).
    pub(in crate::storage) fn files(&self, table: &Table) -> Vec<object_store::path::Path> {
        let mut files: Vec<_> = self
            .files
            .iter()
            .map(|name| index_path(table.path(), name))
            .collect();
        if let Some(name) = &self.written_manifest {
            files.push(index_manifest::index_manifest_path(table.path(), name));
        }
        files
    }
}

/// The index change of a commit of transactions that wrote dynamic buckets (`writes`: each
/// one's hashes, in commit order): their hashes rebased onto `latest`'s index (40001 if another
/// writer has one of them in another bucket), the changed buckets' index files and the index
/// manifest written. `None` when no transaction wrote a dynamic bucket.
pub(in crate::storage) async fn rebase_index(
    table: &Table,
    latest: Option<&Snapshot>,
    writes: &[WrittenHashes],
) -> Result<Option<PreparedIndex>, StorageError> {
    if writes.iter().all(BTreeMap::is_empty) {
        return Ok(None);
    }
    let mut rebase = IndexRebase::new(table, latest);
    for w in writes {
        rebase.add(w).await?;
    }
    rebase.write().await.map(Some)
}

#[cfg(test)]
#[path = "dynamic_bucket_tests.rs"]
mod tests;
