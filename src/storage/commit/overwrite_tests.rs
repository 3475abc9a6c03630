//! Dropped partitions end to end on an in-memory warehouse: what the OVERWRITE snapshot holds,
//! what readers of it and of earlier versions see, missing partitions, a changed base, and the
//! index files (deletion vectors, dynamic-bucket HASH indexes) of the dropped partitions.

use std::collections::{BTreeMap, BTreeSet};

use super::{DropOutcome, drop_partitions, partition_text};
use crate::storage::meta::snapshot::CommitKind;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::predicate::{CmpOp, Predicate};
use crate::storage::testkit::{self, rows_at, snapshot, upsert};
use crate::storage::{StorageError, Table};

fn dt(value: &str) -> Predicate {
    Predicate::Compare {
        column: "dt".into(),
        op: CmpOp::Eq,
        value: Datum::String(value.into()),
    }
}

async fn latest(t: &Table) -> crate::storage::Snapshot {
    t.snapshots().latest().await.unwrap().unwrap()
}

async fn dropped(t: &Table, specs: &[Predicate]) -> super::PartitionDrop {
    match drop_partitions(t, specs, true, None).await.unwrap() {
        DropOutcome::Dropped(d) => d,
        other => panic!("{other:?}"),
    }
}

/// The partitions (dt) of the index manifest entries of `t`'s latest snapshot, by index type.
async fn index_partitions(t: &Table) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let Some(name) = latest(t).await.index_manifest else {
        return out;
    };
    for e in t.read_index_entries(&name).await.unwrap() {
        let values = binary_row::deserialize(&e.partition, &t.partition_types()).unwrap();
        let Datum::String(dt) = &values[0] else {
            panic!("{values:?}")
        };
        out.entry(e.index_file.index_type.clone())
            .or_default()
            .insert(dt.clone());
    }
    out
}

fn rows(pairs: &[(&str, i64, i64)]) -> BTreeMap<(String, i64), i64> {
    pairs
        .iter()
        .map(|(dt, id, v)| ((dt.to_string(), *id), *v))
        .collect()
}

#[tokio::test]
async fn a_dropped_partition_is_gone_the_others_untouched_and_the_past_kept() {
    let t = testkit::table(&[]).await;
    upsert(&t, &[(1, 10i64, "a"), (2, 20, "a"), (1, 11, "b")]).await;
    let before = upsert(&t, &[(3, 30i64, "a"), (2, 21, "b"), (1, 12, "c")]).await;
    let before = snapshot(&t, before).await;
    let files_b_c: BTreeSet<String> = t
        .live_entries(&before, &Default::default(), &mut Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| {
            e.partition != binary_row::serialize(&[Datum::String("a".into())], &t.partition_types())
        })
        .map(|e| e.file.file_name)
        .collect();

    let d = dropped(&t, &[dt("a")]).await;
    assert_eq!(d.partitions, vec![vec![Datum::String("a".into())]]);
    assert_eq!(partition_text(&t, &d.partitions[0]), "dt=a");
    assert_eq!((d.files, d.file_rows), (2, 3));
    let after = latest(&t).await;
    assert_eq!(Some(after.id), d.snapshot);
    assert_eq!(after.id, before.id + 1);
    assert_eq!(after.commit_kind, CommitKind::Overwrite);
    assert_eq!(after.delta_record_count, Some(-3));
    assert_eq!(after.changelog_manifest_list, None);
    assert_eq!(
        rows_at(&t, &after).await,
        rows(&[("b", 1, 11), ("b", 2, 21), ("c", 1, 12)])
    );
    // The other partitions' files are the same files, not rewritten.
    let files_after: BTreeSet<String> = t
        .live_entries(&after, &Default::default(), &mut Default::default())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.file.file_name)
        .collect();
    assert_eq!(files_after, files_b_c);
    // Time travel before the drop still reads the partition.
    assert_eq!(
        rows_at(&t, &before).await,
        rows(&[
            ("a", 1, 10),
            ("a", 2, 20),
            ("a", 3, 30),
            ("b", 1, 11),
            ("b", 2, 21),
            ("c", 1, 12)
        ])
    );
    // Writing the partition again starts it afresh.
    let again = upsert(&t, &[(2, 22i64, "a")]).await;
    assert_eq!(
        rows_at(&t, &snapshot(&t, again).await).await,
        rows(&[("a", 2, 22), ("b", 1, 11), ("b", 2, 21), ("c", 1, 12)])
    );
}

#[tokio::test]
async fn several_specs_drop_their_partitions_in_one_snapshot() {
    let t = testkit::table(&[]).await;
    upsert(&t, &[(1, 1i64, "a"), (1, 2, "b"), (1, 3, "c"), (1, 4, "d")]).await;
    let before = latest(&t).await.id;
    let d = dropped(
        &t,
        &[
            dt("a"),
            Predicate::In {
                column: "dt".into(),
                values: vec![Datum::String("c".into()), Datum::String("d".into())],
            },
        ],
    )
    .await;
    assert_eq!(d.partitions.len(), 3);
    assert_eq!(d.snapshot, Some(before + 1));
    assert_eq!(rows_at(&t, &latest(&t).await).await, rows(&[("b", 1, 2)]));
}

#[tokio::test]
async fn a_partition_that_does_not_exist_drops_nothing() {
    let t = testkit::table(&[]).await;
    upsert(&t, &[(1, 1i64, "a"), (1, 2, "b")]).await;
    let before = latest(&t).await;
    // Each spec must match: one missing spec drops none of them.
    assert_eq!(
        drop_partitions(&t, &[dt("a"), dt("zz")], true, None)
            .await
            .unwrap(),
        DropOutcome::Missing(1)
    );
    // IF EXISTS: the missing one is skipped, no snapshot when nothing matched.
    match drop_partitions(&t, &[dt("zz")], false, None).await.unwrap() {
        DropOutcome::Dropped(d) => {
            assert_eq!(d.snapshot, None);
            assert!(d.partitions.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(latest(&t).await.id, before.id);
    assert_eq!(
        rows_at(&t, &before).await,
        rows(&[("a", 1, 1), ("b", 1, 2)])
    );
    // A dropped partition does not exist any more.
    dropped(&t, &[dt("a")]).await;
    assert_eq!(
        drop_partitions(&t, &[dt("a")], true, None).await.unwrap(),
        DropOutcome::Missing(0)
    );
}

#[tokio::test]
async fn a_table_without_partitions_or_snapshots() {
    let (_wh, t) = testkit::create(testkit::keyed_schema(&[], &[("bucket", "1")])).await;
    let e = drop_partitions(&t, &[dt("a")], true, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, StorageError::Unsupported(m) if m.contains("not partitioned")),
        "{e}"
    );
    let t = testkit::table(&[]).await;
    assert_eq!(
        drop_partitions(&t, &[dt("a")], true, None).await.unwrap(),
        DropOutcome::Missing(0)
    );
}

#[tokio::test]
async fn a_base_whose_partition_files_changed_drops_nothing() {
    let t = testkit::table(&[]).await;
    let base = upsert(&t, &[(1, 1i64, "a"), (1, 2, "b")]).await;
    // A commit to another partition leaves the base good.
    upsert(&t, &[(2, 2i64, "b")]).await;
    let second = upsert(&t, &[(3, 3i64, "a")]).await;
    assert_eq!(
        drop_partitions(&t, &[dt("a")], true, Some(base))
            .await
            .unwrap(),
        DropOutcome::Changed
    );
    assert_eq!(latest(&t).await.id, second);
    let d = match drop_partitions(&t, &[dt("a")], true, Some(second))
        .await
        .unwrap()
    {
        DropOutcome::Dropped(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(d.snapshot, Some(second + 1));
    let base_b = upsert(&t, &[(4, 4i64, "c")]).await;
    upsert(&t, &[(5, 5i64, "b")]).await;
    // Commits to other partitions since the base do not matter.
    assert!(matches!(
        drop_partitions(&t, &[dt("c")], true, Some(base_b))
            .await
            .unwrap(),
        DropOutcome::Dropped(_)
    ));
    assert_eq!(
        rows_at(&t, &latest(&t).await).await,
        rows(&[("b", 1, 2), ("b", 2, 2), ("b", 5, 5)])
    );
}

#[tokio::test]
async fn dynamic_bucket_indexes_of_a_dropped_partition_go_with_it() {
    let t = testkit::table(&[("bucket", "-1")]).await;
    upsert(&t, &[(1, 1i64, "a"), (2, 2, "a"), (1, 3, "b")]).await;
    assert_eq!(
        index_partitions(&t).await.get("HASH"),
        Some(&BTreeSet::from(["a".to_owned(), "b".to_owned()]))
    );
    dropped(&t, &[dt("a")]).await;
    assert_eq!(
        index_partitions(&t).await.get("HASH"),
        Some(&BTreeSet::from(["b".to_owned()]))
    );
    // The partition's keys start over: one row each, in the index again.
    upsert(&t, &[(1, 7i64, "a"), (1, 8, "b")]).await;
    upsert(&t, &[(1, 9i64, "a")]).await;
    assert_eq!(
        rows_at(&t, &latest(&t).await).await,
        rows(&[("a", 1, 9), ("b", 1, 8)])
    );
    assert_eq!(
        index_partitions(&t).await.get("HASH"),
        Some(&BTreeSet::from(["a".to_owned(), "b".to_owned()]))
    );
    // Dropping every partition leaves no index manifest.
    dropped(&t, &[dt("a"), dt("b")]).await;
    assert_eq!(latest(&t).await.index_manifest, None);
}

#[tokio::test]
async fn deletion_vectors_of_a_dropped_partition_go_with_it() {
    use crate::storage::maintenance::compactor::{compact_full, compact_minor};
    let t = testkit::table(&[("deletion-vectors.enabled", "true"), ("write-only", "true")]).await;
    let base: Vec<(i64, i64, &str)> = (0..400).flat_map(|i| [(i, i, "a"), (i, i, "b")]).collect();
    upsert(&t, &base).await;
    compact_full(&t, &[]).await.unwrap();
    let mut model = rows_at(&t, &latest(&t).await).await;
    for round in 0..3i64 {
        let changes: Vec<(i64, i64, &str)> = (0..400)
            .step_by(7)
            .flat_map(|i| [(i, 1000 + round, "a"), (i, 2000 + round, "b")])
            .collect();
        upsert(&t, &changes).await;
        for (id, v, dt) in changes {
            model.insert((dt.to_owned(), id), v);
        }
        compact_minor(&t).await.unwrap();
    }
    let vectors = index_partitions(&t).await;
    assert_eq!(
        vectors.get("DELETION_VECTORS"),
        Some(&BTreeSet::from(["a".to_owned(), "b".to_owned()])),
        "the setup leaves vectors in both partitions"
    );
    assert_eq!(rows_at(&t, &latest(&t).await).await, model);
    dropped(&t, &[dt("a")]).await;
    assert_eq!(
        index_partitions(&t).await.get("DELETION_VECTORS"),
        Some(&BTreeSet::from(["b".to_owned()]))
    );
    model.retain(|(dt, _), _| dt != "a");
    assert_eq!(rows_at(&t, &latest(&t).await).await, model);
}

/// A runtime of one thread: the commit log's writer runs only while the test awaits.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn transactions_waiting_in_the_commit_log_are_flushed_then_dropped_with_their_partition() {
    use crate::storage::commit::logged::FlushPolicy;
    use crate::storage::lsm::unflushed::UnflushedState;
    use crate::storage::spec::types::{PaimonType, TypeKind};
    use crate::storage::{Warehouse, WriteMode};
    let dir = std::env::temp_dir().join(format!(
        "tarn-drop-partition-log-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let policy = FlushPolicy {
        interval: std::time::Duration::from_secs(3600),
        bytes: usize::MAX,
    };
    let expected = rows(&[("b", 1, 2), ("b", 2, 4)]);
    let store = runtime().block_on(async {
        let wh = testkit::warehouse(None).await;
        let store = std::sync::Arc::clone(wh.store());
        let wh = wh.with_commit_log(dir.clone(), policy).await.unwrap();
        let schema =
            testkit::partitioned_schema(PaimonType::nullable(TypeKind::BigInt), &[("bucket", "2")]);
        let t = wh.create_table("public", "t", schema).await.unwrap();
        // The first commit goes directly, the next ones through the log (unflushed).
        upsert(&t, &[(1, 1i64, "a"), (1, 2, "b")]).await;
        testkit::try_write(&t, WriteMode::Upsert, &[(2, 3i64, "a")])
            .await
            .unwrap();
        testkit::try_write(&t, WriteMode::Upsert, &[(2, 4i64, "b")])
            .await
            .unwrap();
        assert!(t.state::<UnflushedState>().last_lsn().is_some());
        dropped(&t, &[dt("a")]).await;
        assert_eq!(
            t.state::<UnflushedState>().last_lsn(),
            None,
            "flushed first"
        );
        assert_eq!(rows_at(&t, &latest(&t).await).await, expected);
        store
    });
    // A restart replays nothing the drop took.
    let after_restart = runtime().block_on(async {
        let wh = Warehouse::with_store(store)
            .with_commit_log(dir.clone(), policy)
            .await
            .unwrap();
        let t = wh.open_table("public", "t").await.unwrap();
        rows_at(&t, &latest(&t).await).await
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(after_restart, expected);
}
