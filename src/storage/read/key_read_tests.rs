//! Reads by key against full reads: for every merge engine, with deletion vectors, file
//! indexes, compactions and a transaction's own writes, and with cache budgets too small for
//! decoded pages or for any page fences, the rows a read by key gives for random keys (present and absent) are the
//! rows a full scan gives for them.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, Int8Array, RecordBatch};
use futures::TryStreamExt;

use crate::storage::lsm::data_file::kind;
use crate::storage::read::scan::{KeyQuery, ScanFilter};
use crate::storage::spec::datum::Datum;
use crate::storage::spec::predicate::Predicate;
use crate::storage::spec::types::{PaimonType, TypeKind};
use crate::storage::testkit::{batch, i64s, partitioned_schema, strings};
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{Table, Warehouse, WarehouseLocation};

/// xorshift64*: deterministic randomness without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `(dt, id, v)` rows of batches in `(id, v, dt)` layout (after the layout's offset).
type Row = (String, i64, Option<i64>);

fn rows_of(batches: &[RecordBatch], offset: usize) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let (id, v, dt) = (i64s(b, offset), i64s(b, offset + 1), strings(b, offset + 2));
        for i in 0..b.num_rows() {
            out.push((
                dt.value(i).to_owned(),
                id.value(i),
                (!v.is_null(i)).then(|| v.value(i)),
            ));
        }
    }
    out.sort();
    out
}

fn key_filter(ids: &[i64]) -> ScanFilter {
    ScanFilter {
        partition: None,
        key: Some(Predicate::In {
            column: "id".into(),
            values: ids.iter().map(|&i| Datum::BigInt(i)).collect(),
        }),
    }
}

/// Every row of `ids` by full reads of unpruned splits (with `w`'s writes laid over) and by
/// reads by key of the splits the key filter plans; asserts they agree and that the read by
/// key gave no other key (unless it had to scan a file). Returns what it read.
async fn compare(t: &Table, ids: &[i64], w: Option<&TableWrite>, what: &str) -> String {
    let layout = t.read_layout(&[0, 1, 2]);
    let offset = layout.value_offset();
    let wanted: BTreeSet<i64> = ids.iter().copied().collect();
    let mut expected = Vec::new();
    for split in t
        .plan_scan(None, &ScanFilter::default())
        .await
        .unwrap()
        .splits
    {
        let overlay = w.map(|w| w.overlay(&split.partition_bytes, split.bucket, None));
        let b: Vec<RecordBatch> = t
            .read_split_with(&split, &layout, overlay.as_ref())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        expected.extend(
            rows_of(&b, offset)
                .into_iter()
                .filter(|r| wanted.contains(&r.1)),
        );
    }
    expected.sort();

    let filter = key_filter(ids);
    let keys = filter
        .pinned_keys(&t.schema().trimmed_primary_keys())
        .unwrap();
    assert_eq!(keys.len(), wanted.len());
    let query: Arc<KeyQuery> = Arc::new(t.key_query(keys).unwrap());
    // Planned from the cached live files, the same splits and files as a manifest replay.
    let plan = t.plan_key_scan(None, &filter).await.unwrap();
    let files = |p: &crate::storage::read::scan::ScanPlan| {
        p.splits
            .iter()
            .map(|s| {
                let mut names: Vec<String> = s.files.iter().map(|f| f.file_name.clone()).collect();
                names.sort();
                (s.partition_bytes.clone(), s.bucket, names)
            })
            .collect::<Vec<_>>()
    };
    let replayed = t.plan_scan(None, &filter).await.unwrap();
    assert_eq!(files(&plan), files(&replayed), "{what}: planned files");
    let mut got = Vec::new();
    // Buckets whose files cannot hold the keys may still hold the transaction's writes (as
    // the query layer's read view adds them).
    let mut splits = plan.splits;
    for (values, bytes, bucket) in w.map(|w| w.written_buckets()).unwrap_or_default() {
        if !splits
            .iter()
            .any(|s| s.partition_bytes == bytes && s.bucket == bucket)
        {
            splits.push(crate::storage::Split {
                partition: values,
                partition_bytes: bytes,
                bucket,
                total_buckets: t.schema().bucket(),
                files: Vec::new(),
                deletions: None,
            });
        }
    }
    for split in splits {
        // As a read by key takes it: the MemTable's versions of the wanted keys only.
        let overlay = w.map(|w| w.overlay(&split.partition_bytes, split.bucket, Some(&query)));
        let b: Vec<RecordBatch> = t
            .read_split_keys(&split, &layout, overlay.as_ref(), &query)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        got.extend(rows_of(&b, offset));
    }
    got.sort();
    let summary = query.stats.summary();
    if !summary.contains("files_scanned") {
        assert!(
            got.iter().all(|r| wanted.contains(&r.1)),
            "{what}: other keys read: {got:?}"
        );
    }
    got.retain(|r| wanted.contains(&r.1));
    assert_eq!(got, expected, "{what}: keys {ids:?} ({summary})");
    summary
}

/// Random upserts and deletes of random keys over several commits, compactions now and then;
/// after each commit, random keys compared. Returns the summaries of what reads by key read.
async fn random_history(options: &[(&str, &str)], budget: usize, seed: u64) -> Vec<String> {
    let wh = Warehouse::open(&WarehouseLocation::Memory)
        .unwrap()
        .with_cache_memory(budget);
    wh.create_database("public").await.unwrap();
    let mut all = vec![("bucket", "2")];
    all.extend_from_slice(options);
    let schema = partitioned_schema(PaimonType::nullable(TypeKind::BigInt), &all);
    let t = wh.create_table("public", "t", schema).await.unwrap();
    let deletes = !options
        .iter()
        .any(|(k, v)| *k == "merge-engine" && *v != "deduplicate");
    let mut rng = Rng(seed);
    let space = 9_000;
    let mut summaries = Vec::new();
    for round in 0..7 {
        let n = 1 + rng.below(if round == 0 { 8_000 } else { 2_500 }) as usize;
        let mut rows: Vec<(i64, i64, &str)> = (0..n)
            .map(|_| {
                let id = rng.below(space) as i64;
                let dt = if id % 3 == 0 { "b" } else { "a" };
                (id, rng.below(1000) as i64, dt)
            })
            .collect();
        rows.sort_by_key(|r| (r.2, r.0));
        rows.dedup_by_key(|r| (r.2, r.0));
        let kinds: Vec<i8> = rows
            .iter()
            .map(|_| {
                if deletes && rng.below(5) == 0 {
                    kind::DELETE
                } else {
                    kind::INSERT
                }
            })
            .collect();
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        w.write_kinds(batch(&t, &rows), Some(Int8Array::from(kinds)))
            .await
            .unwrap();
        crate::storage::commit::commit_write(w).await.unwrap();
        match round % 3 {
            1 => drop(crate::storage::maintenance::compactor::compact_minor(&t).await),
            2 if round > 3 => {
                crate::storage::maintenance::compactor::compact_full(&t, &[])
                    .await
                    .unwrap();
            }
            _ => {}
        }
        for _ in 0..6 {
            let k = 1 + rng.below(4) as usize;
            let ids: Vec<i64> = (0..k).map(|_| rng.below(space + 50) as i64).collect();
            let what = format!("{options:?}, budget {budget}, round {round}");
            summaries.push(compare(&t, &ids, None, &what).await);
        }
        // A transaction's own writes over the snapshot: an upsert and a delete of keys.
        let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let ids: Vec<i64> = (0..3).map(|_| rng.below(space) as i64).collect();
        // Many more rows than keys read: runs searched by key, not encoded whole.
        let others: Vec<i64> = (0..3_000).map(|_| rng.below(space) as i64).collect();
        let mut mine: Vec<(i64, i64, &str)> = ids
            .iter()
            .chain(&others)
            .map(|&id| (id, 5_000 + id, if id % 3 == 0 { "b" } else { "a" }))
            .collect();
        mine.sort_by_key(|r| (r.2, r.0));
        mine.dedup_by_key(|r| (r.2, r.0));
        let kinds = mine
            .iter()
            .enumerate()
            .map(|(i, _)| {
                if deletes && i == 0 {
                    kind::DELETE
                } else {
                    kind::INSERT
                }
            })
            .collect::<Vec<i8>>();
        // One finished statement: its rows are what the transaction's reads lay over.
        w.begin_statement(WriteMode::Upsert, 0);
        w.write_kinds(batch(&t, &mine), Some(Int8Array::from(kinds)))
            .await
            .unwrap();
        w.end_statement().await.unwrap();
        let what = format!("{options:?}, budget {budget}, round {round}, overlay");
        let mut probe = ids.clone();
        probe.push(rng.below(space) as i64);
        compare(&t, &probe, Some(&w), &what).await;
        w.abort().await;
    }
    summaries
}

const ENGINES: &[&[(&str, &str)]] = &[
    &[],
    &[("deletion-vectors.enabled", "true")],
    &[("file-index.bloom-filter.columns", "id")],
    &[("merge-engine", "partial-update")],
    &[
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "sum"),
    ],
    &[("merge-engine", "first-row")],
];

#[tokio::test]
async fn reads_by_key_equal_full_reads_for_every_merge_engine() {
    for (i, options) in ENGINES.iter().enumerate() {
        let summaries =
            random_history(options, crate::storage::DEFAULT_CACHE_MEMORY, 7 + i as u64).await;
        // Warm lookups come from cached pages; a file without the key is never read.
        assert!(
            summaries.iter().any(|s| !s.contains("pages_cached=0")),
            "{options:?}: {summaries:?}"
        );
    }
}

#[tokio::test]
async fn reads_by_key_equal_full_reads_with_little_room_for_pages() {
    for (i, options) in ENGINES.iter().enumerate().take(3) {
        // Room for page fences (a few keys a file), hardly any for decoded pages.
        let summaries = random_history(options, 16 << 10, 100 + i as u64).await;
        assert!(
            summaries.iter().all(|s| !s.contains("files_scanned")),
            "{options:?}: {summaries:?}"
        );
        // No room at all: every file that may hold a key is read whole and filtered.
        let summaries = random_history(options, 0, 200 + i as u64).await;
        assert!(
            summaries.iter().any(|s| s.contains("files_scanned")),
            "{options:?}: {summaries:?}"
        );
    }
}

/// Files of many pages: a key is found on the page its fences point to (binary search over the
/// pages' first keys), keys on and around page boundaries included, and deletion vectors
/// place deleted rows on pages past the first.
#[tokio::test]
async fn reads_by_key_find_keys_on_every_page_of_large_files() {
    let wh = Warehouse::open(&WarehouseLocation::Memory).unwrap();
    wh.create_database("public").await.unwrap();
    let options = [("bucket", "1"), ("deletion-vectors.enabled", "true")];
    let schema = partitioned_schema(PaimonType::nullable(TypeKind::BigInt), &options);
    let t = wh.create_table("public", "t", schema).await.unwrap();
    let write = |rows: Vec<(i64, i64, &'static str)>, kinds: Vec<i8>| {
        let t = t.clone();
        async move {
            let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
            w.write_kinds(batch(&t, &rows), Some(Int8Array::from(kinds)))
                .await
                .unwrap();
            crate::storage::commit::commit_write(w).await.unwrap();
        }
    };
    // Even ids in partition "a": one file of about eight pages.
    let rows: Vec<(i64, i64, &str)> = (0..30_000).map(|i| (2 * i, i, "a")).collect();
    let n = rows.len();
    write(rows, vec![kind::INSERT; n]).await;
    crate::storage::maintenance::compactor::compact_full(&t, &[])
        .await
        .unwrap();
    // Delete and update keys all over the file; a compaction marks their old rows deleted.
    let changed: Vec<(i64, i64, &str)> =
        (0..30_000).step_by(997).map(|i| (2 * i, -i, "a")).collect();
    let kinds = (0..changed.len())
        .map(|i| {
            if i % 2 == 0 {
                kind::DELETE
            } else {
                kind::INSERT
            }
        })
        .collect();
    write(changed.clone(), kinds).await;
    crate::storage::maintenance::compactor::compact_minor(&t)
        .await
        .unwrap();
    // The compaction found each changed key's old row on its page (compaction's lookup goes
    // through the same fences) and deleted it there: one row per live key.
    let deleted = changed.len().div_ceil(2);
    let layout = t.read_layout(&[0, 1, 2]);
    let mut live = 0;
    for split in t
        .plan_scan(None, &ScanFilter::default())
        .await
        .unwrap()
        .splits
    {
        let b: Vec<RecordBatch> = t
            .read_split_with(&split, &layout, None)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        live += rows_of(&b, layout.value_offset()).len();
    }
    assert_eq!(live, 30_000 - deleted);
    let page = crate::storage::lsm::data_file::DATA_PAGE_ROWS as i64;
    let mut probes: Vec<Vec<i64>> = Vec::new();
    for p in 1..7 {
        // The last row of page p - 1, the first of page p, the next, and an absent key.
        let first = 2 * p * page;
        probes.push(vec![first - 2, first, first + 2, first + 1]);
    }
    probes.push(changed.iter().map(|r| r.0).take(6).collect());
    probes.push(vec![0, 59_998, 60_000, -1]);
    // The test means something only if the compacted file has those pages.
    let plan = t.plan_scan(None, &ScanFilter::default()).await.unwrap();
    let split = &plan.splits[0];
    let file = split.files.iter().max_by_key(|f| f.row_count).unwrap();
    let pages = t.footer(split, file).await.unwrap().page_ranges();
    assert!(pages.len() >= 7, "{pages:?}");
    for ids in probes {
        let summary = compare(&t, &ids, None, &format!("keys {ids:?}")).await;
        assert!(!summary.contains("files_scanned"), "{summary}");
    }
}

/// A composite key pins both columns; a partial key pins nothing; IN lists multiply.
#[test]
fn pinned_keys_need_every_key_column() {
    use crate::storage::spec::predicate::CmpOp;
    let eq = |c: &str, v: i64| Predicate::Compare {
        column: c.into(),
        op: CmpOp::Eq,
        value: Datum::BigInt(v),
    };
    let names = vec!["a".to_owned(), "b".to_owned()];
    let filter = |p| ScanFilter {
        partition: None,
        key: Some(p),
    };
    assert_eq!(filter(eq("a", 1)).pinned_keys(&names), None);
    assert_eq!(
        filter(Predicate::And(vec![eq("b", 2), eq("a", 1)])).pinned_keys(&names),
        Some(vec![vec![Datum::BigInt(1), Datum::BigInt(2)]])
    );
    let both = Predicate::And(vec![
        Predicate::In {
            column: "a".into(),
            values: vec![Datum::BigInt(3), Datum::BigInt(1), Datum::BigInt(3)],
        },
        eq("b", 2),
    ]);
    assert_eq!(
        filter(both).pinned_keys(&names),
        Some(vec![
            vec![Datum::BigInt(1), Datum::BigInt(2)],
            vec![Datum::BigInt(3), Datum::BigInt(2)],
        ])
    );
    // An OR of one column's values is an IN list (DataFusion's form of short IN lists).
    assert_eq!(
        filter(Predicate::And(vec![
            Predicate::Or(vec![eq("a", 2), eq("a", 1)]),
            eq("b", 2),
        ]))
        .pinned_keys(&names),
        Some(vec![
            vec![Datum::BigInt(1), Datum::BigInt(2)],
            vec![Datum::BigInt(2), Datum::BigInt(2)],
        ])
    );
    // An OR of whole keys pins nothing.
    assert_eq!(
        filter(Predicate::Or(vec![
            Predicate::And(vec![eq("a", 1), eq("b", 2)]),
            Predicate::And(vec![eq("a", 2), eq("b", 2)]),
        ]))
        .pinned_keys(&names),
        None
    );
}
