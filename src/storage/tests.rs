//! End-to-end tests of the storage layer on an in-memory warehouse: create, write, commit,
//! plan, merge-on-read, duplicate keys, spills, truncate, manifest merging.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int64Array, RecordBatch};

use crate::storage::read::scan::ScanFilter;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};
use crate::storage::testkit;
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{StorageError, Table, Warehouse, WarehouseLocation};

/// `id BIGINT, v STRING, dt STRING`, primary key (id, dt), partitioned by dt.
pub(super) fn schema(options: &[(&str, &str)]) -> TableSchema {
    testkit::partitioned_schema(PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)), options)
}

/// A table of [`schema`] on an in-memory warehouse.
pub(super) async fn table(options: &[(&str, &str)]) -> (Warehouse, Table) {
    testkit::create(schema(options)).await
}

pub(super) use testkit::batch;

use testkit::try_write as write;

/// Every (dt, id) → v the table holds, read through scan planning and merge-on-read.
async fn read(wh: &Warehouse) -> BTreeMap<(String, i64), String> {
    read_planned(wh, "t", &ScanFilter::default()).await
}

/// The (dt, id) → v of table `name` in the splits `filter` plans (which may hold more keys).
async fn read_planned(
    wh: &Warehouse,
    name: &str,
    filter: &ScanFilter,
) -> BTreeMap<(String, i64), String> {
    let t = wh.open_table("public", name).await.unwrap();
    let mut out = BTreeMap::new();
    for (_, batches) in testkit::splits_planned(&t, None, filter, &[0, 1, 2]).await {
        let mut last: Option<i64> = None;
        for b in batches {
            let (id, v, dt) = (
                testkit::i64s(&b, 0),
                testkit::strings(&b, 1),
                testkit::strings(&b, 2),
            );
            for i in 0..b.num_rows() {
                assert!(
                    last.is_none_or(|l| l < id.value(i)),
                    "split rows in key order"
                );
                last = Some(id.value(i));
                let prev = out.insert((dt.value(i).to_owned(), id.value(i)), v.value(i).to_owned());
                assert!(prev.is_none(), "a key appears once");
                assert!(!v.is_null(i));
            }
        }
    }
    out
}

#[tokio::test]
async fn insert_read_upsert_truncate() {
    let (wh, t) = table(&[("bucket", "3")]).await;
    let rows: Vec<(i64, String, &str)> = (0..2000)
        .map(|i| {
            (
                i,
                format!("v{i}"),
                if i % 2 == 0 {
                    "2026-12-01"
                } else {
                    "2026-12-02"
                },
            )
        })
        .collect();
    let rows_ref: Vec<(i64, &str, &str)> = rows.iter().map(|r| (r.0, r.1.as_str(), r.2)).collect();
    assert_eq!(
        write(&t, WriteMode::Insert, &rows_ref).await.unwrap(),
        Some(1)
    );
    let got = read(&wh).await;
    assert_eq!(got.len(), 2000);
    assert_eq!(got[&("2026-12-02".to_owned(), 7)], "v7");

    // The same key again fails and commits nothing.
    let err = write(
        &t,
        WriteMode::Insert,
        &[(3000, "x", "2026-12-01"), (7, "dup", "2026-12-02")],
    )
    .await
    .unwrap_err();
    match err {
        StorageError::DuplicateKey { detail, .. } => {
            assert_eq!(detail, "Key (id, dt)=(7, 2026-12-02) already exists.")
        }
        other => panic!("{other:?}"),
    }
    // Same id in another partition is another key.
    write(&t, WriteMode::Insert, &[(7, "other", "2026-12-03")])
        .await
        .unwrap();
    assert_eq!(t.snapshots().latest_id().await.unwrap(), Some(2));

    // Upsert: newer versions win in merge-on-read.
    write(
        &t,
        WriteMode::Upsert,
        &[(7, "new", "2026-12-02"), (8, "new8", "2026-12-01")],
    )
    .await
    .unwrap();
    let got = read(&wh).await;
    assert_eq!(got.len(), 2001);
    assert_eq!(got[&("2026-12-02".to_owned(), 7)], "new");
    assert_eq!(got[&("2026-12-01".to_owned(), 8)], "new8");
    assert_eq!(got[&("2026-12-03".to_owned(), 7)], "other");

    // Two versions of one key in one INSERT fail; in an upsert the last wins.
    let err = write(
        &t,
        WriteMode::Insert,
        &[(9000, "a", "2026-12-05"), (9000, "b", "2026-12-05")],
    )
    .await
    .unwrap_err();
    assert!(matches!(err, StorageError::DuplicateKey { .. }), "{err:?}");
    write(
        &t,
        WriteMode::Upsert,
        &[(9000, "a", "2026-12-05"), (9000, "b", "2026-12-05")],
    )
    .await
    .unwrap();
    assert_eq!(read(&wh).await[&("2026-12-05".to_owned(), 9000)], "b");

    let before = t.snapshots().latest().await.unwrap().unwrap();
    let id = crate::storage::commit::truncate(&t).await.unwrap().unwrap();
    let after = t.snapshots().get(id).await.unwrap().unwrap();
    assert_eq!(
        after.commit_kind,
        crate::storage::meta::snapshot::CommitKind::Overwrite
    );
    assert_eq!(after.total_record_count, Some(0));
    assert!(before.total_record_count.unwrap() > 0);
    assert!(read(&wh).await.is_empty());
}

#[tokio::test]
async fn spills_sorted_runs_and_checks_keys_across_them() {
    // write-only: the spilled runs stay as written (no background compaction).
    let (wh, t) = table(&[
        ("bucket", "2"),
        ("write-buffer-size", "32kb"),
        ("write-only", "true"),
    ])
    .await;
    // Descending ids: every flushed run overlaps the next only if keys interleave; they don't,
    // so the check reads nothing. Then a duplicate far apart in the statement must be found.
    let rows: Vec<(i64, String, &str)> = (0..20_000)
        .rev()
        .map(|i| (i, format!("v{i}"), "d"))
        .collect();
    let rows_ref: Vec<(i64, &str, &str)> = rows.iter().map(|r| (r.0, r.1.as_str(), r.2)).collect();
    write(&t, WriteMode::Insert, &rows_ref).await.unwrap();
    let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
    let files: usize = plan.splits.iter().map(|s| s.files.len()).sum();
    assert!(
        files > 4,
        "a small write buffer spills several runs, got {files}"
    );
    assert_eq!(read(&wh).await.len(), 20_000);

    let mut dup: Vec<(i64, String, &str)> =
        (20_000..30_000).map(|i| (i, "x".to_owned(), "d")).collect();
    dup.push((20_001, "again".to_owned(), "d"));
    let dup_ref: Vec<(i64, &str, &str)> = dup.iter().map(|r| (r.0, r.1.as_str(), r.2)).collect();
    let err = write(&t, WriteMode::Insert, &dup_ref).await.unwrap_err();
    assert!(matches!(err, StorageError::DuplicateKey { .. }), "{err:?}");
    assert_eq!(
        read(&wh).await.len(),
        20_000,
        "a failed INSERT leaves no trace"
    );
    // Its files were removed again.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let plan_files: usize = t
        .plan_scan(None, &ScanFilter::default())
        .await
        .unwrap()
        .splits
        .iter()
        .map(|s| s.files.len())
        .sum();
    let parquet = wh
        .io()
        .list(t.path())
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.location.as_ref().ends_with(".parquet"))
        .count();
    assert_eq!(parquet, plan_files, "no orphan data files");
}

#[tokio::test]
async fn manifests_stay_bounded() {
    let (_wh, t) = table(&[("bucket", "1")]).await;
    let mut most = 0;
    for i in 0..100 {
        write(&t, WriteMode::Insert, &[(i, "v", "d")])
            .await
            .unwrap();
        let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
        most = most.max(plan.manifests_read);
        assert_eq!(plan.splits[0].row_count(), i + 1);
    }
    assert!(most <= 31, "a scan read {most} manifests");
}

#[tokio::test]
async fn sequence_numbers_continue_after_restart() {
    let (wh, t) = table(&[("bucket", "1")]).await;
    write(&t, WriteMode::Insert, &[(1, "a", "d"), (2, "b", "d")])
        .await
        .unwrap();
    // A new warehouse handle over the same store: nothing shared in memory.
    let wh2 = Warehouse::with_store(Arc::clone(wh.store()));
    let t2 = wh2.open_table("public", "t").await.unwrap();
    write(&t2, WriteMode::Upsert, &[(1, "newer", "d")])
        .await
        .unwrap();
    let plan = t2.plan_scan(None, &ScanFilter::default()).await.unwrap();
    let seqs: Vec<(i64, i64)> = plan.splits[0]
        .files
        .iter()
        .map(|f| (f.min_sequence_number, f.max_sequence_number))
        .collect();
    assert!(seqs.contains(&(0, 1)) && seqs.contains(&(2, 2)), "{seqs:?}");
    assert_eq!(read(&wh2).await[&("d".to_owned(), 1)], "newer");
}

#[tokio::test]
async fn refuses_null_keys_and_long_values() {
    let (_wh, t) = table(&[("bucket", "1")]).await;
    let mut w = TableWrite::new(t.clone(), WriteMode::Insert).await.unwrap();
    let b = batch(&t, &[(1, "a", "d")]);
    let nulls = RecordBatch::try_new(
        b.schema(),
        vec![
            Arc::new(Int64Array::from(vec![None::<i64>])),
            Arc::clone(b.column(1)),
            Arc::clone(b.column(2)),
        ],
    );
    // The Arrow schema says not-null: build the batch without that check.
    let nulls = nulls.unwrap_or_else(|_| {
        let fields: Vec<arrow::datatypes::Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        RecordBatch::try_new(
            Arc::new(arrow::datatypes::Schema::new(fields)),
            vec![
                Arc::new(Int64Array::from(vec![None::<i64>])),
                Arc::clone(b.column(1)),
                Arc::clone(b.column(2)),
            ],
        )
        .unwrap()
    });
    let err = w.write(nulls).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "null value in column \"id\" of relation \"t\" violates not-null constraint"
    );
    assert!(!b.column(0).is_null(0));
}

#[tokio::test]
async fn append_tables_keep_every_row_in_write_order() {
    let wh = crate::storage::testkit::warehouse(None).await;
    let mut s = schema(&[("bucket", "-1"), ("write-buffer-size", "16kb")]);
    s.primary_keys.clear();
    s.partition_keys.clear();
    s.fields[0].data_type.nullable = true;
    s.fields[2].data_type.nullable = true;
    let t = wh.create_table("public", "t", s).await.unwrap();
    for round in 0..3i64 {
        let rows: Vec<(i64, String, &str)> = (0..3000)
            .map(|i| (i % 10, format!("r{round}-{i}"), "d"))
            .collect();
        let rows: Vec<(i64, &str, &str)> = rows.iter().map(|r| (r.0, r.1.as_str(), r.2)).collect();
        // Duplicate "keys" are fine: append tables have none.
        write(&t, WriteMode::Insert, &rows).await.unwrap();
    }
    let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
    assert_eq!(plan.splits.len(), 1);
    assert!(
        plan.splits[0].files.len() > 3,
        "the small buffer spilled several files"
    );
    assert!(
        !t.read_layout(&[1]).system,
        "append files have no system columns"
    );
    let batches = testkit::batches_at(&t, None, &[1]).await;
    let values: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let v = b.column(0).as_string::<i32>();
            (0..b.num_rows())
                .map(|i| v.value(i).to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(values.len(), 9000);
    assert_eq!(values[0], "r0-0");
    assert_eq!(values[8999], "r2-2999", "files are read in sequence order");
}

/// The live files a write starts from, moved forward snapshot by snapshot from the table's
/// cached version, equal a replay of every manifest — across appends to several buckets and
/// partitions, manifest merging and a TRUNCATE.
#[tokio::test]
async fn live_files_moved_forward_equal_a_full_replay() {
    let (wh, t) = table(&[("bucket", "3")]).await;
    let listing = |live: &crate::storage::lsm::live_files::LiveFiles, t: &Table| {
        let mut out = Vec::new();
        for dt in ["a", "b"] {
            let partition = crate::storage::spec::binary_row::serialize(
                &[crate::storage::spec::datum::Datum::String(dt.into())],
                &t.partition_types(),
            );
            for bucket in 0..3 {
                let names: Vec<String> = live
                    .bucket(&(partition.clone(), bucket))
                    .iter()
                    .map(|f| f.file_name.clone())
                    .collect();
                out.push((dt, bucket, names));
            }
        }
        out
    };
    for round in 0..70i64 {
        if round == 40 {
            crate::storage::commit::truncate(&t).await.unwrap();
        } else {
            let dt = if round % 3 == 0 { "a" } else { "b" };
            write(
                &t,
                WriteMode::Upsert,
                &[(round, "x", dt), (round % 7, "y", dt)],
            )
            .await
            .unwrap();
        }
        let t = wh.open_table("public", "t").await.unwrap();
        let latest = t.snapshots().latest().await.unwrap().unwrap();
        let forwarded = t.live_files(&latest).await.unwrap();
        // A fresh table handle of a fresh warehouse has no cached version: a full replay.
        let fresh_wh = Warehouse::with_store(Arc::clone(wh.store()));
        let fresh = fresh_wh.open_table("public", "t").await.unwrap();
        let replayed = fresh.live_files(&latest).await.unwrap();
        assert_eq!(
            listing(&forwarded, &t),
            listing(&replayed, &fresh),
            "round {round}"
        );
    }
}

/// Correctness never depends on a cache hit: the same inserts (duplicate checks), upserts,
/// compactions with deletion vectors, dynamic-bucket writes and point lookups through file
/// indexes give the same rows with the default cache budget, with none at all, and with one so
/// small that entries are evicted all the time.
#[tokio::test]
async fn rows_are_the_same_whatever_the_cache_budget() {
    use crate::storage::maintenance::compactor::{compact_full, compact_minor};
    use crate::storage::spec::datum::Datum;
    use crate::storage::spec::predicate::{CmpOp, Predicate};

    let mut outcomes = Vec::new();
    for budget in [crate::storage::DEFAULT_CACHE_MEMORY, 0, 16 << 10] {
        let wh = Warehouse::open(&WarehouseLocation::Memory)
            .unwrap()
            .with_cache_memory(budget);
        wh.create_database("public").await.unwrap();
        let options = [
            ("bucket", "2"),
            ("deletion-vectors.enabled", "true"),
            ("file-index.bloom-filter.columns", "id"),
            ("write-only", "true"),
        ];
        let t = wh
            .create_table("public", "t", schema(&options))
            .await
            .unwrap();
        let d = wh
            .create_table("public", "d", schema(&[("bucket", "-1")]))
            .await
            .unwrap();
        let mut model: BTreeMap<(String, i64), String> = BTreeMap::new();
        let mut outcome = Vec::new();
        for round in 0..6i64 {
            let rows: Vec<(i64, String, &str)> = (0..200)
                .map(|i| {
                    let id = round * 150 + i;
                    (
                        id,
                        format!("r{round}-{i}"),
                        if id % 2 == 0 { "a" } else { "b" },
                    )
                })
                .collect();
            let rows: Vec<(i64, &str, &str)> = rows
                .iter()
                .map(|(i, v, dt)| (*i, v.as_str(), *dt))
                .collect();
            // Keys 150..200 of the previous round exist: a duplicate, found through key sets.
            let inserted = write(&t, WriteMode::Insert, &rows).await;
            assert_eq!(inserted.is_ok(), round == 0, "round {round}: {inserted:?}");
            write(&t, WriteMode::Upsert, &rows).await.unwrap();
            // Checked against the same files again (their key sets cached, if the budget
            // allows), and the new ones.
            let again = write(&t, WriteMode::Insert, &rows[..10]).await;
            assert!(again.is_err(), "round {round}: {again:?}");
            write(&d, WriteMode::Upsert, &rows).await.unwrap();
            for (id, v, dt) in &rows {
                model.insert((dt.to_string(), *id), v.to_string());
            }
            // Level 0 pushed up: with deletion vectors, lookups of the keys below.
            if round % 3 == 2 {
                compact_full(&t, &[]).await.unwrap();
            } else {
                compact_minor(&t).await.unwrap();
            }
            assert_eq!(read(&wh).await, model, "budget {budget}, round {round}");
            let all = read_planned(&wh, "d", &ScanFilter::default()).await;
            assert_eq!(all, model, "budget {budget}, round {round}, dynamic bucket");
            for id in [0, round * 150 + 7, round * 150 + 199, 10_000] {
                let filter = ScanFilter {
                    partition: None,
                    key: Some(Predicate::Compare {
                        column: "id".into(),
                        op: CmpOp::Eq,
                        value: Datum::BigInt(id),
                    }),
                };
                let found: Vec<_> = read_planned(&wh, "t", &filter)
                    .await
                    .into_iter()
                    .filter(|((_, k), _)| *k == id)
                    .collect();
                let expected: Vec<_> = model
                    .iter()
                    .filter(|((_, k), _)| *k == id)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(found, expected, "budget {budget}, id {id}");
                outcome.push(found);
            }
        }
        let caches = wh.cache_metrics();
        assert_eq!(caches.budget_bytes, budget as u64);
        assert!(caches.used_bytes <= budget as u64);
        let kinds: BTreeMap<&str, _> = caches.kinds.iter().map(|k| (k.kind, k)).collect();
        if budget == crate::storage::DEFAULT_CACHE_MEMORY {
            // The workload goes through every cache (page fences are not looked up twice
            // here: every compaction rewrites the files below its output).
            for kind in [
                "schema",
                "manifest",
                "manifest_list",
                "deletion_vector",
                "file_index",
                "index_manifest",
                "live_files",
                "key_set",
                "page_fences",
                "hash_index",
            ] {
                let k = kinds.get(kind);
                assert!(
                    k.is_some_and(|k| k.entries > 0 && (k.hits > 0 || kind == "page_fences")),
                    "{kind}: {:#?}",
                    caches.kinds
                );
            }
        } else if budget == 0 {
            assert!(caches.kinds.iter().all(|k| k.entries == 0 && k.hits == 0));
        } else {
            assert!(caches.kinds.iter().map(|k| k.evictions).sum::<u64>() > 0);
        }
        outcomes.push((model, outcome));
    }
    assert!(outcomes.windows(2).all(|w| w[0] == w[1]));
}
