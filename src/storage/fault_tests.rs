//! Storage under failure: a fault-injecting object store ([`FaultyStore`]) under a warehouse,
//! and what each kind of failure becomes. The point is that errors keep their kind on the way
//! up — a failed write during a commit is an I/O error (never "corrupt metadata"), a deleted
//! data file is a missing file, a failed group-commit round reaches every transaction in it
//! as the round's own error — and that a failed commit loses nothing acknowledged.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

use crate::storage::commit::error::CommitError;
use crate::storage::commit::state::CommitState;
use crate::storage::meta::time_travel::VersionError;
use crate::storage::read::scan::ScanFilter;
use crate::storage::tests::{batch, schema};
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{StorageError, Table, Warehouse};

/// An operation of the store a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Put,
    Get,
    Head,
    List,
    Delete,
}

/// One injected fault: `op` on paths containing `path_part` fails with an I/O error.
#[derive(Debug, Clone)]
struct Fault {
    op: Op,
    path_part: String,
}

/// The faults of a [`FaultyStore`] and how many operations they failed.
#[derive(Debug, Default)]
struct Faults {
    active: Mutex<Vec<Fault>>,
    failed: AtomicUsize,
}

impl Faults {
    fn check(&self, op: Op, path: &str) -> object_store::Result<()> {
        let hit = self
            .active
            .lock()
            .unwrap()
            .iter()
            .any(|f| f.op == op && path.contains(&f.path_part));
        if !hit {
            return Ok(());
        }
        self.failed.fetch_add(1, Ordering::SeqCst);
        Err(object_store::Error::Generic {
            store: "FaultyStore",
            source: Box::new(std::io::Error::other(format!(
                "injected fault: {op:?} {path}"
            ))),
        })
    }
}

/// Something that happens just before the first put of a path containing `path_part` (another
/// writer committing at exactly that moment).
struct BeforePut {
    path_part: String,
    run: Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>,
}

impl fmt::Debug for BeforePut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BeforePut({})", self.path_part)
    }
}

/// An in-memory store that fails chosen operations on chosen paths with a generic I/O error
/// (what a network or disk failure looks like through object_store), until healed.
#[derive(Debug, Default)]
pub(crate) struct FaultyStore {
    inner: Arc<InMemory>,
    faults: Arc<Faults>,
    before_put: Mutex<Option<BeforePut>>,
}

impl FaultyStore {
    /// Makes `op` fail on every path containing `path_part`.
    pub(crate) fn fail(&self, op: Op, path_part: &str) {
        self.faults.active.lock().unwrap().push(Fault {
            op,
            path_part: path_part.to_owned(),
        });
    }

    /// Runs `run` (once) just before the next put of a path containing `path_part`.
    pub(crate) fn before_put(
        &self,
        path_part: &str,
        run: impl FnOnce() -> BoxFuture<'static, ()> + Send + 'static,
    ) {
        *self.before_put.lock().unwrap() = Some(BeforePut {
            path_part: path_part.to_owned(),
            run: Box::new(run),
        });
    }

    /// Removes every fault: the store works again.
    pub(crate) fn heal(&self) {
        self.faults.active.lock().unwrap().clear();
    }

    /// How many operations failed.
    pub(crate) fn failures(&self) -> usize {
        self.faults.failed.load(Ordering::SeqCst)
    }

    /// The store without faults (to change files behind the warehouse's back).
    pub(crate) fn inner(&self) -> &InMemory {
        &self.inner
    }

    fn check(&self, op: Op, path: &str) -> object_store::Result<()> {
        self.faults.check(op, path)
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.check(Op::Put, location.as_ref())?;
        let before = {
            let mut slot = self.before_put.lock().unwrap();
            match &*slot {
                Some(b) if location.as_ref().contains(&b.path_part) => slot.take(),
                _ => None,
            }
        };
        if let Some(before) = before {
            (before.run)().await;
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.check(Op::Put, location.as_ref())?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let op = if options.head { Op::Head } else { Op::Get };
        self.check(op, location.as_ref())?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.check(Op::Get, location.as_ref())?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let (faults, inner) = (Arc::clone(&self.faults), Arc::clone(&self.inner));
        locations
            .then(move |location| {
                let (faults, inner) = (Arc::clone(&faults), Arc::clone(&inner));
                async move {
                    let location = location?;
                    faults.check(Op::Delete, location.as_ref())?;
                    inner.delete(&location).await?;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let at = prefix.map_or("", |p| p.as_ref());
        match self.check(Op::List, at) {
            Ok(()) => self.inner.list(prefix),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.check(Op::List, prefix.map_or("", |p| p.as_ref()))?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.check(Op::Put, to.as_ref())?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.check(Op::Put, to.as_ref())?;
        self.inner.rename_opts(from, to, options).await
    }
}

/// A warehouse on a [`FaultyStore`] with table `public.t` of [`schema`] (`options` added;
/// `write-only`, so that no compaction adds snapshots of its own).
pub(crate) async fn faulty_table(options: &[(&str, &str)]) -> (Arc<FaultyStore>, Table) {
    let store = Arc::new(FaultyStore::default());
    let wh = Warehouse::with_store(Arc::clone(&store) as Arc<dyn ObjectStore>);
    wh.create_database("public").await.unwrap();
    let mut options = options.to_vec();
    options.push(("write-only", "true"));
    let t = wh
        .create_table("public", "t", schema(&options))
        .await
        .unwrap();
    (store, t)
}

/// Table `public.t` as a new process would open it: nothing of it cached.
async fn reopened(store: &Arc<FaultyStore>) -> Table {
    Warehouse::with_store(Arc::clone(store) as Arc<dyn ObjectStore>)
        .open_table("public", "t")
        .await
        .unwrap()
}

/// A transaction writing `ids` (value `v<id>`, partition `d`), not yet committed.
async fn transaction(t: &Table, ids: Range<i64>) -> TableWrite {
    let values: Vec<String> = ids.clone().map(|i| format!("v{i}")).collect();
    let rows: Vec<(i64, &str, &str)> = ids
        .zip(&values)
        .map(|(i, v)| (i, v.as_str(), "d"))
        .collect();
    let mut w = TableWrite::new(t.clone(), WriteMode::Insert).await.unwrap();
    for chunk in rows.chunks(1000) {
        w.write(batch(t, chunk)).await.unwrap();
    }
    w
}

async fn commit(t: &Table, ids: Range<i64>) -> Result<Option<i64>, StorageError> {
    crate::storage::commit::commit_write(transaction(t, ids).await).await
}

/// The ids the table holds at `snapshot` (the latest when `None`), read through planning and
/// merge-on-read; the first error on the way if there is one.
async fn ids_at(t: &Table, snapshot: Option<i64>) -> Result<BTreeSet<i64>, StorageError> {
    let snapshot = match snapshot {
        Some(id) => Some(t.snapshots().get(id).await?.expect("snapshot exists")),
        None => None,
    };
    let mut out = BTreeSet::new();
    for b in crate::storage::testkit::try_batches_at(t, snapshot.as_ref(), &[0]).await? {
        out.extend(
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    Ok(out)
}

/// A commit whose write of the snapshot file fails: the error a client gets (the wire test in
/// `server/error.rs` maps it). Small transactions commit through a group round.
pub(crate) async fn commit_with_failed_snapshot_put() -> StorageError {
    let (store, t) = faulty_table(&[("bucket", "1")]).await;
    commit(&t, 0..10).await.unwrap();
    store.fail(Op::Put, "snapshot/snapshot-");
    let err = commit(&t, 10..20).await.unwrap_err();
    assert!(store.failures() > 0, "the fault was hit");
    err
}

#[tokio::test]
async fn a_failed_put_in_a_group_commit_is_an_io_error_and_loses_nothing() {
    let (store, t) = faulty_table(&[("bucket", "2")]).await;
    assert_eq!(commit(&t, 0..100).await.unwrap(), Some(1));
    for path_part in ["snapshot/snapshot-", "manifest/manifest-list-", "/bucket-"] {
        store.fail(Op::Put, path_part);
        let err = commit(&t, 100..200).await.unwrap_err();
        store.heal();
        // The round's own error, shared with the transaction: an I/O failure, never Format.
        let StorageError::Commit(CommitError::Group(round)) = &err else {
            panic!("a group round's failure, got {err:?}");
        };
        assert!(
            matches!(round.as_ref(), StorageError::ObjectStore(_)),
            "{path_part}: {round:?}"
        );
        assert!(err.to_string().contains("injected fault"), "{err}");
        // The table is still at its previous snapshot, all of it readable.
        assert_eq!(t.snapshots().latest_id().await.unwrap(), Some(1));
        assert_eq!(ids_at(&t, None).await.unwrap(), (0..100).collect());
    }
    // The same transaction commits once the store works again; nothing acknowledged is lost.
    assert_eq!(commit(&t, 100..200).await.unwrap(), Some(2));
    assert_eq!(ids_at(&t, None).await.unwrap(), (0..200).collect());
    assert_eq!(ids_at(&t, Some(1)).await.unwrap(), (0..100).collect());
}

#[tokio::test]
async fn a_failed_put_in_a_commit_alone_is_an_io_error() {
    // A small write buffer spills runs to files: such a transaction commits alone, not in a
    // group round, and its error comes back as it is.
    let (store, t) = faulty_table(&[("bucket", "1"), ("write-buffer-size", "32kb")]).await;
    commit(&t, 0..100).await.unwrap();
    let w = transaction(&t, 100..20_100).await;
    store.fail(Op::Put, "manifest/manifest-list-");
    let err = crate::storage::commit::commit_write(w).await.unwrap_err();
    store.heal();
    // Not wrapped as a group round's error: it committed alone.
    assert!(matches!(err, StorageError::ObjectStore(_)), "{err:?}");
    assert_eq!(t.snapshots().latest_id().await.unwrap(), Some(1));
    assert_eq!(ids_at(&t, None).await.unwrap(), (0..100).collect());
}

#[tokio::test]
async fn a_failed_group_round_reaches_every_waiter_with_its_kind() {
    let (store, t) = faulty_table(&[("bucket", "2")]).await;
    commit(&t, 0..10).await.unwrap();
    // Hold the commit lock so that three transactions queue for one round.
    let state = t.state::<CommitState>();
    let lock = state.lock.lock().await;
    let mut waiters = Vec::new();
    for n in 1..=3 {
        let w = transaction(&t, n * 100..n * 100 + 10).await;
        waiters.push(tokio::spawn(crate::storage::commit::commit_write(w)));
    }
    while state.queue.lock().unwrap().len() < 3 {
        tokio::task::yield_now().await;
    }
    store.fail(Op::Put, "snapshot/snapshot-");
    drop(lock);
    let mut rounds: Vec<Arc<StorageError>> = Vec::new();
    for w in waiters {
        match w.await.unwrap().unwrap_err() {
            StorageError::Commit(CommitError::Group(round)) => {
                assert!(matches!(*round, StorageError::ObjectStore(_)), "{round:?}");
                rounds.push(round);
            }
            other => panic!("every waiter gets the round's error, got {other:?}"),
        }
    }
    assert!(
        rounds.iter().all(|r| Arc::ptr_eq(r, &rounds[0])),
        "one round held all three"
    );
    store.heal();
    assert_eq!(ids_at(&t, None).await.unwrap(), (0..10).collect());
}

/// A round that lost the race for its snapshot id to another writer checks its transactions
/// again; when one of them conflicts with what the other writer committed, that one gets its
/// own error and the others of the round a conflict to retry — not its duplicate key.
#[tokio::test]
async fn a_round_failed_by_one_transaction_fails_the_others_as_a_conflict() {
    let (store, t) = faulty_table(&[("bucket", "1"), ("write-buffer-size", "32kb")]).await;
    commit(&t, 0..10).await.unwrap();
    // A transaction that spilled runs and rolled back: this process's sequence numbers are now
    // far above what the table holds, so the other writer's numbers stay below the round's.
    transaction(&t, 1000..21_000).await.abort().await;
    let other = reopened(&store).await;
    store.before_put("snapshot/snapshot-", move || {
        Box::pin(async move {
            commit(&other, 500..501).await.unwrap();
        })
    });
    let state = t.state::<CommitState>();
    let lock = state.lock.lock().await;
    let mut waiters = Vec::new();
    for (n, ids) in [500..501, 600..610].into_iter().enumerate() {
        let w = transaction(&t, ids).await;
        waiters.push(tokio::spawn(crate::storage::commit::commit_write(w)));
        while state.queue.lock().unwrap().len() <= n {
            tokio::task::yield_now().await;
        }
    }
    drop(lock);
    let duplicate = waiters.remove(0).await.unwrap().unwrap_err();
    assert!(
        matches!(duplicate, StorageError::DuplicateKey { .. }),
        "its own error: {duplicate:?}"
    );
    let other_txn = waiters.remove(0).await.unwrap().unwrap_err();
    let StorageError::Commit(CommitError::Group(round)) = &other_txn else {
        panic!("the round's error, got {other_txn:?}");
    };
    assert!(
        matches!(round.as_ref(), StorageError::CommitConflict(m)
            if m.contains("another transaction in the same group commit")),
        "{round:?}"
    );
    assert!(other_txn.conflict().is_some(), "retryable");
    let mut expected: BTreeSet<i64> = (0..10).collect();
    expected.insert(500);
    assert_eq!(ids_at(&t, None).await.unwrap(), expected);
}

#[tokio::test]
async fn a_deleted_data_file_is_a_missing_file() {
    let (store, t) = faulty_table(&[("bucket", "1")]).await;
    commit(&t, 0..10).await.unwrap();
    let data: Vec<Path> = store
        .inner()
        .list(None)
        .map_ok(|m| m.location)
        .try_filter(|p| futures::future::ready(p.as_ref().ends_with(".parquet")))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(data.len(), 1, "{data:?}");
    store.inner().delete(&data[0]).await.unwrap();
    match ids_at(&reopened(&store).await, None).await {
        Err(StorageError::MissingFile { path }) => {
            assert!(path.ends_with(data[0].filename().unwrap()), "{path}")
        }
        other => panic!("a missing file, got {other:?}"),
    }
}

#[tokio::test]
async fn an_io_failure_reading_a_data_file_is_not_corruption() {
    let (store, t) = faulty_table(&[("bucket", "1")]).await;
    commit(&t, 0..10).await.unwrap();
    store.fail(Op::Get, ".parquet");
    // Parquet wraps the store's error; it comes out as the I/O failure it is.
    let err = ids_at(&reopened(&store).await, None).await.unwrap_err();
    assert!(matches!(err, StorageError::ObjectStore(_)), "{err:?}");
    store.heal();
    assert_eq!(ids_at(&t, None).await.unwrap(), (0..10).collect());
}

#[tokio::test]
async fn a_snapshot_expiring_under_a_reader_is_a_race_not_damage() {
    let (store, t) = faulty_table(&[("bucket", "1")]).await;
    commit(&t, 0..10).await.unwrap();
    commit(&t, 10..20).await.unwrap();
    let t = reopened(&store).await;
    let first = t.snapshots().get(1).await.unwrap().unwrap();
    let list = t.manifest_path(&first.delta_manifest_list);
    let bytes = store
        .inner()
        .get(&list)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // A manifest list of a snapshot that is still there is missing: damage, 58P01.
    store.inner().delete(&list).await.unwrap();
    let err = t
        .plan_scan(Some(&first), &ScanFilter::default())
        .await
        .unwrap_err();
    assert!(err.is_missing_file(), "{err:?}");
    // The same with the snapshot expired since it was resolved (file gone, no tag holds it).
    store
        .inner()
        .delete(&t.snapshots().path_of(1))
        .await
        .unwrap();
    let err = t
        .plan_scan(Some(&first), &ScanFilter::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Version(VersionError::Expired { id: 1, .. })
        ),
        "{err:?}"
    );
    // A tag keeps a version's files: missing under a tag is damage again.
    t.tags().create("keep", &first, 0).await.unwrap();
    let err = t
        .plan_scan(Some(&first), &ScanFilter::default())
        .await
        .unwrap_err();
    assert!(err.is_missing_file(), "{err:?}");
    store.inner().put(&list, bytes.into()).await.unwrap();
    assert_eq!(ids_at(&t, None).await.unwrap(), (0..20).collect());
}

#[test]
fn foreign_errors_are_sorted_by_kind() {
    use parquet::errors::ParquetError;
    let not_found = || object_store::Error::NotFound {
        path: "db/t/bucket-0/f.parquet".to_owned(),
        source: Box::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
    };
    let generic = || object_store::Error::Generic {
        store: "S3",
        source: Box::new(std::io::Error::other("connection reset")),
    };
    assert!(matches!(
        StorageError::from(not_found()),
        StorageError::MissingFile { path } if path == "db/t/bucket-0/f.parquet"
    ));
    assert!(matches!(
        StorageError::from(generic()),
        StorageError::ObjectStore(_)
    ));
    // Under Parquet: the store's failure, not a damaged data file.
    assert!(StorageError::from(ParquetError::External(Box::new(not_found()))).is_missing_file());
    assert!(matches!(
        StorageError::from(ParquetError::External(Box::new(generic()))),
        StorageError::ObjectStore(_)
    ));
    assert!(matches!(
        StorageError::from(ParquetError::External(Box::new(std::io::Error::other(
            "eio"
        )))),
        StorageError::Io { .. }
    ));
    // What Parquet says about the bytes themselves is about the file.
    assert!(matches!(
        StorageError::from(ParquetError::General("bad footer".into())),
        StorageError::Parquet(_)
    ));
    assert!(matches!(
        StorageError::from(ParquetError::EOF("short".into())),
        StorageError::Parquet(_)
    ));
}

#[tokio::test]
async fn a_failed_task_is_an_internal_error() {
    let join = tokio::spawn(async { panic!("boom") }).await.unwrap_err();
    match StorageError::task_failed("a writer task", join) {
        StorageError::Internal(m) => assert_eq!(m, "a writer task panicked: boom"),
        other => panic!("{other:?}"),
    }
    let task = tokio::spawn(std::future::pending::<()>());
    task.abort();
    let join = task.await.unwrap_err();
    assert!(matches!(
        StorageError::task_failed("a writer task", join),
        StorageError::Internal(m) if m == "a writer task was cancelled"
    ));
}

#[test]
fn conflicts_are_seen_through_a_group_round() {
    let conflict = StorageError::CommitConflict("row 1".into());
    assert_eq!(conflict.conflict(), Some("row 1"));
    let grouped = StorageError::from(CommitError::Group(Arc::new(conflict)));
    assert_eq!(grouped.conflict(), Some("row 1"));
    let io = StorageError::from(CommitError::Group(Arc::new(StorageError::from(
        object_store::Error::Generic {
            store: "S3",
            source: "timeout".into(),
        },
    ))));
    assert_eq!(io.conflict(), None);
    assert_eq!(StorageError::from(CommitError::Unanswered).conflict(), None);
}
