//! The compactor: when and where compaction runs.
//!
//! After every commit of this process a background pass looks at the buckets whose files
//! changed since it last looked (live file lists are shared between versions, so an unchanged
//! bucket is the same list: a pointer comparison), asks the policy (`compact_policy.rs`) for a
//! plan and runs it (`compact.rs`), bucket after bucket, until no bucket needs one. Passes of a
//! table never overlap: a commit that finds one running leaves it a request, and the running
//! pass goes round again. Compactions of all tables share a small pool ([`POOL_SIZE`]) so they
//! never take every core from queries; reads never wait for them.
//!
//! Writers stall only at the stop trigger: a commit to a bucket that has more sorted runs than
//! `num-sorted-run.stop-trigger` waits for a pass before it adds its run (logged, and counted
//! in [`CompactorState::stalls`]), which bounds read amplification when compaction falls
//! behind. Transactions already past the check when the bucket crossed the trigger still add
//! theirs (at most one run per group-commit round), so under many concurrent writers a bucket
//! can briefly hold a few runs more than the trigger. `write-only = true` turns background compaction and stalls
//! off (the table is compacted elsewhere); `CALL sys.compact` still works.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::storage::StorageError;
use crate::storage::lsm::deletions::BucketDeletions;
use crate::storage::lsm::live_files::BucketId;
use crate::storage::maintenance::compact::{CompactResult, options_of, summary};
use crate::storage::maintenance::compact_policy::{self, CompactOptions, PickState, PickTime};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::DataFileMeta;

/// Compactions running at once in this process, over all tables.
pub const POOL_SIZE: usize = 1;

/// Passes a table's compactor makes before it lets go (a guard against a policy that keeps
/// finding work it cannot finish).
const MAX_ROUNDS: usize = 10_000;

type FileList = Arc<Vec<Arc<DataFileMeta>>>;

/// A table's compactor: what it saw, what it decided, what it did.
#[derive(Debug, Default)]
pub struct CompactorState {
    /// Held while a pass (or `sys.compact`) runs.
    lock: tokio::sync::Mutex<()>,
    /// A commit asked for a pass while one was running.
    pending: AtomicBool,
    /// Each bucket's file list when the compactor last found nothing to do there.
    seen: Mutex<HashMap<BucketId, FileList>>,
    /// Each bucket's policy state (Paimon keeps it in the bucket's writer).
    states: Mutex<HashMap<BucketId, PickState>>,
    /// Writes that waited for compaction at the stop trigger.
    pub stalls: AtomicU64,
    /// Compactions committed, and bytes they read and wrote.
    pub compactions: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Compactions abandoned because their inputs changed meanwhile (nothing committed).
    pub abandoned: AtomicU64,
}

pub(crate) fn pool() -> &'static tokio::sync::Semaphore {
    static POOL: OnceLock<tokio::sync::Semaphore> = OnceLock::new();
    POOL.get_or_init(|| tokio::sync::Semaphore::new(POOL_SIZE))
}

impl CompactorState {
    /// No pass runs and none is asked for.
    pub fn is_idle(&self) -> bool {
        !self.pending.load(Ordering::SeqCst) && self.lock.try_lock().is_ok()
    }
}

/// What `sys.compact` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactReport {
    pub buckets: usize,
    pub snapshots: Vec<i64>,
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_read: i64,
    pub bytes_written: i64,
}

impl CompactReport {
    fn add(&mut self, r: &CompactResult) {
        self.buckets += 1;
        self.snapshots.extend(r.snapshot);
        self.files_before += r.files_before;
        self.files_after += r.files_after;
        self.bytes_read += r.bytes_read;
        self.bytes_written += r.bytes_written;
    }
}

/// `k = v, k2=v2` as partition folders name it: `k=v,k2=v2`.
fn normal_spec(spec: &str) -> String {
    spec.split(',')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => format!("{}={}", k.trim(), v.trim()),
            None => kv.trim().to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether background compaction is off (`write-only`).
fn write_only(table: &Table) -> bool {
    table.schema().core_options().write_only()
}

/// Compaction applies to primary-key tables (append tables have no sorted runs).
fn compacts(table: &Table) -> bool {
    table.schema().has_primary_key()
        && !write_only(table)
        && crate::storage::write::restriction::check_writable(table).is_ok()
}

/// Starts a background pass after a commit (needs a Tokio runtime).
pub(crate) fn after_commit(table: &Table) {
    if !compacts(table) {
        return;
    }
    let table = table.clone();
    tokio::spawn(async move {
        if let Err(e) = background(&table).await {
            tracing::warn!(table = %table.qualified_name(), "compaction failed: {e}");
        }
    });
}

/// Passes until no request is left; returns at once if another task is running them.
async fn background(table: &Table) -> Result<(), StorageError> {
    let state = table.state::<CompactorState>();
    state.pending.store(true, Ordering::SeqCst);
    loop {
        let Ok(lock) = state.lock.try_lock() else {
            return Ok(());
        };
        while state.pending.swap(false, Ordering::SeqCst) {
            pass(table).await?;
        }
        drop(lock);
        if !state.pending.load(Ordering::SeqCst) {
            return Ok(());
        }
    }
}

/// The policy's "now" (off-peak hours are read in UTC).
pub fn pick_time(table: &Table) -> PickTime {
    let millis = table.clock().now_millis();
    PickTime {
        epoch_millis: millis,
        local_hour: u32::try_from(millis.rem_euclid(86_400_000) / 3_600_000).unwrap_or(0),
    }
}

/// Compacts every bucket that changed since the compactor last looked, until none needs it
/// (the caller holds the compactor lock).
async fn pass(table: &Table) -> Result<Vec<CompactResult>, StorageError> {
    let mut table = table.clone();
    let opts = options_of(&table)?;
    let state = table.state::<CompactorState>();
    let total_buckets = table.schema().bucket();
    let mut done = Vec::new();
    for _ in 0..MAX_ROUNDS {
        // Compactions write in the newest schema: files written under a newer one than the
        // handle's would lose what the older layout lacks (see `CompactCommit`).
        if let Some(newer) = table.newer_schema().await? {
            table = table.with_schema(newer);
        }
        let table = &table;
        let Some(latest) = table.snapshots().latest().await? else {
            return Ok(done);
        };
        let live = table.live_files(&latest).await?;
        let changed: Vec<(BucketId, FileList)> = {
            let seen = state.seen.lock().expect("compactor lock");
            live.buckets()
                .filter(|(at, files)| seen.get(*at).is_none_or(|s| !Arc::ptr_eq(s, files)))
                .map(|(at, files)| (at.clone(), Arc::clone(files)))
                .collect()
        };
        let mut compacted = false;
        for (at, files) in changed {
            let plan = {
                let summaries: Vec<_> = files.iter().map(|f| summary(f)).collect();
                let runs = compact_policy::runs(&summaries);
                let mut states = state.states.lock().expect("compactor lock");
                let pick_state = states
                    .entry(at.clone())
                    .or_insert_with(|| PickState::restored(&summaries, &opts));
                compact_policy::pick(&runs, &opts, pick_state, pick_time(table))
            };
            let Some(plan) = plan else {
                state.seen.lock().expect("compactor lock").insert(at, files);
                continue;
            };
            let deletions = live.deletions(&at);
            let result = run(table, &at, total_buckets, &files, deletions, &plan, &opts).await?;
            compacted = true;
            done.push(result);
        }
        if !compacted {
            return Ok(done);
        }
    }
    tracing::warn!(table = %table.qualified_name(), "compactor gave up after {MAX_ROUNDS} rounds");
    Ok(done)
}

/// Runs one plan in the pool and counts it.
async fn run(
    table: &Table,
    at: &BucketId,
    total_buckets: i32,
    files: &[Arc<DataFileMeta>],
    deletions: Option<Arc<BucketDeletions>>,
    plan: &compact_policy::CompactPlan,
    opts: &CompactOptions,
) -> Result<CompactResult, StorageError> {
    let _permit = pool().acquire().await.expect("the pool is never closed");
    let result = table
        .compact_bucket(at, total_buckets, files, deletions, plan, opts)
        .await?;
    let state = table.state::<CompactorState>();
    if result.snapshot.is_some() {
        state.compactions.fetch_add(1, Ordering::Relaxed);
        state.bytes_read.fetch_add(
            u64::try_from(result.bytes_read).unwrap_or(0),
            Ordering::Relaxed,
        );
        state.bytes_written.fetch_add(
            u64::try_from(result.bytes_written).unwrap_or(0),
            Ordering::Relaxed,
        );
    } else {
        state.abandoned.fetch_add(1, Ordering::Relaxed);
    }
    tracing::debug!(
        table = %table.qualified_name(),
        bucket = at.1,
        reason = ?plan.reason,
        output_level = plan.output_level,
        files_before = result.files_before,
        files_after = result.files_after,
        snapshot = ?result.snapshot,
        "compacted"
    );
    Ok(result)
}

/// Makes a writer wait while a bucket it wrote (`touched`) has more sorted runs than the stop
/// trigger: compaction runs (in this task if none is running) until it is below. The first
/// look is at the write's `base` snapshot, whose live files are cached, so a commit far from
/// the trigger reads nothing more.
pub(crate) async fn stall_if_needed(
    table: &Table,
    touched: &HashSet<BucketId>,
    base: Option<&Snapshot>,
) {
    if !compacts(table) || touched.is_empty() {
        return;
    }
    let result = match base {
        Some(base) => over_trigger(table, touched, base)
            .await
            .map(|b| b.is_some()),
        None => Ok(true),
    };
    let result = match result {
        Ok(true) => stall(table, touched).await,
        other => other.map(|_| ()),
    };
    if let Err(e) = result {
        tracing::warn!(table = %table.qualified_name(), "compaction at a write stall failed: {e}");
    }
}

async fn stall(table: &Table, touched: &HashSet<BucketId>) -> Result<(), StorageError> {
    let opts = options_of(table)?;
    let state = table.state::<CompactorState>();
    let mut stalled = false;
    loop {
        let Some(latest) = table.snapshots().latest().await? else {
            return Ok(());
        };
        let Some(at) = over_trigger(table, touched, &latest).await? else {
            return Ok(());
        };
        if !stalled {
            stalled = true;
            state.stalls.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                table = %table.qualified_name(),
                bucket = at.1,
                stop_trigger = opts.stop_trigger,
                "write stall: the bucket has more sorted runs than the stop trigger; waiting for \
                 compaction"
            );
        }
        let _lock = state.lock.lock().await;
        if pass(table).await?.is_empty() {
            // Nothing could be compacted (e.g. every plan abandoned): do not spin.
            return Ok(());
        }
    }
}

/// A bucket of `touched` with more sorted runs than the stop trigger at `snapshot`, if any.
async fn over_trigger(
    table: &Table,
    touched: &HashSet<BucketId>,
    snapshot: &Snapshot,
) -> Result<Option<BucketId>, StorageError> {
    let opts = options_of(table)?;
    let live = table.live_files(snapshot).await?;
    Ok(touched
        .iter()
        .find(|at| {
            let summaries: Vec<_> = live.bucket(at).iter().map(|f| summary(f)).collect();
            compact_policy::should_stall(&compact_policy::runs(&summaries), &opts)
        })
        .cloned())
}

/// A full compaction of every bucket (of the partitions `partitions` names, if any: Paimon's
/// `k=v,k2=v2` specs): `CALL sys.compact`. Waits for a running pass first.
pub async fn compact_full(
    table: &Table,
    partitions: &[String],
) -> Result<CompactReport, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    if !table.schema().has_primary_key() {
        return Err(StorageError::Unsupported(format!(
            "table {} has no primary key: tarn compacts primary-key tables only",
            table.qualified_name()
        )));
    }
    let opts = options_of(table)?;
    let state = table.state::<CompactorState>();
    let _lock = state.lock.lock().await;
    let mut report = CompactReport::default();
    let Some(latest) = table.snapshots().latest().await? else {
        return Ok(report);
    };
    let live = table.live_files(&latest).await?;
    let total_buckets = table.schema().bucket();
    let specs: Vec<String> = partitions.iter().map(|p| normal_spec(p)).collect();
    let types = table.partition_types();
    let mut buckets: Vec<(BucketId, FileList)> = Vec::new();
    for (at, files) in live.buckets() {
        if !specs.is_empty() {
            let values = crate::storage::spec::binary_row::deserialize(&at.0, &types)?;
            let spec = table
                .partition_segments(&values, table.legacy_partition_name())
                .join(",");
            if !specs.contains(&spec) {
                continue;
            }
        }
        buckets.push((at.clone(), Arc::clone(files)));
    }
    buckets.sort_by(|a, b| a.0.cmp(&b.0));
    for (at, files) in buckets {
        let summaries: Vec<_> = files.iter().map(|f| summary(f)).collect();
        // Files holding deletes or deleted rows are rewritten without them.
        let deletions = live.deletions(&at);
        let deletes: HashSet<&str> = files
            .iter()
            .filter(|f| {
                f.delete_row_count.is_none_or(|n| n > 0)
                    || deletions
                        .as_ref()
                        .is_some_and(|d| d.get(&f.file_name).is_some())
            })
            .map(|f| f.file_name.as_str())
            .collect();
        let runs = compact_policy::runs(&summaries);
        let Some(plan) =
            compact_policy::pick_full(&runs, &opts, |f| deletes.contains(f.name.as_str()))
        else {
            continue;
        };
        let result = run(table, &at, total_buckets, &files, deletions, &plan, &opts).await?;
        report.add(&result);
    }
    Ok(report)
}

/// What the background compactor would do, now, for every bucket, waited for: Paimon's
/// `compact_strategy => 'minor'` (the policy's picks, level 0 pushed up in tables that need
/// lookups), where `compact_full` merges each bucket into one run.
pub async fn compact_minor(table: &Table) -> Result<CompactReport, StorageError> {
    crate::storage::write::restriction::check_writable(table)?;
    if !table.schema().has_primary_key() {
        return Err(StorageError::Unsupported(format!(
            "table {} has no primary key: tarn compacts primary-key tables only",
            table.qualified_name()
        )));
    }
    let state = table.state::<CompactorState>();
    let _lock = state.lock.lock().await;
    // Look at every bucket, not only those changed since the last pass.
    state.seen.lock().expect("compactor lock").clear();
    let mut report = CompactReport::default();
    for result in pass(table).await? {
        report.add(&result);
    }
    Ok(report)
}
