//! A table's committed, not yet flushed transactions, and the table's current snapshot.
//!
//! With the commit log on (`commit/logged.rs`), COMMIT is acknowledged once the transaction's
//! record is durable in the log, and a flusher writes the records into a Paimon snapshot
//! later. Until then the rows live here, as [`LoggedTxn`]s in log order, and every read of the
//! table lays them over the snapshot it reads — as in-memory runs whose sequence numbers are
//! above every file's (`LOGGED_SEQUENCE_BASE` + LSN) and below a transaction's own writes.
//!
//! A read must see a snapshot and the unflushed transactions *not* in it, never a flush's
//! transactions twice or not at all: [`Table::current_snapshot`] takes the table's current
//! snapshot and the unflushed transactions together, under one lock, and attaches them to the
//! snapshot ([`Snapshot::unflushed`], read back with [`cut_of`]). The current snapshot is the
//! latest this server committed or found: each call probes for the next snapshot file (one
//! existence check, not a listing), so other engines' commits show at the next statement; a
//! snapshot this server's flusher wrote but has not registered yet is not taken (its
//! transactions are still here).
//!
//! Transactions stay after their flush while a writer that read before them still runs: a
//! commit checks its keys against the transactions logged after what it read
//! ([`UnflushedState::logged_after`]), flushed or not.
//!
//! A transaction that wrote several tables is one log record whose part in each table is a
//! [`LoggedTxn`] naming the others (`partners`); [`UnflushedState::durable`] makes all parts
//! visible together, inside an odd [`publication epoch`](read_epoch). A read of several
//! tables whose captures carry different epochs may have seen such a transaction in one
//! table and not in another: the statement plans again (`PaimonScanExec::torn`, checked by
//! the session after planning).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::storage::StorageError;
use crate::storage::lsm::live_files::BucketId;
use crate::storage::lsm::memrun::MemRun;
use crate::storage::meta::snapshot::{Snapshot, Unflushed};
use crate::storage::meta::table::Table;
use crate::storage::meta::time_travel::VersionSpec;
use crate::storage::spec::datum::Datum;

/// Sequence numbers of unflushed runs when read: above any file's, below
/// [`MEM_SEQUENCE_BASE`](crate::storage::lsm::memrun::MEM_SEQUENCE_BASE) (a transaction's own).
pub const LOGGED_SEQUENCE_BASE: i64 = i64::MAX / 4;

/// A log position (the commit log's LSN).
pub type Lsn = u64;

/// One committed transaction's rows of one table, durable in the commit log.
#[derive(Debug)]
pub struct LoggedTxn {
    pub lsn: Lsn,
    /// When it committed (epoch millis).
    pub commit_millis: i64,
    /// One folded run per (partition, bucket) it wrote.
    pub runs: Vec<MemRun>,
    /// Its keys per bucket, encoded for conflict checks (`KeyEncoder`); empty for tables
    /// without a primary key.
    pub keys: HashMap<BucketId, HashSet<Vec<u8>>>,
    /// The states of the other tables the same transaction wrote (its parts there have the
    /// same LSN): made visible together with this one.
    pub partners: Vec<Weak<UnflushedState>>,
}

/// Publications of transactions that wrote several tables: odd while one is being made
/// visible, bumped twice by each (a seqlock; process-wide, so several warehouses in one
/// process only share retries).
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Serialises the publications of durable transactions across tables.
static PUBLISH: Mutex<()> = Mutex::new(());

/// The current publication epoch, once no multi-table publication is under way.
fn stable_epoch() -> u64 {
    loop {
        let e = EPOCH.load(Ordering::Acquire);
        if e.is_multiple_of(2) {
            return e;
        }
        std::thread::yield_now();
    }
}

impl LoggedTxn {
    /// The sequence number its rows read with.
    pub fn sequence(&self) -> i64 {
        LOGGED_SEQUENCE_BASE + i64::try_from(self.lsn).unwrap_or(i64::MAX / 8)
    }

    pub fn bytes(&self) -> usize {
        self.runs.iter().map(|r| r.bytes).sum()
    }
}

/// The unflushed transactions a read sees (attached to the snapshot it reads).
#[derive(Debug, Clone, Default)]
pub struct UnflushedCut {
    /// Oldest first.
    pub txns: Arc<Vec<Arc<LoggedTxn>>>,
    /// The log position the read is at: every transaction at or below it that is not in the
    /// snapshot is in `txns`.
    pub lsn: Lsn,
    /// The publication epoch the capture was made in (see the module docs).
    pub epoch: u64,
}

impl UnflushedCut {
    /// The runs of one (partition, bucket), oldest first, with their sequence numbers.
    pub fn runs_of(&self, partition: &[u8], bucket: i32) -> Vec<(i64, MemRun)> {
        let mut out = Vec::new();
        for t in self.txns.iter() {
            for r in &t.runs {
                if r.bucket == bucket && r.partition_bytes == partition {
                    out.push((t.sequence(), r.clone()));
                }
            }
        }
        out
    }

    /// Every (partition values, partition bytes, bucket) the transactions wrote.
    pub fn buckets(&self) -> Vec<(Vec<Datum>, Vec<u8>, i32)> {
        let mut seen: BTreeMap<(Vec<u8>, i32), Vec<Datum>> = BTreeMap::new();
        for t in self.txns.iter() {
            for r in &t.runs {
                seen.entry((r.partition_bytes.clone(), r.bucket))
                    .or_insert_with(|| r.partition.clone());
            }
        }
        seen.into_iter().map(|((b, k), v)| (v, b, k)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }
}

/// The cut `snapshot` was taken with, if [`Table::current_snapshot`] took it.
fn cut(snapshot: &Snapshot) -> Option<&UnflushedCut> {
    snapshot
        .unflushed
        .0
        .as_ref()
        .and_then(|a| a.downcast_ref::<UnflushedCut>())
}

/// The unflushed transactions `snapshot` was taken with, if any.
pub fn cut_of(snapshot: &Snapshot) -> Option<&UnflushedCut> {
    cut(snapshot).filter(|c| !c.is_empty())
}

/// The publication epoch `snapshot` was captured in (`None`: not by
/// [`Table::current_snapshot`], e.g. a past version).
pub fn read_epoch(snapshot: &Snapshot) -> Option<u64> {
    cut(snapshot).map(|c| c.epoch)
}

/// The log position `snapshot` was read at (0 without a commit log).
pub fn read_lsn(snapshot: Option<&Snapshot>) -> Lsn {
    snapshot.and_then(cut).map_or(0, |c| c.lsn)
}

/// A table's unflushed transactions and current snapshot ([`Table::state`]).
#[derive(Debug, Default)]
pub struct UnflushedState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The table's current snapshot as this server knows it (without a cut).
    known: Option<Snapshot>,
    /// Durable, visible, not flushed; oldest first.
    txns: Arc<Vec<Arc<LoggedTxn>>>,
    /// Logged but not yet durable: checked against by commits, read by nobody.
    in_flight: BTreeMap<Lsn, Arc<LoggedTxn>>,
    /// Flushed, kept for the conflict checks of writers that read before them.
    recent: VecDeque<Arc<LoggedTxn>>,
    /// The read positions of running writers (position → how many).
    readers: BTreeMap<Lsn, usize>,
    /// Snapshots this server's flushes wrote → the last LSN each holds.
    flushes: BTreeMap<i64, Lsn>,
    /// The highest LSN made visible.
    visible: Lsn,
    /// Every transaction at or below it is in a snapshot (or was erased by TRUNCATE): one
    /// that becomes durable later is not laid over it.
    floor: Lsn,
    /// The `commitUser` of this server's commits, once the commit log is on.
    own_user: Option<String>,
    /// When the latest snapshot was last looked up by the `LATEST` hint (epoch millis).
    hint_checked: i64,
    /// A flush (or TRUNCATE) of this server is publishing a snapshot that holds, or erases,
    /// some of `txns`: reads keep the snapshot they know until it is registered.
    flushing: bool,
}

/// How often a read looks past the next snapshot id for the latest (another engine's commits
/// and expiry may have left a gap after the one known).
const HINT_CHECK_MILLIS: i64 = 1000;

impl UnflushedState {
    /// A commit's transaction, logged and not yet durable: later commits check against it.
    pub fn log(&self, txn: Arc<LoggedTxn>) {
        let mut inner = self.inner.lock().expect("unflushed lock");
        inner.in_flight.insert(txn.lsn, txn);
    }

    /// The log is durable through `lsn`: every logged transaction up to it becomes visible —
    /// with its parts in other tables, at once for every reader (see the module docs).
    pub fn durable(self: &Arc<Self>, lsn: Lsn) {
        let _publish = PUBLISH.lock().expect("publish lock");
        let moved = self.make_visible(lsn);
        if moved.iter().all(|t| t.partners.is_empty()) {
            return;
        }
        EPOCH.fetch_add(1, Ordering::AcqRel);
        // The parts elsewhere, and theirs in turn (each is durable: the log is, through `lsn`).
        let partners = |t: &LoggedTxn| -> Vec<(Arc<UnflushedState>, Lsn)> {
            t.partners
                .iter()
                .filter_map(|p| p.upgrade().map(|p| (p, t.lsn)))
                .collect()
        };
        let mut work: Vec<_> = moved.iter().flat_map(|t| partners(t)).collect();
        while let Some((state, lsn)) = work.pop() {
            for t in state.make_visible(lsn) {
                work.extend(partners(&t));
            }
        }
        EPOCH.fetch_add(1, Ordering::AcqRel);
    }

    /// Moves the logged transactions through `lsn` to the visible ones; returns them.
    fn make_visible(&self, lsn: Lsn) -> Vec<Arc<LoggedTxn>> {
        let mut inner = self.inner.lock().expect("unflushed lock");
        let rest = inner.in_flight.split_off(&(lsn + 1));
        let done = std::mem::replace(&mut inner.in_flight, rest);
        if done.is_empty() {
            return Vec::new();
        }
        let floor = inner.floor;
        let moved: Vec<Arc<LoggedTxn>> = done.into_values().filter(|t| t.lsn > floor).collect();
        let mut txns: Vec<Arc<LoggedTxn>> = inner.txns.as_ref().clone();
        txns.extend(moved.iter().cloned());
        inner.visible = inner.visible.max(lsn);
        inner.txns = Arc::new(txns);
        moved
    }

    /// A logged transaction whose record never became durable (the log failed).
    pub fn drop_failed(&self, lsn: Lsn) {
        self.inner
            .lock()
            .expect("unflushed lock")
            .in_flight
            .remove(&lsn);
    }

    /// Every transaction logged after `lsn` (visible, in flight or flushed but kept): what a
    /// writer that read at `lsn` must not conflict with.
    pub fn logged_after(&self, lsn: Lsn) -> Vec<Arc<LoggedTxn>> {
        let inner = self.inner.lock().expect("unflushed lock");
        inner
            .recent
            .iter()
            .chain(inner.txns.iter())
            .chain(inner.in_flight.values())
            .filter(|t| t.lsn > lsn)
            .cloned()
            .collect()
    }

    /// The table is dropped: its unflushed transactions, visible or in flight, are gone, and
    /// a flush finds nothing to write (called under the table's commit lock).
    pub fn erase_all(&self) {
        let mut inner = self.inner.lock().expect("unflushed lock");
        let last = inner
            .txns
            .last()
            .map(|t| t.lsn)
            .into_iter()
            .chain(inner.in_flight.keys().next_back().copied())
            .max();
        if let Some(last) = last {
            inner.floor = inner.floor.max(last);
        }
        inner.txns = Arc::default();
        inner.in_flight.clear();
    }

    /// The `commitUser` of this server's commits (set when the commit log is on).
    pub fn set_own_user(&self, user: &str) {
        self.inner.lock().expect("unflushed lock").own_user = Some(user.to_owned());
    }

    /// The visible transactions, for a flush.
    pub fn to_flush(&self) -> Arc<Vec<Arc<LoggedTxn>>> {
        Arc::clone(&self.inner.lock().expect("unflushed lock").txns)
    }

    /// A flush or TRUNCATE is about to publish (under the commit lock); until
    /// [`flushed`](Self::flushed) or [`flush_failed`](Self::flush_failed), reads do not take
    /// this server's new snapshots.
    pub fn begin_flush(&self) {
        self.inner.lock().expect("unflushed lock").flushing = true;
    }

    /// The flush published nothing.
    pub fn flush_failed(&self) {
        self.inner.lock().expect("unflushed lock").flushing = false;
    }

    /// The flush of every transaction through `lsn` was published as `snapshot`.
    pub fn flushed(&self, lsn: Lsn, snapshot: &Snapshot) {
        let mut inner = self.inner.lock().expect("unflushed lock");
        let (flushed, kept): (Vec<_>, Vec<_>) =
            inner.txns.iter().cloned().partition(|t| t.lsn <= lsn);
        inner.txns = Arc::new(kept);
        inner.floor = inner.floor.max(lsn);
        inner.flushing = false;
        inner.recent.extend(flushed);
        inner.flushes.insert(snapshot.id, lsn);
        if inner.known.as_ref().is_none_or(|k| k.id < snapshot.id) {
            inner.known = Some(without_cut(snapshot));
        }
        inner.trim();
    }

    /// The commit time of the oldest visible unflushed transaction.
    pub fn oldest_millis(&self) -> Option<i64> {
        let inner = self.inner.lock().expect("unflushed lock");
        inner.txns.first().map(|t| t.commit_millis)
    }

    /// The LSN of the oldest unflushed transaction, visible or in flight.
    pub fn oldest_lsn(&self) -> Option<Lsn> {
        let inner = self.inner.lock().expect("unflushed lock");
        let visible = inner.txns.first().map(|t| t.lsn);
        let in_flight = inner.in_flight.keys().next().copied();
        visible.into_iter().chain(in_flight).min()
    }

    /// Bytes of the visible unflushed transactions.
    pub fn unflushed_bytes(&self) -> usize {
        let inner = self.inner.lock().expect("unflushed lock");
        inner.txns.iter().map(|t| t.bytes()).sum()
    }

    /// The newest transaction logged, durable or not.
    pub fn last_lsn(&self) -> Option<Lsn> {
        let inner = self.inner.lock().expect("unflushed lock");
        let visible = inner.txns.last().map(|t| t.lsn);
        let in_flight = inner.in_flight.keys().next_back().copied();
        visible.into_iter().chain(in_flight).max()
    }

    /// Whether `id` is a snapshot this server's flush wrote.
    pub fn is_flush(&self, id: i64) -> bool {
        self.inner
            .lock()
            .expect("unflushed lock")
            .flushes
            .contains_key(&id)
    }

    /// This server published `snapshot` (any commit): it is the table's current one.
    pub fn published(&self, snapshot: &Snapshot) {
        let mut inner = self.inner.lock().expect("unflushed lock");
        if inner.known.as_ref().is_none_or(|k| k.id < snapshot.id) {
            inner.known = Some(without_cut(snapshot));
        }
    }

    /// Forgets the current snapshot (a rollback moved the table back): the next read looks.
    pub fn forget_current(&self) {
        self.inner.lock().expect("unflushed lock").known = None;
    }

    /// Registers a writer reading at `lsn`: transactions logged after it are kept for its
    /// conflict check until the returned pin drops.
    pub fn pin_reader(self: &Arc<Self>, lsn: Lsn) -> ReaderPin {
        *self
            .inner
            .lock()
            .expect("unflushed lock")
            .readers
            .entry(lsn)
            .or_default() += 1;
        ReaderPin {
            state: Arc::clone(self),
            lsn,
        }
    }
}

impl Inner {
    /// Drops flushed transactions no running writer can conflict with.
    fn trim(&mut self) {
        let oldest = self.readers.keys().next().copied().unwrap_or(self.visible);
        while self.recent.front().is_some_and(|t| t.lsn <= oldest) {
            self.recent.pop_front();
        }
        // Flush ids are only asked about for snapshots after a writer's base: keep a few.
        while self.flushes.len() > 1024 {
            self.flushes.pop_first();
        }
    }
}

/// Keeps the transactions logged after a writer's read position (see
/// [`UnflushedState::pin_reader`]).
#[derive(Debug)]
pub struct ReaderPin {
    state: Arc<UnflushedState>,
    lsn: Lsn,
}

impl Drop for ReaderPin {
    fn drop(&mut self) {
        let mut inner = self.state.inner.lock().expect("unflushed lock");
        if let Some(n) = inner.readers.get_mut(&self.lsn) {
            *n -= 1;
            if *n == 0 {
                inner.readers.remove(&self.lsn);
            }
        }
        inner.trim();
    }
}

fn without_cut(snapshot: &Snapshot) -> Snapshot {
    let mut s = snapshot.clone();
    s.unflushed = Unflushed::default();
    s
}

impl Table {
    /// The version `spec` names, for a read: a point in time also sees this server's
    /// unflushed commits made at or before it (exact inside the unflushed window); snapshot
    /// ids and tags name snapshots only (once flushed, commits have their flush's
    /// granularity).
    pub async fn resolve_read_version(&self, spec: &VersionSpec) -> Result<Snapshot, StorageError> {
        let VersionSpec::TimestampMillis(at) = spec else {
            return self.resolve_version(spec).await;
        };
        let Some(current) = self.current_snapshot().await? else {
            return self.resolve_version(spec).await;
        };
        let Some(cut) = cut_of(&current) else {
            return self.resolve_version(spec).await;
        };
        let txns: Vec<Arc<LoggedTxn>> = cut
            .txns
            .iter()
            .filter(|t| t.commit_millis <= *at)
            .cloned()
            .collect();
        if txns.is_empty() {
            return self.resolve_version(spec).await;
        }
        let (lsn, epoch) = (cut.lsn, cut.epoch);
        // Never past the current snapshot: a newer one of this server's may hold `txns`.
        let mut snapshot = match current.time_millis <= *at {
            true => current,
            false => {
                let s = self.resolve_version(spec).await?;
                if s.id > current.id { current } else { s }
            }
        };
        snapshot.unflushed = Unflushed(Some(Arc::new(UnflushedCut {
            txns: Arc::new(txns),
            lsn,
            epoch,
        })));
        Ok(snapshot)
    }

    /// The table's current snapshot (`None`: it has none) with the unflushed transactions
    /// not in it attached (see the module docs).
    pub async fn current_snapshot(&self) -> Result<Option<Snapshot>, StorageError> {
        let state = self.state::<UnflushedState>();
        'capture: loop {
            let now = self.clock().now_millis();
            let epoch = stable_epoch();
            let (known, txns, visible, look_far) = {
                let mut inner = state.inner.lock().expect("unflushed lock");
                let look_far = now - inner.hint_checked >= HINT_CHECK_MILLIS;
                if look_far {
                    inner.hint_checked = now;
                }
                (
                    inner.known.clone(),
                    Arc::clone(&inner.txns),
                    inner.visible,
                    look_far,
                )
            };
            if EPOCH.load(Ordering::Acquire) != epoch {
                // A multi-table publication ran meanwhile: it may be half in what was taken.
                continue 'capture;
            }
            let known_id = known.as_ref().map_or(0, |k| k.id);
            // Whether a snapshot found on disk, newer than the known one, may be taken: not
            // while a flush or TRUNCATE of this server publishes (it may be that one, holding
            // some of `txns`); and if the known one moved meanwhile, capture again.
            let may_take = |found: &Snapshot| -> Option<bool> {
                let inner = state.inner.lock().expect("unflushed lock");
                if inner.known.as_ref().map_or(0, |k| k.id) != known_id {
                    return None;
                }
                Some(!(inner.flushing && inner.own_user.as_deref() == Some(&found.commit_user)))
            };
            let mut current = known;
            if current.is_none() || look_far {
                // The latest by the hint (first use, or now and then: other engines' commits
                // after a gap of expired snapshots are found too).
                // (An expired or unreadable one is left to the probe below.)
                if let Some(l) = self.snapshots().latest_id().await?
                    && l > known_id + 1
                    && let Some(latest) = self.snapshots().get(l).await?
                {
                    match may_take(&latest) {
                        None => continue 'capture,
                        Some(true) => current = Some(latest),
                        // A flush of this server publishing: the one before it, if it is
                        // still there, else what is known.
                        Some(false) => {
                            if let Some(before) = self.snapshots().get(l - 1).await?
                                && before.id > known_id
                                && may_take(&before) == Some(true)
                            {
                                current = Some(before);
                            }
                        }
                    }
                }
            }
            // Commits since the one known, each one file further.
            loop {
                let next = current.as_ref().map_or(1, |s| s.id + 1);
                let Some(found) = self.snapshots().get(next).await? else {
                    break;
                };
                match may_take(&found) {
                    None => continue 'capture,
                    Some(true) => current = Some(found),
                    Some(false) => break,
                }
            }
            if let Some(c) = &current {
                let mut inner = state.inner.lock().expect("unflushed lock");
                if inner.known.as_ref().map_or(0, |k| k.id) == known_id && c.id > known_id {
                    inner.known = Some(c.clone());
                }
            }
            return Ok(current.map(|mut s| {
                s.unflushed = Unflushed(Some(Arc::new(UnflushedCut {
                    txns,
                    lsn: visible,
                    epoch,
                })));
                s
            }));
        }
    }
}
