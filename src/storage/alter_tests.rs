//! `Warehouse::alter_table` and `rename_table` end to end: rows written before and after each
//! kind of change read through the read path by field id, commits across a change (stale
//! handles, group rounds, the commit log and its replay), concurrent and raced ALTERs, and
//! renaming a table's folder on a local warehouse.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, RecordBatch, StringArray};
use arrow::datatypes::DataType;
use arrow::util::display::array_value_to_string;
use object_store::{ObjectStore, PutOptions};

use crate::storage::commit::commit_write;
use crate::storage::commit::logged::{FlushPolicy, table_key};
use crate::storage::commit::state::CommitState;
use crate::storage::fault_tests::FaultyStore;
use crate::storage::lsm::unflushed::UnflushedState;
use crate::storage::meta::table::schema_path;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::{SchemaChange, SchemaChangeError, evolve};
use crate::storage::spec::types::{PaimonType, parse_sql_type};
use crate::storage::testkit;
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{StorageError, Table, Warehouse, WarehouseLocation};

fn ty(text: &str) -> PaimonType {
    parse_sql_type(text).unwrap()
}

/// `(id BIGINT NOT NULL PRIMARY KEY, qty INT, name STRING, score DOUBLE)`, one bucket.
fn orders() -> TableSchema {
    testkit::keyed_schema(
        &[
            ("qty", ty("INT")),
            ("name", ty("STRING")),
            ("score", ty("DOUBLE")),
        ],
        &[("bucket", "1")],
    )
}

fn add(name: &str, t: &str) -> SchemaChange {
    SchemaChange::AddColumn {
        name: name.into(),
        data_type: ty(t),
        comment: None,
    }
}

type Row<'a> = &'a [Option<&'a str>];

/// `rows` in `t`'s columns, each value given as text (cast to the column's type), `None` NULL.
fn batch(t: &Table, rows: &[Row<'_>]) -> RecordBatch {
    // Nullable, as the query layer's batches are: NOT NULL is the write's to check.
    let fields: Vec<_> = testkit::arrow_schema(t.schema())
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| {
            let text = StringArray::from(rows.iter().map(|r| r[c]).collect::<Vec<_>>());
            arrow::compute::cast(&text, f.data_type()).unwrap()
        })
        .collect();
    RecordBatch::try_new(schema, columns).unwrap()
}

/// Upserts `rows` through `t` in one transaction; its snapshot, if it made one.
async fn try_put(t: &Table, rows: &[Row<'_>]) -> Result<Option<i64>, StorageError> {
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await?;
    w.write(batch(t, rows)).await?;
    commit_write(w).await
}

/// Upserts `rows` into `public.<name>` as it is now.
async fn put(wh: &Warehouse, name: &str, rows: &[Row<'_>]) {
    let t = wh.open_table("public", name).await.unwrap();
    try_put(&t, rows).await.unwrap();
}

/// The column names of `public.<name>` and its rows, each value as text (`NULL`), in key
/// order, read as a query reads them.
async fn read(wh: &Warehouse, name: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let t = wh.open_table("public", name).await.unwrap();
    let names = t.schema().fields.iter().map(|f| f.name.clone()).collect();
    let all: Vec<usize> = (0..t.schema().fields.len()).collect();
    let mut rows = Vec::new();
    for b in testkit::batches_at(&t, None, &all).await {
        for i in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| match c.is_null(i) {
                        true => "NULL".to_owned(),
                        false => array_value_to_string(c, i).unwrap(),
                    })
                    .collect(),
            );
        }
    }
    (names, rows)
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|v| (*v).to_owned()).collect())
        .collect()
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn temp_dir(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tarn-{what}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ))
}

#[tokio::test]
async fn rows_read_by_field_id_across_every_kind_of_change() {
    let (wh, _) = testkit::create(orders()).await;
    put(
        &wh,
        "t",
        &[
            &[Some("1"), Some("10"), Some("a"), Some("1.5")],
            &[Some("2"), Some("20"), Some("b"), None],
        ],
    )
    .await;

    // ADD COLUMN: rows written before read NULL there.
    let s = wh
        .alter_table("public", "t", vec![add("note", "STRING")])
        .await
        .unwrap();
    assert_eq!(
        (s.id, s.field("note").unwrap().id, s.highest_field_id),
        (1, 4, 4)
    );
    put(
        &wh,
        "t",
        &[&[Some("3"), Some("30"), Some("c"), Some("3.5"), Some("n3")]],
    )
    .await;
    assert_eq!(
        read(&wh, "t").await,
        (
            names(&["id", "qty", "name", "score", "note"]),
            strings(&[
                &["1", "10", "a", "1.5", "NULL"],
                &["2", "20", "b", "NULL", "NULL"],
                &["3", "30", "c", "3.5", "n3"],
            ])
        )
    );

    // RENAME COLUMN: the data stays with the field id.
    let rename = SchemaChange::RenameColumn {
        name: "name".into(),
        new_name: "label".into(),
    };
    let s = wh.alter_table("public", "t", vec![rename]).await.unwrap();
    assert_eq!((s.id, s.field("label").unwrap().id), (2, 2));
    let (columns, rows) = read(&wh, "t").await;
    assert_eq!(columns, names(&["id", "qty", "label", "score", "note"]));
    assert_eq!(rows[0][2], "a");

    // ALTER COLUMN TYPE (widening): older files' values convert.
    let widen = SchemaChange::UpdateColumnType {
        name: "qty".into(),
        data_type: ty("BIGINT"),
    };
    wh.alter_table("public", "t", vec![widen]).await.unwrap();
    put(
        &wh,
        "t",
        &[&[Some("4"), Some("5000000000"), Some("d"), None, None]],
    )
    .await;
    let t = wh.open_table("public", "t").await.unwrap();
    let b = testkit::batches_at(&t, None, &[1]).await;
    assert_eq!(b[0].column(0).data_type(), &DataType::Int64);
    let (_, rows) = read(&wh, "t").await;
    let qty: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(qty, ["10", "20", "30", "5000000000"]);

    // DROP COLUMN: gone from every row.
    let drop = SchemaChange::DropColumn {
        name: "score".into(),
    };
    let s = wh.alter_table("public", "t", vec![drop]).await.unwrap();
    assert_eq!((s.id, s.highest_field_id), (4, 4));
    // A newer version of a row written under the first schema merges with it.
    put(
        &wh,
        "t",
        &[&[Some("1"), Some("11"), Some("a2"), Some("n1")]],
    )
    .await;
    assert_eq!(
        read(&wh, "t").await,
        (
            names(&["id", "qty", "label", "note"]),
            strings(&[
                &["1", "11", "a2", "n1"],
                &["2", "20", "b", "NULL"],
                &["3", "30", "c", "n3"],
                &["4", "5000000000", "d", "NULL"],
            ])
        )
    );
    // Snapshots name the schema they were committed under; every version stays readable.
    let t = wh.open_table("public", "t").await.unwrap();
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    assert_eq!(latest.schema_id, 4);
    for id in 0..=4 {
        assert_eq!(t.schema_by_id(id).await.unwrap().id, id);
    }
    assert_eq!(
        t.schema_by_id(0).await.unwrap().field("name").unwrap().id,
        2
    );
}

/// Row `id` of `t` through a read by key (pages decoded once stay cached); the batch's
/// value columns.
async fn read_by_key(t: &Table, id: i64) -> RecordBatch {
    use crate::storage::read::scan::ScanFilter;
    use crate::storage::spec::datum::Datum;
    use crate::storage::spec::predicate::Predicate;
    use futures::TryStreamExt;
    let filter = ScanFilter {
        partition: None,
        key: Some(Predicate::In {
            column: "id".into(),
            values: vec![Datum::BigInt(id)],
        }),
    };
    let keys = filter
        .pinned_keys(&t.schema().trimmed_primary_keys())
        .unwrap();
    let query = Arc::new(t.key_query(keys).unwrap());
    let all: Vec<usize> = (0..t.schema().fields.len()).collect();
    let layout = t.read_layout(&all);
    let mut batches = Vec::new();
    for split in t.plan_key_scan(None, &filter).await.unwrap().splits {
        let b: Vec<RecordBatch> = t
            .read_split_keys(&split, &layout, None, &query)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        batches.extend(b);
    }
    let columns: Vec<usize> = (layout.value_offset()..layout.value_offset() + all.len()).collect();
    let batch = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    batch.project(&columns).unwrap()
}

#[tokio::test]
async fn reads_by_key_after_a_rename_carry_the_new_name() {
    let (wh, _) = testkit::create(orders()).await;
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let t = wh.open_table("public", "t").await.unwrap();
    let before = read_by_key(&t, 1).await;
    assert_eq!(before.schema().field(2).name(), "name");
    let rename = SchemaChange::RenameColumn {
        name: "name".into(),
        new_name: "label".into(),
    };
    wh.alter_table("public", "t", vec![rename]).await.unwrap();
    let t = wh.open_table("public", "t").await.unwrap();
    let after = read_by_key(&t, 1).await;
    assert_eq!(after.schema().field(2).name(), "label");
    assert_eq!(array_value_to_string(after.column(2), 0).unwrap(), "a");
}

#[tokio::test]
async fn defaults_comments_and_nullability_are_written() {
    let (wh, _) = testkit::create(orders()).await;
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let s = wh
        .alter_table(
            "public",
            "t",
            vec![
                SchemaChange::UpdateColumnDefault {
                    name: "name".into(),
                    default: Some("web".into()),
                },
                SchemaChange::UpdateColumnComment {
                    name: "qty".into(),
                    comment: Some("pieces".into()),
                },
                SchemaChange::UpdateComment {
                    comment: Some("orders".into()),
                },
                SchemaChange::UpdateColumnNullability {
                    name: "qty".into(),
                    nullable: false,
                },
            ],
        )
        .await
        .unwrap();
    let t = wh.open_table("public", "t").await.unwrap();
    assert_eq!(t.schema().as_ref(), &s);
    assert_eq!(
        s.field("name").unwrap().default_value.as_deref(),
        Some("web")
    );
    assert_eq!(
        s.field("qty").unwrap().description.as_deref(),
        Some("pieces")
    );
    assert_eq!(s.comment.as_deref(), Some("orders"));
    // NOT NULL holds for writes from now on.
    let e = try_put(&t, &[&[Some("2"), None, Some("b"), None]])
        .await
        .unwrap_err();
    assert!(matches!(e, StorageError::NotNull { .. }), "{e}");
}

#[tokio::test]
async fn a_refused_change_writes_nothing() {
    let (wh, t) = testkit::create(orders()).await;
    let drop_key = SchemaChange::DropColumn { name: "id".into() };
    let e = wh
        .alter_table("public", "t", vec![add("note", "STRING"), drop_key])
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::SchemaChange(SchemaChangeError::Unsupported(_))
        ),
        "{e}"
    );
    assert!(!t.io().exists(&schema_path(t.path(), 1)).await.unwrap());
    // Changes that change nothing write nothing either.
    let same = SchemaChange::UpdateColumnType {
        name: "qty".into(),
        data_type: ty("INT"),
    };
    let s = wh.alter_table("public", "t", vec![same]).await.unwrap();
    assert_eq!(&s, t.schema().as_ref());
    assert!(!t.io().exists(&schema_path(t.path(), 1)).await.unwrap());
    let e = wh.alter_table("public", "nope", vec![]).await.unwrap_err();
    assert!(matches!(e, StorageError::TableNotFound(_)), "{e}");
}

#[tokio::test]
async fn a_commit_through_a_handle_older_than_the_schema_is_refused() {
    let (wh, _) = testkit::create(orders()).await;
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let stale = wh.open_table("public", "t").await.unwrap();
    let mut w = TableWrite::new(stale.clone(), WriteMode::Upsert)
        .await
        .unwrap();
    w.write(batch(&stale, &[&[Some("2"), None, Some("b"), None]]))
        .await
        .unwrap();
    wh.alter_table("public", "t", vec![add("note", "STRING")])
        .await
        .unwrap();
    let e = commit_write(w).await.unwrap_err();
    assert!(e.conflict().is_some(), "a retryable 40001: {e}");
    assert!(e.to_string().contains("altered"), "{e}");
    // Run again under the new schema, it commits, and its snapshot names that schema.
    let t = wh.open_table("public", "t").await.unwrap();
    let id = try_put(&t, &[&[Some("2"), None, Some("b"), None, Some("n")]])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(testkit::snapshot(&t, id).await.schema_id, 1);
    let (_, rows) = read(&wh, "t").await;
    assert_eq!(rows.len(), 2);
}

#[tokio::test]
async fn a_group_round_led_by_an_old_handle_writes_in_the_new_schema() {
    let (wh, _) = testkit::create(orders()).await;
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let stale = wh.open_table("public", "t").await.unwrap();
    let mut old = TableWrite::new(stale.clone(), WriteMode::Upsert)
        .await
        .unwrap();
    old.write(batch(&stale, &[&[Some("2"), None, Some("b"), None]]))
        .await
        .unwrap();
    wh.alter_table("public", "t", vec![add("note", "STRING")])
        .await
        .unwrap();
    let fresh = wh.open_table("public", "t").await.unwrap();
    let mut new = TableWrite::new(fresh.clone(), WriteMode::Upsert)
        .await
        .unwrap();
    new.write(batch(
        &fresh,
        &[&[Some("3"), None, Some("c"), None, Some("n3")]],
    ))
    .await
    .unwrap();
    // Both queue while the lock is held; the old handle's round asks for the lock first.
    let commit = fresh.state::<CommitState>();
    let lock = commit.lock.lock().await;
    let queued = |n: usize| {
        let commit = Arc::clone(&commit);
        async move {
            while commit.queue.lock().unwrap().len() < n {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    };
    let first = tokio::spawn(commit_write(old));
    queued(1).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = tokio::spawn(commit_write(new));
    queued(2).await;
    drop(lock);
    let e = first.await.unwrap().unwrap_err();
    assert!(e.conflict().is_some(), "{e}");
    let id = second.await.unwrap().unwrap().unwrap();
    assert_eq!(testkit::snapshot(&fresh, id).await.schema_id, 1);
    assert_eq!(
        read(&wh, "t").await.1,
        strings(&[
            &["1", "10", "a", "NULL", "NULL"],
            &["3", "NULL", "c", "NULL", "n3"]
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_alters_apply_one_after_the_other() {
    let (wh, _) = testkit::create(orders()).await;
    let alter = |name: &'static str| {
        let wh = wh.clone();
        tokio::spawn(async move { wh.alter_table("public", "t", vec![add(name, "INT")]).await })
    };
    let (a, b) = (alter("a"), alter("b"));
    let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
    let mut ids = [a.id, b.id];
    ids.sort();
    assert_eq!(ids, [1, 2]);
    let t = wh.open_table("public", "t").await.unwrap();
    assert_eq!(t.schema().id, 2);
    assert!(t.schema().field("a").is_some() && t.schema().field("b").is_some());
    assert_eq!(t.schema().highest_field_id, 5);
}

#[tokio::test]
async fn another_engines_alter_first_is_built_upon() {
    let store = Arc::new(FaultyStore::default());
    let wh = Warehouse::with_store(Arc::clone(&store) as Arc<dyn ObjectStore>);
    wh.create_database("public").await.unwrap();
    let t = wh.create_table("public", "t", orders()).await.unwrap();
    // Another engine writes schema-1 (a column `x`) just before tarn's write of it.
    let theirs = evolve(t.schema(), &[add("x", "STRING")], false, 1).unwrap();
    let path = schema_path(t.path(), 1);
    let other = Arc::clone(&store);
    store.before_put("schema/schema-1", move || {
        Box::pin(async move {
            let payload = theirs.to_json().into();
            ObjectStore::put_opts(other.inner(), &path, payload, PutOptions::default())
                .await
                .unwrap();
        })
    });
    let s = wh
        .alter_table("public", "t", vec![add("y", "INT")])
        .await
        .unwrap();
    assert_eq!(s.id, 2);
    let columns: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(columns, ["id", "qty", "name", "score", "x", "y"]);
    assert_eq!((s.field("x").unwrap().id, s.field("y").unwrap().id), (4, 5));
}

#[tokio::test]
async fn a_compaction_through_an_old_handle_loses_no_column() {
    let (wh, _) = testkit::create(orders()).await;
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let stale = wh.open_table("public", "t").await.unwrap();
    wh.alter_table("public", "t", vec![add("note", "STRING")])
        .await
        .unwrap();
    put(
        &wh,
        "t",
        &[&[Some("2"), Some("20"), Some("b"), None, Some("n2")]],
    )
    .await;
    // Read into the old layout, the file of schema 1 would lose `note`: abandoned.
    crate::storage::procedures::compact_full(&stale, &[])
        .await
        .unwrap();
    assert_eq!(
        read(&wh, "t").await.1,
        strings(&[
            &["1", "10", "a", "NULL", "NULL"],
            &["2", "20", "b", "NULL", "n2"]
        ])
    );
    // Through a current handle it compacts.
    let t = wh.open_table("public", "t").await.unwrap();
    crate::storage::procedures::compact_full(&t, &[])
        .await
        .unwrap();
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    let live = t.live_files(&latest).await.unwrap();
    let files: Vec<_> = live
        .buckets()
        .flat_map(|(_, f)| f.iter().cloned())
        .collect();
    assert_eq!(files.len(), 1, "one file after a full compaction");
    assert_eq!(files[0].schema_id, 1);
    assert_eq!(
        read(&wh, "t").await.1,
        strings(&[
            &["1", "10", "a", "NULL", "NULL"],
            &["2", "20", "b", "NULL", "n2"]
        ])
    );
}

/// A runtime of one thread: the commit log's writer runs only while the test awaits.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn alter_flushes_the_commit_log_first_and_its_replay_stays_in_one_schema() {
    let dir = temp_dir("alter-log");
    let policy = FlushPolicy {
        interval: Duration::from_secs(3600),
        bytes: usize::MAX,
    };
    let store = runtime().block_on(async {
        let wh = testkit::warehouse(None).await;
        let store = Arc::clone(wh.store());
        let wh = wh.with_commit_log(dir.clone(), policy).await.unwrap();
        wh.create_table("public", "t", orders()).await.unwrap();
        // The first commit goes directly, the second through the log (unflushed).
        put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
        put(&wh, "t", &[&[Some("2"), Some("20"), Some("b"), None]]).await;
        let stale = wh.open_table("public", "t").await.unwrap();
        let unflushed = stale.state::<UnflushedState>();
        let logged = unflushed
            .last_lsn()
            .expect("the second commit waits in the log");
        wh.alter_table("public", "t", vec![add("note", "STRING")])
            .await
            .unwrap();
        assert_eq!(
            unflushed.last_lsn(),
            None,
            "flushed before the schema changed"
        );
        let log = wh.commit_log().unwrap();
        assert!(log.flushed(&table_key("public", "t")) >= logged);
        assert_eq!(
            read(&wh, "t").await.1,
            strings(&[
                &["1", "10", "a", "NULL", "NULL"],
                &["2", "20", "b", "NULL", "NULL"]
            ])
        );
        // Logged under the new schema, not flushed.
        put(
            &wh,
            "t",
            &[&[Some("3"), Some("30"), Some("c"), None, Some("n3")]],
        )
        .await;
        assert!(unflushed.last_lsn().is_some());
        // A commit through the old handle is not logged.
        let e = try_put(&stale, &[&[Some("4"), None, Some("d"), None]])
            .await
            .unwrap_err();
        assert!(e.conflict().is_some(), "{e}");
        store
    });
    // The process ends with row 3 in the log only: it replays under the schema it was
    // logged with.
    let rows = runtime().block_on(async {
        let wh = Warehouse::with_store(store)
            .with_commit_log(dir.clone(), policy)
            .await
            .unwrap();
        read(&wh, "t").await.1
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        rows,
        strings(&[
            &["1", "10", "a", "NULL", "NULL"],
            &["2", "20", "b", "NULL", "NULL"],
            &["3", "30", "c", "NULL", "n3"],
        ])
    );
}

#[tokio::test]
async fn another_engines_alter_with_rows_in_the_commit_log_flushes_them_in_their_schema() {
    let dir = temp_dir("foreign-alter-log");
    let policy = FlushPolicy {
        interval: Duration::from_secs(3600),
        bytes: usize::MAX,
    };
    let wh = testkit::warehouse(None)
        .await
        .with_commit_log(dir.clone(), policy)
        .await
        .unwrap();
    let t = wh.create_table("public", "t", orders()).await.unwrap();
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    put(&wh, "t", &[&[Some("2"), Some("20"), Some("b"), None]]).await;
    assert!(t.state::<UnflushedState>().last_lsn().is_some());
    // Another engine adds a column behind tarn's back.
    let theirs = evolve(t.schema(), &[add("note", "STRING")], true, 1).unwrap();
    assert!(
        t.io()
            .write_new(&schema_path(t.path(), 1), theirs.to_json())
            .await
            .unwrap()
    );
    // A commit at the new schema: the rows logged under the old one are flushed first.
    put(
        &wh,
        "t",
        &[&[Some("3"), Some("30"), Some("c"), None, Some("n3")]],
    )
    .await;
    let first = wh.open_table("public", "t").await.unwrap();
    let flushed = first.snapshots().latest().await.unwrap().unwrap();
    assert_eq!(
        flushed.schema_id, 0,
        "flushed in the schema they were logged under"
    );
    wh.commit_log().unwrap().flush_all().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        read(&wh, "t").await.1,
        strings(&[
            &["1", "10", "a", "NULL", "NULL"],
            &["2", "20", "b", "NULL", "NULL"],
            &["3", "30", "c", "NULL", "n3"],
        ])
    );
}

#[tokio::test]
async fn rename_table_moves_the_folder_and_never_replaces_anything() {
    let dir = temp_dir("rename");
    let wh = Warehouse::open(&WarehouseLocation::Local(dir.clone())).unwrap();
    wh.create_database("public").await.unwrap();
    wh.create_table("public", "t", orders()).await.unwrap();
    wh.create_table("public", "other", orders()).await.unwrap();
    put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
    let stale = wh.open_table("public", "t").await.unwrap();
    let exists = |r: Result<(), StorageError>| matches!(r, Err(StorageError::TableExists(_)));
    assert!(exists(wh.rename_table("public", "t", "other").await));
    assert!(exists(wh.rename_table("public", "t", "t").await));
    // An empty folder at the target: rename(2) alone would replace it.
    std::fs::create_dir_all(dir.join("public.db/empty")).unwrap();
    assert!(exists(wh.rename_table("public", "t", "empty").await));
    assert!(dir.join("public.db/empty").is_dir());
    assert!(matches!(
        wh.rename_table("public", "nope", "x").await,
        Err(StorageError::TableNotFound(_))
    ));
    assert!(wh.table_exists("public", "t").await.unwrap());

    wh.rename_table("public", "t", "u").await.unwrap();
    assert!(!wh.table_exists("public", "t").await.unwrap());
    assert!(!dir.join("public.db/t").exists());
    put(&wh, "u", &[&[Some("2"), Some("20"), Some("b"), None]]).await;
    assert_eq!(
        read(&wh, "u").await.1,
        strings(&[&["1", "10", "a", "NULL"], &["2", "20", "b", "NULL"]])
    );
    // A handle of the old name commits nothing anywhere: refused at the commit (40001), or
    // before, reading metadata its folder no longer holds.
    let e = try_put(&stale, &[&[Some("3"), None, None, None]])
        .await
        .unwrap_err();
    assert!(e.conflict().is_some() || e.is_missing_file(), "{e}");
    assert!(!dir.join("public.db/t").exists());
    // A new table of the old name starts afresh.
    wh.create_table("public", "t", orders()).await.unwrap();
    assert!(read(&wh, "t").await.1.is_empty());
    put(&wh, "t", &[&[Some("9"), None, None, None]]).await;
    assert_eq!(read(&wh, "t").await.1.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);

    let memory = testkit::warehouse(None).await;
    memory.create_table("public", "t", orders()).await.unwrap();
    let e = memory.rename_table("public", "t", "u").await.unwrap_err();
    assert!(matches!(e, StorageError::Unsupported(_)), "{e}");
}

#[test]
fn rename_table_with_the_commit_log_flushes_and_forgets_the_old_name() {
    let dir = temp_dir("rename-log");
    let root = temp_dir("rename-log-wh");
    let policy = FlushPolicy {
        interval: Duration::from_secs(3600),
        bytes: usize::MAX,
    };
    runtime().block_on(async {
        let wh = Warehouse::open(&WarehouseLocation::Local(root.clone())).unwrap();
        wh.create_database("public").await.unwrap();
        let wh = wh.with_commit_log(dir.clone(), policy).await.unwrap();
        wh.create_table("public", "t", orders()).await.unwrap();
        put(&wh, "t", &[&[Some("1"), Some("10"), Some("a"), None]]).await;
        put(&wh, "t", &[&[Some("2"), Some("20"), Some("b"), None]]).await;
        let t = wh.open_table("public", "t").await.unwrap();
        assert!(t.state::<UnflushedState>().last_lsn().is_some());
        wh.rename_table("public", "t", "u").await.unwrap();
        assert_eq!(
            read(&wh, "u").await.1.len(),
            2,
            "the logged row went with the table"
        );
        put(&wh, "u", &[&[Some("3"), Some("30"), Some("c"), None]]).await;
    });
    let rows = runtime().block_on(async {
        let wh = Warehouse::open(&WarehouseLocation::Local(root.clone()))
            .unwrap()
            .with_commit_log(dir.clone(), policy)
            .await
            .unwrap();
        assert!(!wh.table_exists("public", "t").await.unwrap());
        read(&wh, "u").await.1
    });
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(rows.len(), 3);
}
