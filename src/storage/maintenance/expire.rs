//! Snapshot expiration: Paimon's `snapshot.num-retained.min/max`, `snapshot.time-retained` and
//! `snapshot.expire.limit`, and the deletion of the files only expired snapshots referenced.
//!
//! Every commit adds a snapshot, a manifest list pair and usually a manifest; without expiry a
//! busy table grows its metadata without bound and keeps every overwritten data file forever.
//!
//! **Which snapshots** ([`expire_range`], a pure function): Paimon's `ExpireSnapshotsImpl`. The
//! newest `retain_min` are kept; beyond `retain_max` snapshots are expired whatever their age;
//! in between, snapshot `n` is expired only once snapshot `n + 1` is older than
//! `time_retained` (it stopped being current that long ago); at most `max_deletes` per run;
//! never a snapshot at or above a consumer's `nextSnapshot` or (tarn's addition) one pinned by
//! a running read or transaction of this process. Tags do not hold snapshots back: they keep
//! their files.
//!
//! **Which files**: with the expired range `[begin, end)`, a data file is garbage when some
//! delta of `begin..=end` added or deleted it, it is not live in `end` (the replay of those
//! deltas says so), no retained snapshot re-added it, and it is not live in any tag. Changelog
//! files added by expired snapshots go too (unless a tag holds that snapshot), and manifests and
//! manifest lists that expired snapshots referenced and no retained snapshot or tag does, and so
//! do index manifests and the index files (deletion vectors) only they list. Statistics files
//! are never deleted. Unlike Paimon, which relies on
//! file names never coming back, the retained snapshots' additions are checked, so a restore
//! that re-adds old files cannot lose them.
//!
//! **Order**: everything is planned (read) first; then the snapshot files are deleted oldest
//! first and the `EARLIEST` hint written; only then data files, changelog files and manifests.
//! Paimon deletes files first and snapshot files last, which lets a crashed run be redone but
//! leaves listed snapshots whose files are gone; tarn keeps "every listed snapshot is readable"
//! and leaves a crashed run's files to `remove_orphan_files`. Expiry only touches snapshots
//! below the latest, so concurrent commits (which only add above it) are unaffected; runs of
//! one table are serialized by `ExpireMemo::lock`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};

use crate::storage::StorageError;
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::manifest::{FileKind, ManifestEntry};
pub use crate::storage::spec::options::expire::ExpireConfig;
#[cfg(test)]
use crate::storage::spec::options::expire::TARN_DEFAULT_OPTIONS;

/// What the expiry policy looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpireState {
    pub earliest: i64,
    pub latest: i64,
    /// Commit times (`timeMillis`) by snapshot id: at least those of the ids in
    /// `window.0 + 1 ..= window.1` of [`expire_window`]; an id without a time is kept.
    pub times: BTreeMap<i64, i64>,
    /// Smallest snapshot id pinned by this process's reads and transactions.
    pub min_pinned: Option<i64>,
    /// Smallest `nextSnapshot` of the table's consumers.
    pub min_consumer: Option<i64>,
}

/// Paimon's bounds before the time check: `(min, max_exclusive)` — ids below `min` expire by
/// `retain_max` alone; nothing at or above `max_exclusive` may expire.
pub fn expire_window(state: &ExpireState, cfg: &ExpireConfig) -> (i64, i64) {
    let retain_min = cfg.retain_min.max(1);
    let retain_max = cfg.retain_max.max(retain_min);
    let min = (state.latest.saturating_sub(retain_max) + 1).max(state.earliest);
    let mut max_exclusive = state.latest - retain_min + 1;
    for bound in [state.min_consumer, state.min_pinned].into_iter().flatten() {
        max_exclusive = max_exclusive.min(bound);
    }
    max_exclusive = max_exclusive.min(state.earliest.saturating_add(cfg.max_deletes.max(0)));
    (min, max_exclusive)
}

/// The snapshots to expire: `Some((first expired, first kept))`, or `None` when none may.
pub fn expire_range(
    state: &ExpireState,
    cfg: &ExpireConfig,
    now_millis: i64,
) -> Option<(i64, i64)> {
    if state.earliest > state.latest {
        return None;
    }
    let (min, max_exclusive) = expire_window(state, cfg);
    let cutoff = cfg.cutoff_millis(now_millis);
    let mut end = max_exclusive;
    for id in min..max_exclusive {
        // Snapshot `id` may go only once its successor is older than the cutoff.
        match state.times.get(&(id + 1)) {
            Some(&t) if t < cutoff => {}
            _ => {
                end = id;
                break;
            }
        }
    }
    (end > state.earliest).then_some((state.earliest, end))
}

/// What an expiry run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpireReport {
    /// The snapshot ids expired (empty when none were).
    pub expired: std::ops::Range<i64>,
    /// Snapshot files deleted.
    pub snapshots_deleted: usize,
    pub data_files_deleted: usize,
    pub changelog_files_deleted: usize,
    /// Manifest files, manifest lists and index manifests deleted.
    pub manifests_deleted: usize,
    /// Index files (deletion vectors) deleted.
    pub index_files_deleted: usize,
    /// A read pinned an expired snapshot while the run deleted it: its files were left for
    /// `remove_orphan_files`.
    pub files_kept_for_pins: bool,
}

/// Expires the snapshots `cfg` allows and deletes the files only they referenced.
pub async fn expire_snapshots(
    table: &Table,
    cfg: &ExpireConfig,
) -> Result<ExpireReport, StorageError> {
    cfg.check().map_err(StorageError::InvalidSchema)?;
    if cfg.changelog_decoupled {
        return Err(StorageError::Unsupported(format!(
            "table {} keeps changelogs longer than snapshots (changelog.num-retained / \
             changelog.time-retained); tarn cannot expire its snapshots",
            table.qualified_name()
        )));
    }
    let memo = table.state::<ExpireMemo>();
    let _lock = memo.lock.lock().await;
    run(table, cfg).await
}

/// Expiry as a commit's maintenance: consumer files past `consumer.expiration-time` first (as
/// Paimon), then snapshots by the table's options — skipped when the table is `write-only`,
/// when another expiry of the table runs, and (without listing anything) when what this process
/// knows of the table says nothing can expire yet. `None` when nothing was expired.
pub async fn expire_after_commit(table: &Table) -> Result<Option<ExpireReport>, StorageError> {
    let schema = table.schema();
    if schema.core_options().write_only() {
        return Ok(None);
    }
    let cfg = ExpireConfig::from_options(&schema.options)?;
    cfg.check().map_err(StorageError::InvalidSchema)?;
    if cfg.changelog_decoupled {
        return Ok(None);
    }
    // Runs coalesce: a commit whose run finds another running leaves it a request, and the
    // running one goes again before it stops (else the last commits' expiry would be lost).
    let memo = table.state::<ExpireMemo>();
    let pending = &memo.pending;
    pending.store(true, Ordering::SeqCst);
    let mut last = None;
    loop {
        let Ok(lock) = memo.lock.try_lock() else {
            return Ok(last);
        };
        while pending.swap(false, Ordering::SeqCst) {
            if let Some(report) = expire_pass(table, &cfg).await? {
                // A run stops at `snapshot.expire.limit`; coalesced commits may have made
                // more than that expirable, so go again until a run finds less.
                if report.snapshots_deleted as i64 >= cfg.max_deletes {
                    pending.store(true, Ordering::SeqCst);
                }
                last = Some(report);
            }
        }
        drop(lock);
        if !pending.load(Ordering::SeqCst) {
            return Ok(last);
        }
    }
}

/// One pass of [`expire_after_commit`] (the caller holds the expire lock).
async fn expire_pass(
    table: &Table,
    cfg: &ExpireConfig,
) -> Result<Option<ExpireReport>, StorageError> {
    let schema = table.schema();
    let now = table.clock().now_millis();
    if let Some(age) = schema
        .core_options()
        .consumer_expiration_time()
        .map_err(StorageError::InvalidSchema)?
    {
        let before = now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
        table.consumers().expire(before).await?;
    }
    if !may_expire(table, cfg, now).await? {
        return Ok(None);
    }
    let report = run(table, cfg).await?;
    Ok((report.snapshots_deleted > 0).then_some(report))
}

/// The cheap check: `false` when the earliest snapshot this process saw last time, the latest
/// id and the successor's commit time (remembered) say nothing can expire.
async fn may_expire(table: &Table, cfg: &ExpireConfig, now: i64) -> Result<bool, StorageError> {
    let memo = table.state::<ExpireMemo>();
    let Some(earliest) = *memo.earliest.lock().expect("expire memo lock") else {
        return Ok(true);
    };
    if table.shared().min_pinned().is_some_and(|p| p <= earliest) {
        return Ok(false);
    }
    let Some(latest) = table.snapshots().latest_id().await? else {
        return Ok(false);
    };
    let count = latest - earliest + 1;
    if count <= cfg.retain_min.max(1) || cfg.max_deletes <= 0 {
        return Ok(false);
    }
    if count > cfg.retain_max {
        return Ok(true);
    }
    Ok(match memo.snapshot(table, earliest + 1).await? {
        Some(next) => next.time_millis < cfg.cutoff_millis(now),
        None => true,
    })
}

/// One expiry run (the caller holds the expire lock).
async fn run(table: &Table, cfg: &ExpireConfig) -> Result<ExpireReport, StorageError> {
    let memo = table.state::<ExpireMemo>();
    let snapshots = table.snapshots();
    let (Some(latest), Some(earliest)) =
        (snapshots.latest_id().await?, snapshots.earliest_id().await?)
    else {
        return Ok(ExpireReport::default());
    };
    memo.validate(table, earliest, latest).await?;
    let mut state = ExpireState {
        earliest,
        latest,
        min_pinned: table.shared().min_pinned(),
        ..ExpireState::default()
    };
    if expire_window(&state, cfg).1 <= earliest {
        return Ok(ExpireReport::default());
    }
    state.min_consumer = table.consumers().min_next_snapshot().await?;
    let (min, max_exclusive) = expire_window(&state, cfg);
    for id in min + 1..=max_exclusive {
        if let Some(s) = memo.snapshot(table, id).await? {
            state.times.insert(id, s.time_millis);
        }
    }
    let Some((begin, end)) = expire_range(&state, cfg, table.clock().now_millis()) else {
        return Ok(ExpireReport::default());
    };
    expire_until(table, begin, end, latest).await
}

/// Expires snapshots `begin..end`, `latest` being the newest when the run started.
async fn expire_until(
    table: &Table,
    begin: i64,
    end: i64,
    latest: i64,
) -> Result<ExpireReport, StorageError> {
    let memo = table.state::<ExpireMemo>();
    let mut expired: Vec<Arc<Snapshot>> = Vec::new();
    for id in begin..end {
        if let Some(s) = memo.snapshot(table, id).await? {
            expired.push(s);
        }
    }
    let Some(end_snapshot) = memo.snapshot(table, end).await? else {
        // Another process expired past us: nothing of ours to do.
        return Ok(ExpireReport::default());
    };
    let tags = memo.tagged_snapshots(table).await?;
    let tagged_changelogs: HashSet<&str> = tags
        .iter()
        .filter_map(|t| t.changelog_manifest_list.as_deref())
        .collect();

    // Data files: touched by a delta of begin..=end and not live in `end`.
    let mut replay = Replay::default();
    for s in expired.iter().chain([&end_snapshot]) {
        for manifest in entries_of_list(table, &s.delta_manifest_list, true).await? {
            for e in manifest.iter() {
                replay.apply(e, None);
            }
        }
    }
    let mut data = replay.dead();
    let mut changelog: HashMap<FileKey, FileRef> = HashMap::new();
    for s in &expired {
        if let Some(list) = &s.changelog_manifest_list
            && !tagged_changelogs.contains(list.as_str())
        {
            for manifest in entries_of_list(table, list, true).await? {
                for e in manifest.iter().filter(|e| e.kind == FileKind::Add) {
                    changelog.insert(key_of(e), FileRef::of(e));
                }
            }
        }
    }
    let mut retained: Vec<Arc<Snapshot>> = vec![Arc::clone(&end_snapshot)];
    for id in end + 1..=latest {
        if let Some(s) = memo.snapshot(table, id).await? {
            retained.push(s);
        }
    }
    if !data.is_empty() || !changelog.is_empty() {
        // Re-added by a retained snapshot (a restore), or live in a tag.
        for s in &retained[1..] {
            for key in &memo.refs(table, s).await?.added {
                data.remove(key);
                changelog.remove(key);
            }
        }
        for tag in &tags {
            let live = live_among(table, tag, &data, &changelog).await?;
            data.retain(|k, _| !live.contains(k));
            changelog.retain(|k, _| !live.contains(k));
        }
    }

    // Manifests: referenced by an expired snapshot and by no retained snapshot or tag.
    // Collected first: a closure's iterator held across awaits makes the future not `Send`.
    let doomed: Vec<&Snapshot> = expired.iter().map(|s| s.as_ref()).collect();
    let index_files = crate::storage::lsm::deletions::unreferenced_index_files(
        table,
        doomed.iter().copied(),
        retained.iter().chain(&tags),
    )
    .await?;
    let manifests = unreferenced_manifests(table, doomed, retained.iter().chain(&tags)).await?;
    memo.retain_refs(retained.iter().chain(&tags));

    // Snapshot files first, oldest first: a reader never lists a snapshot whose files are gone.
    let snapshots = table.snapshots();
    for s in &expired {
        snapshots.delete(s.id).await?;
    }
    if let Err(e) = snapshots.write_earliest_hint(end).await {
        tracing::warn!(error = %e, "could not write the EARLIEST snapshot hint");
    }
    memo.forget_below(end);
    let mut report = ExpireReport {
        expired: begin..end,
        snapshots_deleted: expired.len(),
        ..ExpireReport::default()
    };
    // A reader that pinned an expired snapshot before its file went may still be reading it.
    if table.shared().min_pinned().is_some_and(|p| p < end) {
        report.files_kept_for_pins = true;
        return Ok(report);
    }
    report.data_files_deleted = delete_data_files(table, data.into_values()).await?;
    report.changelog_files_deleted = delete_data_files(table, changelog.into_values()).await?;
    report.manifests_deleted = delete_manifests(table, manifests).await?;
    report.index_files_deleted = delete_index_files(table, index_files).await?;
    tracing::info!(
        table = %table.qualified_name(),
        expired = ?report.expired,
        data_files = report.data_files_deleted,
        manifests = report.manifests_deleted,
        "expired snapshots"
    );
    Ok(report)
}

/// A data or changelog file as deletion identifies it: (partition bytes, bucket, file name).
/// Paimon upgrades a file to a higher level under the same name, so the level is left out.
pub(crate) type FileKey = (Vec<u8>, i32, String);

pub(crate) fn key_of(e: &ManifestEntry) -> FileKey {
    (e.partition.clone(), e.bucket, e.file.file_name.clone())
}

/// A file to delete and the files that go with it.
#[derive(Debug, Clone)]
pub(crate) struct FileRef {
    partition: Vec<u8>,
    bucket: i32,
    name: String,
    extra: Vec<String>,
    external: Option<String>,
}

impl FileRef {
    pub(crate) fn of(e: &ManifestEntry) -> Self {
        Self {
            partition: e.partition.clone(),
            bucket: e.bucket,
            name: e.file.file_name.clone(),
            extra: e.file.extra_files.clone(),
            external: e.file.external_path.clone(),
        }
    }
}

/// Manifest entries replayed in order (ADD adds, DELETE removes the same level and name).
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Whether each (file, level) is live after the last entry seen.
    live: HashMap<(FileKey, i32), bool>,
    files: HashMap<FileKey, FileRef>,
}

impl Replay {
    /// Applies `e`, if `only` is `None` or holds its file.
    pub(crate) fn apply(&mut self, e: &ManifestEntry, only: Option<&dyn Fn(&FileKey) -> bool>) {
        let key = key_of(e);
        if only.is_some_and(|f| !f(&key)) {
            return;
        }
        self.files
            .entry(key.clone())
            .or_insert_with(|| FileRef::of(e));
        self.live
            .insert((key, e.file.level), e.kind == FileKind::Add);
    }

    /// Files live at some level after the replay.
    pub(crate) fn live(&self) -> HashSet<FileKey> {
        self.live
            .iter()
            .filter(|(_, live)| **live)
            .map(|((k, _), _)| k.clone())
            .collect()
    }

    /// Files live at some level after the replay, with what deleting them takes.
    pub(crate) fn live_files(self) -> HashMap<FileKey, FileRef> {
        let live = self.live();
        self.files
            .into_iter()
            .filter(|(k, _)| live.contains(k))
            .collect()
    }

    /// Files seen and live at no level after the replay.
    pub(crate) fn dead(self) -> HashMap<FileKey, FileRef> {
        let live = self.live();
        self.files
            .into_iter()
            .filter(|(k, _)| !live.contains(k))
            .collect()
    }
}

/// Which of the files in `a` or `b` are live in `snapshot` (a full replay of its manifests).
pub(crate) async fn live_among(
    table: &Table,
    snapshot: &Snapshot,
    a: &HashMap<FileKey, FileRef>,
    b: &HashMap<FileKey, FileRef>,
) -> Result<HashSet<FileKey>, StorageError> {
    if a.is_empty() && b.is_empty() {
        return Ok(HashSet::new());
    }
    let wanted = |k: &FileKey| a.contains_key(k) || b.contains_key(k);
    let mut replay = Replay::default();
    for list in [&snapshot.base_manifest_list, &snapshot.delta_manifest_list] {
        for manifest in entries_of_list(table, list, false).await? {
            for e in manifest.iter() {
                replay.apply(e, Some(&wanted));
            }
        }
    }
    Ok(replay.live())
}

/// The manifest lists and manifests of `doomed` that none of `keep` references.
pub(crate) async fn unreferenced_manifests<'a, 'b>(
    table: &Table,
    doomed: impl IntoIterator<Item = &'b Snapshot>,
    keep: impl Iterator<Item = &'a Arc<Snapshot>>,
) -> Result<BTreeSet<String>, StorageError> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for s in doomed {
        for list in snapshot_lists(s) {
            names.extend(names_of_list(table, list, true).await?);
        }
        names.extend(s.index_manifest.iter().cloned());
    }
    let memo = table.state::<ExpireMemo>();
    for s in keep {
        if names.is_empty() {
            break;
        }
        for name in &memo.refs(table, s).await?.manifests {
            names.remove(name.as_ref());
        }
        if let Some(index) = &s.index_manifest {
            names.remove(index);
        }
    }
    Ok(names)
}

/// The manifest lists a snapshot names (base, delta, changelog).
pub(crate) fn snapshot_lists(s: &Snapshot) -> impl Iterator<Item = &str> {
    [
        Some(s.base_manifest_list.as_str()),
        Some(s.delta_manifest_list.as_str()),
        s.changelog_manifest_list.as_deref(),
    ]
    .into_iter()
    .flatten()
}

/// The entries of every manifest in list `list`. `tolerant`: a missing list or manifest (a
/// crashed cleanup got there first) reads as empty instead of failing.
pub(crate) async fn entries_of_list(
    table: &Table,
    list: &str,
    tolerant: bool,
) -> Result<Vec<Arc<Vec<ManifestEntry>>>, StorageError> {
    let metas = match table.read_manifest_list(list).await {
        Ok(m) => m,
        Err(e) if tolerant && e.is_missing_file() => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::with_capacity(metas.len());
    for m in metas {
        match table.read_manifest(&m.file_name).await {
            Ok(entries) => out.push(entries),
            Err(e) if tolerant && e.is_missing_file() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Names of manifest list `list` and of the manifests in it.
pub(crate) async fn names_of_list(
    table: &Table,
    list: &str,
    tolerant: bool,
) -> Result<Vec<String>, StorageError> {
    let metas = match table.read_manifest_list(list).await {
        Ok(m) => m,
        Err(e) if tolerant && e.is_missing_file() => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = metas.into_iter().map(|m| m.file_name).collect();
    names.push(list.to_owned());
    Ok(names)
}

/// How many deletions run at once.
const DELETE_CONCURRENCY: usize = 16;

/// Deletes data or changelog files with their extra files (under either partition folder
/// naming). Files at an external path are left alone. Returns how many files were deleted.
pub(crate) async fn delete_data_files(
    table: &Table,
    files: impl IntoIterator<Item = FileRef>,
) -> Result<usize, StorageError> {
    let types = table.partition_types();
    let mut paths = Vec::new();
    let mut count = 0;
    for f in files {
        if let Some(external) = &f.external {
            tracing::warn!(file = %external, "not deleting a data file at an external path");
            continue;
        }
        let partition = binary_row::deserialize(&f.partition, &types)?;
        let dirs = [
            Some(table.bucket_path(&partition, f.bucket)),
            table.alternate_bucket_path(&partition, f.bucket),
        ];
        for dir in dirs.into_iter().flatten() {
            for name in std::iter::once(&f.name).chain(&f.extra) {
                paths.push(dir.clone().join(name.as_str()));
            }
        }
        count += 1;
    }
    delete_all(table, paths).await?;
    Ok(count)
}

/// Deletes index files (under `index/`) by name; returns how many.
pub(crate) async fn delete_index_files(
    table: &Table,
    names: impl IntoIterator<Item = String>,
) -> Result<usize, StorageError> {
    let paths: Vec<_> = names
        .into_iter()
        .map(|n| crate::storage::meta::deletion_vector::index_path(table.path(), &n))
        .collect();
    let count = paths.len();
    delete_all(table, paths).await?;
    Ok(count)
}

/// Deletes manifests and manifest lists by name; returns how many.
pub(crate) async fn delete_manifests(
    table: &Table,
    names: impl IntoIterator<Item = String>,
) -> Result<usize, StorageError> {
    let paths: Vec<_> = names.into_iter().map(|n| table.manifest_path(&n)).collect();
    let count = paths.len();
    delete_all(table, paths).await?;
    Ok(count)
}

async fn delete_all(
    table: &Table,
    paths: Vec<object_store::path::Path>,
) -> Result<(), StorageError> {
    let io = table.io().clone();
    futures::stream::iter(paths)
        .map(move |p| {
            let io = io.clone();
            async move { io.delete(&p).await }
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// What one snapshot references, for keep-sets.
#[derive(Debug, Default)]
pub(crate) struct SnapshotRefs {
    /// Its manifest lists (base, delta, changelog) and the manifests in them.
    pub(crate) manifests: Vec<Arc<str>>,
    /// Files its delta adds.
    pub(crate) added: Vec<FileKey>,
}

/// A tag file's modification time and size as listed, and its snapshot.
type TagStamp = (i64, u64, Arc<Snapshot>);

/// What expiry remembers between runs: snapshot files by id (immutable, except that a
/// rollback reuses ids: [`ExpireMemo::forget_ids`], and [`ExpireMemo::validate`] notices another
/// engine's), and what each snapshot references, by its delta list's name (content-addressed,
/// so a tag and its snapshot share an entry).
#[derive(Debug, Default)]
pub(crate) struct ExpireMemo {
    /// Held while snapshots are expired or rolled back (one at a time per table).
    pub(in crate::storage) lock: tokio::sync::Mutex<()>,
    snapshots: Mutex<BTreeMap<i64, Arc<Snapshot>>>,
    refs: Mutex<HashMap<String, Arc<SnapshotRefs>>>,
    /// Manifest names shared by the `refs` entries (consecutive snapshots' base lists repeat
    /// most of each other's manifests).
    names: Mutex<HashSet<Arc<str>>>,
    /// Tags by name, with the listing's modification time and size of their file.
    tags: Mutex<HashMap<String, TagStamp>>,
    /// The earliest snapshot id the last run saw.
    pub(crate) earliest: Mutex<Option<i64>>,
    /// A commit asked for a run while one was running: the running one goes again.
    pending: std::sync::atomic::AtomicBool,
}

impl ExpireMemo {
    /// Snapshot `id`, read once.
    pub(crate) async fn snapshot(
        &self,
        table: &Table,
        id: i64,
    ) -> Result<Option<Arc<Snapshot>>, StorageError> {
        if let Some(s) = self.snapshots.lock().expect("expire memo lock").get(&id) {
            return Ok(Some(Arc::clone(s)));
        }
        let Some(s) = table.snapshots().get(id).await? else {
            return Ok(None);
        };
        let s = Arc::new(s);
        self.snapshots
            .lock()
            .expect("expire memo lock")
            .insert(id, Arc::clone(&s));
        Ok(Some(s))
    }

    /// What `s` references, read once.
    pub(crate) async fn refs(
        &self,
        table: &Table,
        s: &Snapshot,
    ) -> Result<Arc<SnapshotRefs>, StorageError> {
        let key = &s.delta_manifest_list;
        if let Some(r) = self.refs.lock().expect("expire memo lock").get(key) {
            return Ok(Arc::clone(r));
        }
        let mut refs = SnapshotRefs::default();
        for list in snapshot_lists(s) {
            let names = names_of_list(table, list, false).await?;
            let mut interned = self.names.lock().expect("expire memo lock");
            refs.manifests
                .extend(names.into_iter().map(|n| match interned.get(n.as_str()) {
                    Some(known) => Arc::clone(known),
                    None => {
                        let name: Arc<str> = n.into();
                        interned.insert(Arc::clone(&name));
                        name
                    }
                }));
        }
        for manifest in entries_of_list(table, &s.delta_manifest_list, false).await? {
            refs.added.extend(
                manifest
                    .iter()
                    .filter(|e| e.kind == FileKind::Add)
                    .map(key_of),
            );
        }
        let refs = Arc::new(refs);
        self.refs
            .lock()
            .expect("expire memo lock")
            .insert(key.clone(), Arc::clone(&refs));
        Ok(refs)
    }

    /// The snapshots of the table's tags (a tag file is read again only when the listing shows
    /// it changed).
    pub(crate) async fn tagged_snapshots(
        &self,
        table: &Table,
    ) -> Result<Vec<Arc<Snapshot>>, StorageError> {
        let dir = table.path().clone().join("tag");
        let (objects, _) = table.io().list_dir(&dir).await?;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for meta in objects {
            let Some(name) = meta
                .location
                .filename()
                .and_then(|f| f.strip_prefix(crate::storage::meta::tag::TAG_PREFIX))
            else {
                continue;
            };
            let stamp = (meta.last_modified.timestamp_millis(), meta.size);
            seen.insert(name.to_owned());
            let known = self
                .tags
                .lock()
                .expect("expire memo lock")
                .get(name)
                .filter(|(m, size, _)| (*m, *size) == stamp)
                .map(|(_, _, s)| Arc::clone(s));
            let snapshot = match known {
                Some(s) => s,
                None => {
                    // Deleted since the listing: skipped.
                    let Some(bytes) = table.io().read_if_exists(&meta.location).await? else {
                        continue;
                    };
                    let s =
                        Arc::new(crate::storage::meta::tag::Tag::from_json(name, &bytes)?.snapshot);
                    self.tags
                        .lock()
                        .expect("expire memo lock")
                        .insert(name.to_owned(), (stamp.0, stamp.1, Arc::clone(&s)));
                    s
                }
            };
            out.push(snapshot);
        }
        self.tags
            .lock()
            .expect("expire memo lock")
            .retain(|name, _| seen.contains(name));
        out.sort_by_key(|s| s.id);
        Ok(out)
    }

    /// Drops what is outside `earliest..=latest`, and everything when the newest remembered
    /// snapshot is no longer the one on the store (another engine rolled the table back).
    async fn validate(
        &self,
        table: &Table,
        earliest: i64,
        latest: i64,
    ) -> Result<(), StorageError> {
        let newest = {
            let mut snapshots = self.snapshots.lock().expect("expire memo lock");
            snapshots.retain(|id, _| (earliest..=latest).contains(id));
            snapshots.last_key_value().map(|(_, s)| Arc::clone(s))
        };
        if let Some(s) = newest {
            let fresh = table.snapshots().get(s.id).await?;
            if fresh.as_ref() != Some(s.as_ref()) {
                self.forget_ids();
            }
        }
        *self.earliest.lock().expect("expire memo lock") = Some(earliest);
        Ok(())
    }

    fn forget_below(&self, id: i64) {
        self.snapshots
            .lock()
            .expect("expire memo lock")
            .retain(|k, _| *k >= id);
        *self.earliest.lock().expect("expire memo lock") = Some(id);
    }

    /// Keeps the references of these snapshots only.
    fn retain_refs<'a>(&self, keep: impl Iterator<Item = &'a Arc<Snapshot>>) {
        let keep: HashSet<&str> = keep.map(|s| s.delta_manifest_list.as_str()).collect();
        self.refs
            .lock()
            .expect("expire memo lock")
            .retain(|k, _| keep.contains(k.as_str()));
        self.names
            .lock()
            .expect("expire memo lock")
            .retain(|n| Arc::strong_count(n) > 1);
    }

    /// Forgets what is known by snapshot id (a rollback reuses ids); what is known by file
    /// name stays true.
    pub(crate) fn forget_ids(&self) {
        self.snapshots.lock().expect("expire memo lock").clear();
        *self.earliest.lock().expect("expire memo lock") = None;
    }
}

/// The maintenance futures can run on a multi-threaded runtime from any caller.
#[cfg(test)]
#[allow(dead_code)]
fn futures_are_send(t: &Table, s: &Snapshot, c: &ExpireConfig) {
    fn send<T: Send>(_: T) {}
    send(expire_snapshots(t, c));
    send(expire_after_commit(t));
    send(super::rollback::rollback_to(t, s, true));
    send(super::orphan::remove_orphan_files(t, 0, true));
    send(t.pin_snapshot(1));
    send(t.consumers().min_next_snapshot());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::io::clock::ManualClock;
    use crate::storage::spec::options::expire::PAIMON_RETAIN_MAX;
    use crate::storage::spec::options::parse_duration;
    use crate::storage::testkit::{self, START, files, referenced, rows_at, snapshot, upsert};
    use std::time::Duration;

    fn cfg(min: i64, max: i64, time_ms: u64, max_deletes: i64) -> ExpireConfig {
        ExpireConfig {
            retain_min: min,
            retain_max: max,
            time_retained: Duration::from_millis(time_ms),
            max_deletes,
            ..ExpireConfig::default()
        }
    }

    fn state(
        earliest: i64,
        latest: i64,
        time: impl Fn(i64) -> Option<i64>,
        pinned: Option<i64>,
        consumer: Option<i64>,
    ) -> ExpireState {
        ExpireState {
            earliest,
            latest,
            times: (earliest..=latest)
                .filter_map(|id| Some((id, time(id)?)))
                .collect(),
            min_pinned: pinned,
            min_consumer: consumer,
        }
    }

    #[test]
    fn policy() {
        const NOW: i64 = 100_000;
        let old = |_| Some(0);
        let young = |_| Some(95_000);
        let max = PAIMON_RETAIN_MAX;
        let with_older_than = {
            let mut c = cfg(1, max, 10_000, 50);
            c.older_than_millis = Some(50_000);
            c
        };
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, ExpireState, ExpireConfig, Option<(i64, i64)>)> = vec![
            (
                "one snapshot",
                state(1, 1, old, None, None),
                cfg(1, max, 10_000, 50),
                None,
            ),
            (
                "min kept",
                state(1, 20, old, None, None),
                cfg(10, max, 10_000, 50),
                Some((1, 11)),
            ),
            (
                "all young",
                state(1, 20, young, None, None),
                cfg(10, max, 10_000, 50),
                None,
            ),
            (
                "successor's age decides",
                state(
                    1,
                    20,
                    |id| Some(if id <= 5 { 0 } else { 95_000 }),
                    None,
                    None,
                ),
                cfg(1, max, 10_000, 50),
                Some((1, 5)),
            ),
            (
                "exactly at the cut-off is kept",
                state(1, 3, |_| Some(90_000), None, None),
                cfg(1, max, 10_000, 50),
                None,
            ),
            (
                "max beats age",
                state(1, 20, young, None, None),
                cfg(3, 5, 10_000, 50),
                Some((1, 16)),
            ),
            (
                "max below min is min",
                state(1, 20, young, None, None),
                cfg(10, 5, 10_000, 50),
                Some((1, 11)),
            ),
            (
                "limit",
                state(1, 20, old, None, None),
                cfg(1, max, 10_000, 4),
                Some((1, 5)),
            ),
            (
                "limit beats max",
                state(1, 20, young, None, None),
                cfg(3, 5, 10_000, 4),
                Some((1, 5)),
            ),
            (
                "no deletes allowed",
                state(1, 20, old, None, None),
                cfg(1, max, 10_000, 0),
                None,
            ),
            (
                "consumer",
                state(1, 20, old, None, Some(7)),
                cfg(1, max, 10_000, 50),
                Some((1, 7)),
            ),
            (
                "consumer below earliest",
                state(4, 20, old, None, Some(2)),
                cfg(1, 5, 0, 50),
                None,
            ),
            (
                "pinned",
                state(1, 20, old, Some(3), None),
                cfg(1, 5, 10_000, 50),
                Some((1, 3)),
            ),
            (
                "pinned earliest",
                state(1, 20, old, Some(1), None),
                cfg(1, 5, 10_000, 50),
                None,
            ),
            (
                "older_than replaces time_retained",
                state(1, 20, |id| Some(id * 10_000), None, None),
                with_older_than,
                Some((1, 4)),
            ),
            (
                "from a later earliest",
                state(8, 20, old, None, None),
                cfg(10, max, 10_000, 50),
                Some((8, 11)),
            ),
            (
                "latest always kept",
                state(1, 3, old, None, None),
                cfg(0, max, 0, 50),
                Some((1, 3)),
            ),
            (
                "a missing time stops",
                state(1, 9, |id| (id != 4).then_some(0), None, None),
                cfg(1, max, 10_000, 50),
                Some((1, 3)),
            ),
            (
                "no snapshots",
                state(1, 0, old, None, None),
                cfg(1, max, 0, 50),
                None,
            ),
        ];
        for (name, state, cfg, want) in cases {
            assert_eq!(expire_range(&state, &cfg, NOW), want, "{name}");
        }
    }

    #[test]
    fn config_from_options() {
        let opts = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            ExpireConfig::from_options(&opts(&[])).unwrap(),
            ExpireConfig::default()
        );
        let tarn = ExpireConfig::from_options(&opts(TARN_DEFAULT_OPTIONS)).unwrap();
        assert_eq!(
            (
                tarn.retain_min,
                tarn.retain_max,
                tarn.time_retained,
                tarn.max_deletes
            ),
            (10, 1000, Duration::from_secs(3600), 50)
        );
        let c = ExpireConfig::from_options(&opts(&[
            ("snapshot.num-retained.min", "2"),
            ("snapshot.time-retained", "30 min"),
            ("snapshot.expire.limit", "7"),
        ]))
        .unwrap();
        assert_eq!(
            (c.retain_min, c.time_retained, c.max_deletes),
            (2, Duration::from_secs(1800), 7)
        );
        assert!(!c.changelog_decoupled);
        assert!(
            ExpireConfig::from_options(&opts(&[("changelog.time-retained", "2h")]))
                .unwrap()
                .changelog_decoupled
        );
        assert!(matches!(
            ExpireConfig::from_options(&opts(&[("snapshot.time-retained", "soon")])),
            Err(StorageError::InvalidSchema(_))
        ));
        let p = c
            .clone()
            .with_procedure_args(Some(5), None, Some(123), Some(1));
        assert_eq!(
            (
                p.retain_max,
                p.retain_min,
                p.older_than_millis,
                p.max_deletes
            ),
            (5, 2, Some(123), 1)
        );
        assert_eq!(p.cutoff_millis(1_000_000), 123);
        assert!(
            c.with_procedure_args(Some(1), None, None, None)
                .check()
                .is_err()
        );
        assert!(cfg(0, 5, 0, 1).check().is_err());
        assert!(cfg(5, 5, 0, 1).check().is_ok());
    }

    #[test]
    fn durations_as_paimon_reads_them() {
        for (text, want) in [
            ("1h", 3_600_000),
            ("1 h", 3_600_000),
            ("2 hours", 7_200_000),
            ("30min", 1_800_000),
            ("5 m", 300_000),
            ("10 s", 10_000),
            ("100", 100),
            ("100ms", 100),
            ("1 d", 86_400_000),
            ("3 Days", 259_200_000),
        ] {
            assert_eq!(
                parse_duration(text).ok(),
                Some(Duration::from_millis(want)),
                "{text}"
            );
        }
        for bad in ["", "h", "1 fortnight", "-1 h", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    /// Snapshots 1..=7: 1 and 2 write, 3 truncates, 4..=7 write again.
    async fn history(t: &Table) {
        upsert(t, &[(1, 10, "a"), (2, 20, "b")]).await;
        upsert(t, &[(3, 30, "a"), (1, 11, "a")]).await;
        crate::storage::commit::truncate(t).await.unwrap();
        upsert(t, &[(4, 40, "a")]).await;
        upsert(t, &[(5, 50, "b")]).await;
        upsert(t, &[(4, 41, "a")]).await;
        upsert(t, &[(6, 60, "b")]).await;
    }

    fn keep(max: i64) -> ExpireConfig {
        cfg(1, max, 3_600_000, 50)
    }

    #[tokio::test]
    async fn expiring_keeps_retained_snapshots_and_deletes_the_rest() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let mut before = Vec::new();
        for id in 5..=7 {
            before.push(rows_at(&t, &snapshot(&t, id).await).await);
        }
        let doomed_data = testkit::data_files(&referenced(&t, &[snapshot(&t, 2).await]).await);
        assert!(doomed_data.len() >= 2);
        let all_before = files(&t).await;

        let report = expire_snapshots(&t, &keep(3)).await.unwrap();
        assert_eq!(report.expired, 1..5);
        assert_eq!(report.snapshots_deleted, 4);
        assert_eq!(report.data_files_deleted, doomed_data.len());
        assert_eq!(report.changelog_files_deleted, 0);
        assert!(!report.files_kept_for_pins);
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [5, 6, 7]);
        assert_eq!(t.snapshots().earliest_id().await.unwrap(), Some(5));
        let earliest_hint = t
            .io()
            .read(&t.path().clone().join("snapshot").join("EARLIEST"))
            .await
            .unwrap();
        assert_eq!(&earliest_hint[..], b"5");

        for (id, rows) in (5..=7).zip(&before) {
            assert_eq!(
                &rows_at(&t, &snapshot(&t, id).await).await,
                rows,
                "snapshot {id}"
            );
        }
        let retained = [
            snapshot(&t, 5).await,
            snapshot(&t, 6).await,
            snapshot(&t, 7).await,
        ];
        let after = files(&t).await;
        assert_eq!(
            after,
            referenced(&t, &retained).await,
            "exactly the referenced files remain"
        );
        assert!(doomed_data.is_disjoint(&after));
        assert_eq!(
            report.manifests_deleted + report.data_files_deleted,
            all_before.len() - after.len()
        );
        // Nothing more to do.
        let again = expire_snapshots(&t, &keep(3)).await.unwrap();
        assert_eq!(again, ExpireReport::default());
    }

    #[tokio::test]
    async fn a_tag_keeps_its_files() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let two = snapshot(&t, 2).await;
        t.tags().create("two", &two, START).await.unwrap();
        let tagged_rows = rows_at(&t, &two).await;
        let report = expire_snapshots(&t, &keep(2)).await.unwrap();
        assert_eq!(report.expired, 1..6);
        assert_eq!(
            report.data_files_deleted, 0,
            "all truncated files are in the tag"
        );
        let tag = t.tags().get("two").await.unwrap().unwrap();
        assert_eq!(rows_at(&t, &tag.snapshot).await, tagged_rows);
        let versions = [snapshot(&t, 6).await, snapshot(&t, 7).await, tag.snapshot];
        assert_eq!(files(&t).await, referenced(&t, &versions).await);

        // Without the tag its files go with the next expiry that covers them... they were
        // deleted by snapshot 3 (already expired), so only orphan cleaning finds them now.
        t.tags().delete("two").await.unwrap();
        let unreferenced = files(&t).await.len() - referenced(&t, &versions[..2]).await.len();
        assert!(unreferenced > 0);
    }

    #[tokio::test]
    async fn changelog_files_go_with_their_snapshots() {
        let t = testkit::table(&[("changelog-producer", "input")]).await;
        for i in 1..=5 {
            upsert(&t, &[(i, i, "a"), (i, i, "b")]).await;
        }
        let first = snapshot(&t, 1).await;
        assert!(first.changelog_manifest_list.is_some());
        let report = expire_snapshots(&t, &keep(2)).await.unwrap();
        assert_eq!(report.expired, 1..4);
        assert_eq!(report.data_files_deleted, 0);
        assert!(report.changelog_files_deleted >= 3, "{report:?}");
        let versions = [snapshot(&t, 4).await, snapshot(&t, 5).await];
        assert_eq!(files(&t).await, referenced(&t, &versions).await);
        assert_eq!(rows_at(&t, &versions[1]).await.len(), 10);
    }

    /// A restore re-adds files an older snapshot deleted: expiring that older snapshot must not
    /// delete them (Paimon's rule — a deleted file never comes back — does not hold here).
    #[tokio::test]
    async fn files_a_restore_brought_back_stay() {
        let t = testkit::table(&[]).await;
        upsert(&t, &[(1, 10, "a"), (2, 20, "b")]).await;
        crate::storage::commit::truncate(&t).await.unwrap();
        let one = snapshot(&t, 1).await;
        assert_eq!(
            crate::storage::maintenance::restore::restore(&t, &one)
                .await
                .unwrap(),
            3
        );
        upsert(&t, &[(3, 30, "a")]).await;
        upsert(&t, &[(4, 40, "a")]).await;
        let report = expire_snapshots(&t, &keep(4)).await.unwrap();
        assert_eq!(report.expired, 1..2);
        assert_eq!(report.data_files_deleted, 0, "snapshot 3 uses them again");
        let versions = futures::future::join_all([2, 3, 4, 5].map(|id| snapshot(&t, id))).await;
        assert_eq!(files(&t).await, referenced(&t, &versions).await);
        assert_eq!(rows_at(&t, &versions[3]).await.len(), 4);
    }

    #[tokio::test]
    async fn pinned_snapshots_are_never_expired() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let pin = t.pin_snapshot(2).await.unwrap().unwrap();
        let rows = rows_at(&t, &snapshot(&t, 2).await).await;
        let report = expire_snapshots(&t, &keep(1)).await.unwrap();
        assert_eq!(report.expired, 1..2);
        assert_eq!(report.data_files_deleted, 0, "snapshot 2 still uses them");
        assert_eq!(rows_at(&t, &snapshot(&t, 2).await).await, rows);
        assert!(
            t.pin_snapshot(1).await.unwrap().is_none(),
            "gone before the pin"
        );
        drop(pin);
        let report = expire_snapshots(&t, &keep(1)).await.unwrap();
        assert_eq!(report.expired, 2..7);
        assert!(report.data_files_deleted >= 2);
        assert_eq!(
            files(&t).await,
            referenced(&t, &[snapshot(&t, 7).await]).await
        );
    }

    #[tokio::test]
    async fn consumers_hold_snapshots_back() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        t.consumers()
            .reset(
                "job",
                crate::storage::meta::consumer::Consumer { next_snapshot: 3 },
            )
            .await
            .unwrap();
        let report = expire_snapshots(&t, &keep(1)).await.unwrap();
        assert_eq!(report.expired, 1..3);
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [3, 4, 5, 6, 7]);
        t.consumers().delete("job").await.unwrap();
        assert_eq!(expire_snapshots(&t, &keep(1)).await.unwrap().expired, 3..7);
    }

    #[tokio::test]
    async fn after_commit_by_table_options_and_time() {
        // Consumer files age by the store's clock (the wall clock), so this test starts there.
        use crate::storage::io::clock::Clock;
        let clock = ManualClock::new(crate::storage::io::clock::SystemClock.now_millis());
        let t = testkit::table_with_clock(
            &[
                ("snapshot.num-retained.min", "2"),
                ("snapshot.time-retained", "1 h"),
                ("consumer.expiration-time", "1 d"),
            ],
            Arc::clone(&clock),
        )
        .await;
        for i in 0..5 {
            clock.advance(1_000);
            upsert(&t, &[(i, i, "a")]).await;
            assert_eq!(expire_after_commit(&t).await.unwrap(), None, "young");
        }
        // Let the commits' own maintenance tasks finish (they find nothing to do either).
        tokio::time::sleep(Duration::from_millis(50)).await;
        t.consumers()
            .reset(
                "stale",
                crate::storage::meta::consumer::Consumer { next_snapshot: 1 },
            )
            .await
            .unwrap();
        clock.advance(2 * 3_600_000);
        // The consumer file is younger than a day: it holds everything.
        assert_eq!(expire_after_commit(&t).await.unwrap(), None);
        clock.advance(2 * 86_400_000);
        let report = expire_after_commit(&t).await.unwrap().unwrap();
        assert_eq!(report.expired, 1..4, "the newest two stay");
        assert!(
            t.consumers().list().await.unwrap().is_empty(),
            "stale consumer expired"
        );
        assert_eq!(expire_after_commit(&t).await.unwrap(), None);
        // Commits start it themselves (`maintenance::after_commit`, in a task of its own).
        clock.advance(1_000);
        upsert(&t, &[(9, 9, "a")]).await;
        for _ in 0..100 {
            if t.snapshots().earliest_id().await.unwrap() == Some(5) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [5, 6]);
        assert_eq!(
            rows_at(&t, &t.snapshots().latest().await.unwrap().unwrap())
                .await
                .len(),
            6
        );
    }

    #[tokio::test]
    async fn a_coalesced_run_expires_past_the_per_run_limit() {
        let clock = ManualClock::new(START);
        let t = testkit::table_with_clock(
            &[
                ("snapshot.num-retained.min", "2"),
                ("snapshot.num-retained.max", "5"),
                ("snapshot.expire.limit", "2"),
            ],
            Arc::clone(&clock),
        )
        .await;
        // A run in progress (the lock held): every commit's run coalesces into a request.
        let memo = t.state::<ExpireMemo>();
        let lock = memo.lock.lock().await;
        for i in 0..20 {
            upsert(&t, &[(i, i, "a")]).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(t.snapshots().list_ids().await.unwrap().len() >= 20);
        drop(lock);
        // One call serves every request: runs of at most 2 until at most 5 are left.
        expire_after_commit(&t).await.unwrap();
        while !t
            .state::<crate::storage::maintenance::compactor::CompactorState>()
            .is_idle()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        expire_after_commit(&t).await.unwrap();
        assert_eq!(t.snapshots().list_ids().await.unwrap().len(), 5);
    }

    #[tokio::test]
    async fn paimon_defaults_without_options_and_write_only() {
        let clock = ManualClock::new(START);
        let t = testkit::table_with_clock(&[], Arc::clone(&clock)).await;
        for i in 0..12 {
            upsert(&t, &[(i, i, "a")]).await;
        }
        // Background compactions commit snapshots of their own: let them finish.
        while !t
            .state::<crate::storage::maintenance::compactor::CompactorState>()
            .is_idle()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        clock.advance(2 * 3_600_000);
        // Paimon keeps 10.
        let latest = t.snapshots().latest_id().await.unwrap().unwrap();
        assert_eq!(
            expire_after_commit(&t).await.unwrap().unwrap().expired,
            1..latest - 9
        );
        let t = testkit::table_with_clock(
            &[("write-only", "true"), ("snapshot.num-retained.min", "1")],
            Arc::clone(&clock),
        )
        .await;
        upsert(&t, &[(1, 1, "a")]).await;
        upsert(&t, &[(2, 2, "a")]).await;
        clock.advance(2 * 3_600_000);
        assert_eq!(expire_after_commit(&t).await.unwrap(), None);
    }

    #[tokio::test]
    async fn concurrent_runs_expire_once() {
        let t = testkit::table(&[]).await;
        history(&t).await;
        let cfg = keep(2);
        let (a, b) = tokio::join!(expire_snapshots(&t, &cfg), expire_snapshots(&t, &cfg));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.snapshots_deleted + b.snapshots_deleted, 5);
        assert_eq!(t.snapshots().list_ids().await.unwrap(), [6, 7]);
        let versions = [snapshot(&t, 6).await, snapshot(&t, 7).await];
        assert_eq!(files(&t).await, referenced(&t, &versions).await);
    }
}
