//! A block's DDL and writes under a crash at every point of its COMMIT: the process "dies"
//! (its runtime and warehouse dropped) after each step, a new warehouse opens the same store
//! and commit log, settles the block, and the block is then wholly applied or not at all.

use std::sync::Arc;
use std::time::Duration;

use crate::storage::block_ddl::{BlockCommit, DdlChange, Settled};
use crate::storage::commit::commit_writes_in;
use crate::storage::commit::logged::FlushPolicy;
use crate::storage::fault_tests::{FaultyStore, Op};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::SchemaChange;
use crate::storage::spec::types::{PaimonType, TypeKind};
use crate::storage::testkit;
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{StorageError, Warehouse};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tarn-{what}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ))
}

fn policy() -> FlushPolicy {
    FlushPolicy {
        interval: Duration::from_secs(3600),
        bytes: usize::MAX,
    }
}

fn schema() -> TableSchema {
    testkit::partitioned_schema(PaimonType::nullable(TypeKind::BigInt), &[("bucket", "1")])
}

/// Where the COMMIT stops (the process dies right after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stop {
    /// The intent written, nothing else.
    Intent,
    /// The create written, the alter's schema file failed (an I/O error, not undone).
    HalfApplied,
    /// Every create and alter written.
    Applied,
    /// The writes committed (their log record durable), no decision.
    Written,
    /// The decision written, no drop done.
    Decided,
    /// Done.
    Finished,
}

/// The warehouse of a test: `v` (the version table, written once), `a` (altered by the block),
/// `d` (dropped by the block); the block creates `c` and upserts `v`'s row 1 to 2.
async fn setup(store: Arc<FaultyStore>, log: &std::path::Path) -> Warehouse {
    let wh = Warehouse::with_store(store);
    wh.create_database("public").await.unwrap();
    let wh = wh.with_commit_log(log.to_owned(), policy()).await.unwrap();
    for name in ["v", "a", "d"] {
        let t = wh.create_table("public", name, schema()).await.unwrap();
        testkit::upsert(&t, &[(1, 1i64, "p")]).await;
    }
    wh
}

async fn open(store: Arc<FaultyStore>, log: &std::path::Path) -> Warehouse {
    Warehouse::with_store(store)
        .with_commit_log(log.to_owned(), policy())
        .await
        .unwrap()
}

/// The block's changes: CREATE c, ALTER a ADD note, DROP d.
async fn changes(wh: &Warehouse) -> Vec<DdlChange> {
    let c = wh.pending_table("public", "c", schema()).await.unwrap();
    let a = wh.open_table("public", "a").await.unwrap();
    let add = SchemaChange::AddColumn {
        name: "note".into(),
        data_type: PaimonType::nullable(TypeKind::VarChar(10)),
        comment: None,
    };
    let next = wh.evolved(&a, &[add]).await.unwrap();
    assert_eq!(next.id, 1);
    let a = wh.pending_table("public", "a", next).await.unwrap();
    vec![
        DdlChange::Create { table: c },
        DdlChange::Alter { table: a, base: 0 },
        DdlChange::Drop {
            database: "public".into(),
            name: "d".into(),
        },
    ]
}

/// Runs the block's COMMIT up to `stop`; `writes`: whether it upserts `v`.
async fn commit_until(wh: &Warehouse, store: &FaultyStore, stop: Stop, writes: bool) {
    let changes = changes(wh).await;
    let write = if writes {
        let v = wh.open_table("public", "v").await.unwrap();
        let mut w = TableWrite::new(v.clone(), WriteMode::Upsert).await.unwrap();
        w.write(testkit::batch(&v, &[(1, 2i64, "p")]))
            .await
            .unwrap();
        Some(w)
    } else {
        None
    };
    let block = wh.begin_block(&changes, writes).await.unwrap();
    if stop == Stop::Intent {
        return;
    }
    if stop == Stop::HalfApplied {
        store.fail(Op::Put, "public.db/a/schema/schema-1");
        let e = block.apply().await.unwrap_err();
        // An I/O error stays one (never "corrupt").
        assert!(
            !matches!(e, StorageError::Format(_)) && e.conflict().is_none(),
            "{e:?}"
        );
        store.heal();
        assert!(wh.table_exists("public", "c").await.unwrap());
        return;
    }
    block.apply().await.unwrap();
    if stop == Stop::Applied {
        return;
    }
    match write {
        Some(w) => {
            commit_writes_in(vec![w], Some(block.id())).await.unwrap();
            assert!(block.writes_logged(), "the record went through the log");
        }
        None => block.decide().await.unwrap(),
    }
    if stop == Stop::Written {
        return;
    }
    block.decide().await.unwrap();
    if stop == Stop::Decided {
        return;
    }
    block.finish().await.unwrap();
}

/// What the warehouse shows: (c exists, a's schema id, d exists, v's value of row 1).
type Shown = (bool, Option<i64>, bool, i64);

async fn state(wh: &Warehouse) -> Shown {
    let v = wh.open_table("public", "v").await.unwrap();
    let latest = v.current_snapshot().await.unwrap().unwrap();
    let rows = testkit::rows_at(&v, &latest).await;
    (
        wh.table_exists("public", "c").await.unwrap(),
        wh.schema_id("public", "a").await.unwrap(),
        wh.table_exists("public", "d").await.unwrap(),
        rows[&("p".to_owned(), 1)],
    )
}

const BEFORE: Shown = (false, Some(0), true, 1);
const AFTER: Shown = (true, Some(1), false, 2);

fn crash_at(stop: Stop, writes: bool) -> (Vec<(String, Settled)>, Shown) {
    let log = temp_dir("block-ddl-log");
    let store = Arc::new(FaultyStore::default());
    runtime().block_on(async {
        let wh = setup(Arc::clone(&store), &log).await;
        commit_until(&wh, &store, stop, writes).await;
    });
    let out = runtime().block_on(async {
        let wh = open(Arc::clone(&store), &log).await;
        let settled = wh.recover_blocks().await.unwrap();
        // Settled once: a second start finds nothing.
        assert!(wh.recover_blocks().await.unwrap().is_empty());
        let (files, _) = wh
            .io()
            .list_dir(&object_store::path::Path::from("_tarn/ddl"))
            .await
            .unwrap();
        assert!(files.is_empty(), "intent and decision gone: {files:?}");
        (settled, state(&wh).await)
    });
    let _ = std::fs::remove_dir_all(&log);
    out
}

#[test]
fn a_crash_before_the_writes_commit_undoes_the_blocks_ddl() {
    for stop in [Stop::Intent, Stop::HalfApplied, Stop::Applied] {
        for writes in [true, false] {
            let (settled, state) = crash_at(stop, writes);
            assert_eq!(settled.len(), 1, "{stop:?}");
            assert_eq!(settled[0].1, Settled::Back, "{stop:?}");
            assert_eq!(state, BEFORE, "{stop:?} writes {writes}");
        }
    }
}

#[test]
fn a_crash_after_the_commit_point_finishes_the_blocks_ddl() {
    for stop in [Stop::Written, Stop::Decided] {
        for writes in [true, false] {
            let (settled, state) = crash_at(stop, writes);
            assert_eq!(settled.len(), 1, "{stop:?}");
            assert_eq!(settled[0].1, Settled::Forward, "{stop:?}");
            let expected = if writes {
                AFTER
            } else {
                (true, Some(1), false, 1)
            };
            assert_eq!(state, expected, "{stop:?} writes {writes}");
        }
    }
    let (settled, state) = crash_at(Stop::Finished, true);
    assert!(settled.is_empty());
    assert_eq!(state, AFTER);
}

/// The record holding the block's writes is flushed into `v` (and the log truncated as far
/// as it may) before the crash: the log keeps the record until the block is settled, so the
/// start still finds it. (With one segment nothing is truncated anyway; the hold is
/// `LogService::held`.)
#[test]
fn the_blocks_record_outlives_flushes_until_the_block_is_settled() {
    let log = temp_dir("block-ddl-flushed");
    let store = Arc::new(FaultyStore::default());
    runtime().block_on(async {
        let wh = setup(Arc::clone(&store), &log).await;
        commit_until(&wh, &store, Stop::Written, true).await;
        wh.commit_log().unwrap().flush_all().await.unwrap();
    });
    let (settled, state) = runtime().block_on(async {
        let wh = open(Arc::clone(&store), &log).await;
        (wh.recover_blocks().await.unwrap(), state(&wh).await)
    });
    let _ = std::fs::remove_dir_all(&log);
    assert_eq!(settled[0].1, Settled::Forward);
    assert_eq!(state, AFTER);
}

/// An I/O error while the DDL is written (no crash): undone at once, nothing left.
#[tokio::test]
async fn an_io_error_before_the_commit_point_is_undone_at_once() {
    let log = temp_dir("block-ddl-undo");
    let store = Arc::new(FaultyStore::default());
    let wh = setup(Arc::clone(&store), &log).await;
    let first = changes(&wh).await;
    let block = wh.begin_block(&first, false).await.unwrap();
    store.fail(Op::Put, "public.db/a/schema/schema-1");
    block.apply().await.unwrap_err();
    store.heal();
    block.undo().await.unwrap();
    assert_eq!(state(&wh).await, BEFORE);
    assert!(wh.recover_blocks().await.unwrap().is_empty());
    // The table can be altered again: nothing of the undone schema is cached.
    let again = changes(&wh).await;
    let block = wh.begin_block(&again, false).await.unwrap();
    block.apply().await.unwrap();
    block.decide().await.unwrap();
    block.finish().await.unwrap();
    assert_eq!(state(&wh).await, (true, Some(1), false, 1));
    let _ = std::fs::remove_dir_all(&log);
}

/// The block's new schemas already in use (another writer committed into the created table
/// after the crash point's files were written, before the start): rolled forward, never
/// undone under a commit that needs them.
#[test]
fn a_created_table_with_a_snapshot_is_never_undone() {
    let log = temp_dir("block-ddl-used");
    let store = Arc::new(FaultyStore::default());
    runtime().block_on(async {
        let wh = setup(Arc::clone(&store), &log).await;
        commit_until(&wh, &store, Stop::Applied, true).await;
        let c = wh.open_table("public", "c").await.unwrap();
        testkit::upsert(&c, &[(7, 7i64, "p")]).await;
    });
    let (settled, state) = runtime().block_on(async {
        let wh = open(Arc::clone(&store), &log).await;
        (wh.recover_blocks().await.unwrap(), state(&wh).await)
    });
    let _ = std::fs::remove_dir_all(&log);
    assert_eq!(settled[0].1, Settled::Forward);
    // The block's own write never committed (it was lost with the process).
    assert_eq!(state, (true, Some(1), false, 1));
}

/// A conflict found while writing the DDL (another engine altered `a` since the block read
/// it): the create already written is undone, the other engine's schema stays.
#[tokio::test]
async fn a_conflicting_alter_undoes_what_was_written_and_keeps_the_other_schema() {
    let log = temp_dir("block-ddl-conflict");
    let store = Arc::new(FaultyStore::default());
    let wh = setup(Arc::clone(&store), &log).await;
    let changes = changes(&wh).await;
    let block: BlockCommit = wh.begin_block(&changes, false).await.unwrap();
    let add = SchemaChange::AddColumn {
        name: "other".into(),
        data_type: PaimonType::nullable(TypeKind::BigInt),
        comment: None,
    };
    wh.alter_table("public", "a", vec![add]).await.unwrap();
    let e = block.apply().await.unwrap_err();
    assert!(e.conflict().is_some(), "{e:?}");
    block.undo().await.unwrap();
    let (c, a, d, v) = state(&wh).await;
    assert_eq!((c, a, d, v), (false, Some(1), true, 1));
    let a = wh.open_table("public", "a").await.unwrap();
    assert!(a.schema().fields.iter().any(|f| f.name == "other"));
    let _ = std::fs::remove_dir_all(&log);
}
