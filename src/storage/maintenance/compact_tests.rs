//! Compaction end to end on an in-memory warehouse: background passes under a stream of
//! upserts and deletes (the table always equals a model of every write), full compaction with
//! merge engines, abandoned compactions, and write stalls at the stop trigger.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use arrow::array::{AsArray, Int8Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::Int64Type;
use futures::TryStreamExt;

use crate::storage::lsm::data_file::kind;
use crate::storage::lsm::split::compare_keys;
use crate::storage::maintenance::compact_policy;
use crate::storage::maintenance::compact_sim;
use crate::storage::maintenance::compactor::{compact_full, pool};
use crate::storage::read::scan::ScanFilter;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::DataFileMeta;
use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};
use crate::storage::testkit::{self, keyed_schema};
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{Table, spec::binary_row};

pub(super) async fn table(options: &[(&str, &str)]) -> Table {
    let wh = crate::storage::testkit::warehouse(None).await;
    let mut all = vec![("bucket", "1")];
    all.extend_from_slice(options);
    let schema = keyed_schema(
        &[("v", PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)))],
        &all,
    );
    wh.create_table("public", "t", schema).await.unwrap()
}

/// One transaction: `(id, value)` upserts, `(id, None)` deletes.
pub(super) async fn commit(t: &Table, rows: &[(i64, Option<&str>)]) -> i64 {
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
    let batch = RecordBatch::try_new(
        crate::storage::testkit::arrow_schema(t.schema()),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.1.or(Some("gone"))),
            )),
        ],
    )
    .unwrap();
    let kinds = Int8Array::from_iter_values(rows.iter().map(|r| match r.1 {
        Some(_) => kind::INSERT,
        None => kind::DELETE,
    }));
    w.write_kinds(batch, Some(kinds)).await.unwrap();
    crate::storage::commit::commit_write(w)
        .await
        .unwrap()
        .expect("a snapshot")
}

/// Every id → v of the latest snapshot, through merge-on-read.
pub(super) async fn rows(t: &Table) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    for b in testkit::batches_at(t, None, &[0, 1]).await {
        let (id, v) = (testkit::i64s(&b, 0), testkit::strings(&b, 1));
        for i in 0..b.num_rows() {
            out.insert(id.value(i), v.value(i).to_owned());
        }
    }
    out
}

/// The live files of the latest snapshot's only bucket.
pub(super) async fn files(t: &Table) -> Vec<DataFileMeta> {
    let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
    plan.splits.into_iter().flat_map(|s| s.files).collect()
}

fn runs(files: &[DataFileMeta]) -> Vec<compact_policy::Run> {
    let summaries: Vec<_> = files
        .iter()
        .map(crate::storage::maintenance::compact::summary)
        .collect();
    compact_policy::runs(&summaries)
}

/// Waits until no compaction pass of `t` runs or is asked for.
async fn idle(t: &Table) {
    for _ in 0..2_000 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if t.state::<crate::storage::maintenance::compactor::CompactorState>()
            .is_idle()
        {
            return;
        }
    }
    panic!("the compactor never went idle");
}

/// Files of one level >= 1 must not overlap in key range (one sorted run per level).
fn assert_levels_sorted(t: &Table, files: &[DataFileMeta]) {
    let types = t.key_types();
    type Range = (Vec<Datum>, Vec<Datum>);
    let mut by_level: BTreeMap<i32, Vec<Range>> = BTreeMap::new();
    for f in files.iter().filter(|f| f.level > 0) {
        by_level.entry(f.level).or_default().push((
            binary_row::deserialize(&f.min_key, &types).unwrap(),
            binary_row::deserialize(&f.max_key, &types).unwrap(),
        ));
    }
    for (level, mut ranges) in by_level {
        ranges.sort_by(|a, b| compare_keys(&a.0, &b.0));
        for pair in ranges.windows(2) {
            assert!(
                compare_keys(&pair[0].1, &pair[1].0).is_lt(),
                "level {level} has overlapping files: {pair:?}"
            );
        }
    }
}

use crate::storage::maintenance::compact_sim::SplitMix64 as Rng;

#[tokio::test]
async fn background_compaction_bounds_runs_and_loses_no_write() {
    let t = table(&[]).await;
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for n in 0..120 {
        let mut change: Vec<(i64, Option<String>)> = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let id = rng.below(40) as i64;
            if change.iter().any(|c| c.0 == id) {
                continue;
            }
            let value = (rng.below(5) > 0).then(|| format!("v{n}-{id}"));
            change.push((id, value));
        }
        for (id, value) in &change {
            match value {
                Some(v) => model.insert(*id, v.clone()),
                None => model.remove(id),
            };
        }
        let written: Vec<(i64, Option<&str>)> =
            change.iter().map(|(i, v)| (*i, v.as_deref())).collect();
        commit(&t, &written).await;
        if n % 10 == 9 {
            assert_eq!(rows(&t).await, model, "after commit {n}");
        }
    }
    idle(&t).await;
    assert_eq!(rows(&t).await, model);
    let live = files(&t).await;
    let opts = crate::storage::maintenance::compact::options_of(&t).unwrap();
    assert!(
        runs(&live).len() <= opts.compaction_trigger as usize,
        "{} sorted runs left",
        runs(&live).len()
    );
    assert_levels_sorted(&t, &live);
    let compactions = t
        .state::<crate::storage::maintenance::compactor::CompactorState>()
        .compactions
        .load(Ordering::Relaxed);
    assert!(compactions >= 10, "{compactions} compactions");
    // Each one a COMPACT snapshot besides the 120 commits.
    let snapshots = t.snapshots().list_ids().await.unwrap().len() as u64;
    assert_eq!(snapshots, 120 + compactions);
}

#[tokio::test]
async fn full_compaction_drops_deletes_at_the_last_level() {
    let t = table(&[("write-only", "true")]).await;
    commit(&t, &[(1, Some("a")), (2, Some("b")), (3, Some("c"))]).await;
    commit(&t, &[(2, None), (4, Some("d"))]).await;
    commit(&t, &[(1, Some("a2"))]).await;
    idle(&t).await;
    assert_eq!(
        files(&t).await.len(),
        3,
        "write-only: no background compaction"
    );
    let report = compact_full(&t, &[]).await.unwrap();
    assert_eq!((report.buckets, report.files_before), (1, 3));
    let live = files(&t).await;
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].level, 5, "the max level of num-levels 6");
    assert_eq!(live[0].row_count, 3, "the delete of 2 is gone");
    assert_eq!(live[0].delete_row_count, Some(0));
    assert_eq!(
        rows(&t).await,
        BTreeMap::from([(1, "a2".into()), (3, "c".into()), (4, "d".into())])
    );
    // Already one run at the max level without deletes: nothing to do.
    let again = compact_full(&t, &[]).await.unwrap();
    assert_eq!(again.buckets, 0);
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    assert_eq!(
        latest.commit_kind,
        crate::storage::meta::snapshot::CommitKind::Compact
    );
}

#[tokio::test]
async fn compaction_folds_aggregates() {
    let wh = crate::storage::testkit::warehouse(None).await;
    let schema = keyed_schema(
        &[("n", PaimonType::nullable(TypeKind::BigInt))],
        &[
            ("bucket", "1"),
            ("write-only", "true"),
            ("merge-engine", "aggregation"),
            ("fields.n.aggregate-function", "sum"),
        ],
    );
    let t = wh.create_table("public", "t", schema).await.unwrap();
    for n in 1..=4 {
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let batch = RecordBatch::try_new(
            crate::storage::testkit::arrow_schema(t.schema()),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Int64Array::from(vec![n, 10 * n])),
            ],
        )
        .unwrap();
        w.write(batch).await.unwrap();
        crate::storage::commit::commit_write(w).await.unwrap();
    }
    compact_full(&t, &[]).await.unwrap();
    let live = files(&t).await;
    assert_eq!((live.len(), live[0].row_count), (1, 2));
    let batches = testkit::batches_at(&t, None, &[0, 1]).await;
    let n = testkit::i64s(&batches[0], 1);
    assert_eq!((n.value(0), n.value(1)), (10, 100));
}

#[tokio::test]
async fn a_compaction_whose_inputs_changed_is_abandoned_without_a_trace() {
    let t = table(&[("write-only", "true")]).await;
    for i in 0..3 {
        commit(&t, &[(i, Some("x"))]).await;
    }
    let before = files(&t).await;
    let opts = crate::storage::maintenance::compact::options_of(&t).unwrap();
    let plan = compact_policy::pick_full(&runs(&before), &opts, |_| false).unwrap();
    let on_disk =
        |t: Table| async move { t.io().list(&t.bucket_path(&[], 0)).await.unwrap().len() };
    let disk_before = on_disk(t.clone()).await;
    crate::storage::commit::truncate(&t).await.unwrap();
    let live: Vec<Arc<DataFileMeta>> = before.iter().cloned().map(Arc::new).collect();
    let result = t
        .compact_bucket(
            &(binary_row::serialize(&[], &[]), 0),
            1,
            &live,
            None,
            &plan,
            &opts,
        )
        .await
        .unwrap();
    assert_eq!(result.snapshot, None);
    assert_eq!(
        on_disk(t.clone()).await,
        disk_before,
        "its output files were deleted"
    );
    assert!(rows(&t).await.is_empty());
}

#[tokio::test]
async fn writers_stall_at_the_stop_trigger_until_compaction_catches_up() {
    let t = table(&[]).await;
    let opts = crate::storage::maintenance::compact::options_of(&t).unwrap();
    // Hold the pool: background passes wait, sorted runs pile up.
    let permit = pool().acquire().await.unwrap();
    for i in 0..=opts.stop_trigger as i64 {
        commit(&t, &[(i, Some("x"))]).await;
    }
    assert_eq!(runs(&files(&t).await).len(), opts.stop_trigger as usize + 1);
    assert_eq!(
        t.state::<crate::storage::maintenance::compactor::CompactorState>()
            .stalls
            .load(Ordering::Relaxed),
        0
    );
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(permit);
    });
    // One run over the stop trigger: this commit waits for compaction before adding its own.
    commit(&t, &[(100, Some("y"))]).await;
    release.await.unwrap();
    assert_eq!(
        t.state::<crate::storage::maintenance::compactor::CompactorState>()
            .stalls
            .load(Ordering::Relaxed),
        1
    );
    assert!(runs(&files(&t).await).len() <= opts.stop_trigger as usize);
    assert_eq!(rows(&t).await.len(), opts.stop_trigger as usize + 2);
}

/// What Paimon's readers see of a table with deletion vectors: the rows of levels >= 1 with
/// each file's deleted rows left out, merging nothing; each key must appear once, as an insert.
async fn rows_above_level_0(t: &Table) -> BTreeMap<i64, String> {
    let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
    let layout = t.read_layout(&[0, 1]);
    let mut out = BTreeMap::new();
    for split in &plan.splits {
        for f in split.files.iter().filter(|f| f.level > 0) {
            let batches: Vec<RecordBatch> = t
                .open_data_file(split, f, &layout)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            for b in batches {
                let off = layout.value_offset();
                let kinds = b
                    .column(layout.kind_index())
                    .as_primitive::<arrow::datatypes::Int8Type>();
                let id = b.column(off).as_primitive::<Int64Type>();
                let v = b.column(off + 1).as_string::<i32>();
                for i in 0..b.num_rows() {
                    assert!(
                        kinds.value(i) == kind::INSERT || kinds.value(i) == kind::UPDATE_AFTER,
                        "a delete above level 0 in {}",
                        f.file_name
                    );
                    let previous = out.insert(id.value(i), v.value(i).to_owned());
                    assert!(
                        previous.is_none(),
                        "key {} live twice above level 0",
                        id.value(i)
                    );
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn deletion_vectors_leave_one_live_row_per_key_above_level_0() {
    let t = table(&[("deletion-vectors.enabled", "true"), ("write-only", "true")]).await;
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    let base: Vec<(i64, String)> = (0..2000).map(|i| (i, format!("base{i}"))).collect();
    let rows_in: Vec<(i64, Option<&str>)> =
        base.iter().map(|(i, v)| (*i, Some(v.as_str()))).collect();
    commit(&t, &rows_in).await;
    model.extend(base.iter().cloned());
    compact_full(&t, &[]).await.unwrap();
    let mut rng = compact_sim::SplitMix64(7);
    let mut rounds_with_vectors = 0;
    for round in 0..8 {
        for _ in 0..3 {
            let mut batch: BTreeMap<i64, Option<String>> = BTreeMap::new();
            for _ in 0..20 {
                let id = rng.below(2100) as i64;
                let v = (!rng.chance(25)).then(|| format!("r{round}-{id}"));
                batch.insert(id, v);
            }
            let rows: Vec<(i64, Option<&str>)> =
                batch.iter().map(|(i, v)| (*i, v.as_deref())).collect();
            commit(&t, &rows).await;
            for (i, v) in batch {
                match v {
                    Some(v) => model.insert(i, v),
                    None => model.remove(&i),
                };
            }
        }
        // Merge-on-read sees level 0 at once.
        assert_eq!(rows(&t).await, model, "round {round} before compaction");
        crate::storage::maintenance::compactor::compact_minor(&t)
            .await
            .unwrap();
        let fs = files(&t).await;
        assert!(fs.iter().all(|f| f.level > 0), "level 0 pushed up");
        assert_levels_sorted(&t, &fs);
        assert_eq!(rows(&t).await, model, "round {round}");
        assert_eq!(
            rows_above_level_0(&t).await,
            model,
            "round {round}, no merge"
        );
        let latest = t.snapshots().latest().await.unwrap().unwrap();
        if !t.deletion_index(&latest).await.unwrap().is_empty() {
            rounds_with_vectors += 1;
        }
    }
    assert!(
        rounds_with_vectors >= 4,
        "{rounds_with_vectors} rounds left vectors"
    );
    // A full compaction rewrites the files with deleted rows: no vector is left.
    compact_full(&t, &[]).await.unwrap();
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    assert!(t.deletion_index(&latest).await.unwrap().is_empty());
    assert_eq!(rows_above_level_0(&t).await, model);
}

#[tokio::test]
async fn lookup_tables_merge_the_previous_version_into_level_0_pushes() {
    // `force-lookup` without deletion vectors: compaction of level 0 to level 4 merges each
    // key's version from level 5 into its output, and reads then take a key's version of its
    // lowest level >= 1 alone (Paimon's LookupMergeFunction): merging level 5 again would
    // aggregate it twice.
    let t = table(&[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "listagg"),
        ("force-lookup", "true"),
        ("write-only", "true"),
    ])
    .await;
    let base: Vec<(i64, String)> = (0..2000).map(|i| (i, format!("a{i}"))).collect();
    let rows_in: Vec<(i64, Option<&str>)> =
        base.iter().map(|(i, v)| (*i, Some(v.as_str()))).collect();
    commit(&t, &rows_in).await;
    compact_full(&t, &[]).await.unwrap();
    let mut model: BTreeMap<i64, String> = base.into_iter().collect();
    for (round, add) in ["b", "c", "d"].into_iter().enumerate() {
        commit(&t, &[(0, Some(add)), (1 + round as i64, Some(add))]).await;
        for id in [0, 1 + round as i64] {
            let v = model.get_mut(&id).unwrap();
            v.push(',');
            v.push_str(add);
        }
        crate::storage::maintenance::compactor::compact_minor(&t)
            .await
            .unwrap();
        let fs = files(&t).await;
        assert!(fs.iter().all(|f| f.level > 0), "level 0 pushed up");
        assert!(fs.iter().any(|f| f.level == 5 && f.row_count == 2000));
        let got = rows(&t).await;
        assert_eq!(got.len(), model.len());
        let differing: Vec<_> = got
            .iter()
            .filter(|(k, v)| model.get(k) != Some(v))
            .collect();
        assert!(differing.is_empty(), "round {round}: {differing:?}");
    }
    assert_eq!(model[&0], "a0,b,c,d");
}
