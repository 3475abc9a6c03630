//! Tests of dynamic buckets: the HASH file layout, the assigner (Java's cases and a model),
//! and transactions on an in-memory warehouse (conflicts, READ COMMITTED, savepoints, TRUNCATE).

use std::collections::BTreeMap;

use arrow::array::{AsArray, Int64Array, StringArray};
use arrow::datatypes::Int64Type;

use super::*;
use crate::storage::Warehouse;
use crate::storage::maintenance::compact_sim::SplitMix64;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::types::{PaimonType, TypeKind};
use crate::storage::tests::batch;
use crate::storage::write::table_write::{TableWrite, WriteMode};

fn options(target: u64, max_buckets: Option<i32>) -> AssignOptions {
    AssignOptions {
        target_row_num: target,
        max_buckets,
    }
}

fn base(buckets: &[(i32, &[i32])]) -> PartitionBase {
    PartitionBase::new(buckets.iter().map(|(b, h)| {
        let mut h = h.to_vec();
        h.sort_unstable();
        (*b, Arc::new(h))
    }))
}

#[test]
fn hash_files_are_big_endian_ints_as_java_writes_them() {
    let bytes = encode_hashes(&[1, -1, i32::MIN, i32::MAX]);
    assert_eq!(
        bytes,
        [
            0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff
        ]
    );
    // Java writes in hash-set order; reading sorts (and drops repeats).
    assert_eq!(
        decode_hashes(&bytes).unwrap(),
        vec![i32::MIN, -1, 1, i32::MAX]
    );
    assert_eq!(
        decode_hashes(&encode_hashes(&[5, 3, 5])).unwrap(),
        vec![3, 5]
    );
    assert!(decode_hashes(&[]).unwrap().is_empty());
    assert!(decode_hashes(&[0, 0, 1]).is_err());
}

#[test]
fn key_hashes_are_the_trimmed_primary_keys_binary_row_hash() {
    let schema = crate::storage::tests::schema(&[]);
    let t = PaimonType::new(TypeKind::BigInt, false);
    let batch = RecordBatch::try_new(
        crate::storage::testkit::arrow_schema(&schema),
        vec![
            Arc::new(Int64Array::from(vec![7, -3])),
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(StringArray::from(vec!["p", "q"])),
        ],
    )
    .unwrap();
    let expected: Vec<i32> = [7i64, -3]
        .iter()
        .map(|&id| {
            let row = crate::storage::spec::binary_row::serialize(
                &[Datum::BigInt(id)],
                std::slice::from_ref(&t),
            );
            hash_row(&row[4..])
        })
        .collect();
    // The partition column (dt) is not part of the hash.
    assert_eq!(key_hashes(&schema, &batch).unwrap(), expected);
}

/// Java `HashBucketAssignerTest.testAssign` with one assigner (target 5).
#[test]
fn new_keys_fill_the_lowest_bucket_up_to_the_target_then_open_one() {
    let mut a = PartitionAssigner::new(PartitionBase::default(), options(5, None));
    for h in [0, 2, 4, 6, 8] {
        assert_eq!(a.assign(h, 1).unwrap(), 0);
    }
    assert_eq!(a.assign(10, 1).unwrap(), 1, "bucket 0 is full");
    assert_eq!(a.assign(6, 2).unwrap(), 0, "a known key keeps its bucket");
    assert_eq!(a.count(0), 5);
    assert_eq!(a.count(1), 1);
    assert_eq!(a.changed_buckets(), BTreeSet::from([0, 1]));
}

/// Java `testEachPartitionUsesAllBucketsWithUpperBound`: 4 buckets of 5, then (Java: at
/// random) the emptiest bucket.
#[test]
fn max_buckets_bounds_the_bucket_ids() {
    let mut a = PartitionAssigner::new(PartitionBase::default(), options(5, Some(4)));
    let mut sizes: BTreeMap<i32, u32> = BTreeMap::new();
    for h in 0..20 {
        *sizes.entry(a.assign(h, 1).unwrap()).or_default() += 1;
    }
    assert_eq!(sizes, BTreeMap::from([(0, 5), (1, 5), (2, 5), (3, 5)]));
    let more: Vec<i32> = (20..28).map(|h| a.assign(h, 1).unwrap()).collect();
    assert_eq!(more, [0, 1, 2, 3, 0, 1, 2, 3]);
}

#[test]
fn existing_keys_keep_their_bucket_and_new_ones_go_below_the_target() {
    let b = base(&[(0, &[1, 2, 3]), (1, &[10]), (3, &[30, 31, 32])]);
    let mut a = PartitionAssigner::new(b, options(3, None));
    assert_eq!(a.assign(2, 1).unwrap(), 0);
    assert_eq!(a.assign(31, 1).unwrap(), 3);
    assert_eq!(a.assign(10, 1).unwrap(), 1);
    assert_eq!(a.changed_buckets(), BTreeSet::new(), "nothing new yet");
    assert_eq!(a.assign(100, 1).unwrap(), 1);
    assert_eq!(a.assign(101, 1).unwrap(), 1);
    // 0, 1, 3 full: the lowest free id.
    assert_eq!(a.assign(102, 1).unwrap(), 2);
    assert_eq!(a.assign(103, 1).unwrap(), 2);
    assert_eq!(a.assign(104, 1).unwrap(), 2);
    assert_eq!(a.assign(105, 1).unwrap(), 4);
    assert_eq!(a.changed_buckets(), BTreeSet::from([1, 2, 4]));
    let written = a.written_by_bucket();
    assert_eq!(written[&0], vec![2]);
    assert_eq!(written[&1], vec![10, 100, 101]);
    assert_eq!(written[&2], vec![102, 103, 104]);
}

#[test]
fn rollback_forgets_a_statements_new_keys() {
    let mut a = PartitionAssigner::new(base(&[(0, &[1])]), options(2, None));
    assert_eq!(a.assign(5, 1).unwrap(), 0);
    assert_eq!(a.assign(6, 2).unwrap(), 1);
    assert_eq!(a.assign(7, 2).unwrap(), 1);
    a.forget_after(1);
    assert_eq!(a.changed_buckets(), BTreeSet::from([0]));
    assert_eq!(a.count(1), 0);
    // Bucket 1 is free again, and key 7 starts afresh.
    assert_eq!(a.assign(7, 3).unwrap(), 1);
    assert_eq!(a.written_by_bucket()[&1], vec![7]);
}

#[test]
fn rebase_keeps_what_was_written_or_reports_a_moved_key() {
    let mut a = PartitionAssigner::new(base(&[(0, &[1])]), options(2, None));
    assert_eq!(a.assign(5, 1).unwrap(), 0);
    assert_eq!(a.assign(6, 1).unwrap(), 1);
    // Another writer added 6 to bucket 1 (same place) and 9 to bucket 0.
    let newer = base(&[(0, &[1, 9]), (1, &[6])]);
    a.rebase(newer.clone()).unwrap();
    assert_eq!(a.changed_buckets(), BTreeSet::from([0]), "6 is known now");
    assert_eq!(a.count(0), 3);
    // Another writer put 5 into bucket 2: the transaction's 5 is in bucket 0.
    let moved = base(&[(0, &[1, 9]), (1, &[6]), (2, &[5])]);
    assert_eq!(
        a.rebase(moved),
        Err(Moved {
            hash: 5,
            ours: 0,
            theirs: 2
        })
    );
    assert_eq!(a.count(0), 3, "a failed rebase changes nothing");
}

/// The rule, restated: a known hash keeps its bucket; a new one goes to the lowest bucket
/// below the target, else the lowest free id below the limit, else the emptiest bucket.
fn expected_bucket(counts: &BTreeMap<i32, u64>, opts: AssignOptions) -> i32 {
    if let Some((b, _)) = counts.iter().find(|(_, c)| **c < opts.target_row_num) {
        return *b;
    }
    let limit = opts.max_buckets.unwrap_or(UNLIMITED_MAX_BUCKET_ID + 1);
    if let Some(free) = (0..limit).find(|b| !counts.contains_key(b)) {
        return free;
    }
    *counts.iter().min_by_key(|(b, c)| (**c, **b)).unwrap().0
}

#[test]
fn assignment_properties_hold_for_random_streams() {
    let mut rng = SplitMix64(7);
    for round in 0..300 {
        let opts = options(
            1 + rng.below(6),
            if rng.chance(30) {
                Some(1 + rng.below(5) as i32)
            } else {
                None
            },
        );
        // A random base: buckets with disjoint hash sets (some ids skipped).
        let mut buckets: Vec<(i32, Vec<i32>)> = Vec::new();
        let mut next_hash = 1000;
        for b in 0..rng.below(5) as i32 {
            if rng.chance(25) {
                continue;
            }
            let n = rng.below(8) as i32;
            buckets.push((b, (next_hash..next_hash + n).collect()));
            next_hash += n;
        }
        let b = PartitionBase::new(buckets.iter().map(|(b, h)| (*b, Arc::new(h.clone()))));
        let stream: Vec<(i32, u32)> = (0..40)
            .map(|i| {
                let hash = if rng.chance(30) && next_hash > 1000 {
                    1000 + rng.below((next_hash - 1000) as u64) as i32
                } else {
                    rng.below(60) as i32
                };
                (hash, 1 + i / 10)
            })
            .collect();
        let run = |stream: &[(i32, u32)]| {
            let mut a = PartitionAssigner::new(b.clone(), opts);
            let out: Vec<i32> = stream
                .iter()
                .map(|&(h, s)| a.assign(h, s).unwrap())
                .collect();
            (a, out)
        };
        let (a, out) = run(&stream);
        assert_eq!(run(&stream).1, out, "round {round}: deterministic");
        // The model.
        let mut counts: BTreeMap<i32, u64> = b.counts().collect();
        let mut seen: HashMap<i32, i32> = HashMap::new();
        for (&(hash, _), &got) in stream.iter().zip(&out) {
            let want = match seen.get(&hash).copied().or_else(|| b.bucket_of(hash)) {
                Some(known) => known,
                None => {
                    let e = expected_bucket(&counts, opts);
                    *counts.entry(e).or_default() += 1;
                    e
                }
            };
            assert_eq!(got, want, "round {round}: hash {hash}");
            seen.insert(hash, got);
            if let Some(m) = opts.max_buckets {
                assert!(got < m || b.counts().any(|(x, _)| x == got));
            }
        }
        for (bucket, c) in &counts {
            assert_eq!(a.count(*bucket), *c, "round {round}: size of {bucket}");
        }
        // Every hash written is in exactly one bucket.
        let written = a.written_by_bucket();
        let total: usize = written.values().map(Vec::len).sum();
        assert_eq!(total, seen.len());
        // A rollback to statement k equals a fresh run of statements 1..=k, also after
        // further keys.
        let k = rng.below(5) as u32;
        let mut rolled = a.clone();
        rolled.forget_after(k);
        let kept: Vec<(i32, u32)> = stream.iter().copied().filter(|(_, s)| *s <= k).collect();
        let (mut fresh, _) = run(&kept);
        assert_eq!(rolled.written_by_bucket(), fresh.written_by_bucket());
        for h in 200..215 {
            assert_eq!(
                rolled.assign(h, 9).unwrap(),
                fresh.assign(h, 9).unwrap(),
                "round {round}: after rollback to {k}"
            );
        }
    }
}

// -----------------------------------------------------------------------------------------
// End to end on an in-memory warehouse
// -----------------------------------------------------------------------------------------

async fn table(target: &str) -> (Warehouse, Table) {
    table_with(&[(TARGET_ROW_NUM, target)]).await
}

async fn table_with(options: &[(&str, &str)]) -> (Warehouse, Table) {
    let mut all = vec![("bucket", "-1")];
    all.extend_from_slice(options);
    crate::storage::tests::table(&all).await
}

async fn writer(t: &Table, rows: &[(i64, &str, &str)]) -> TableWrite {
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
    w.write(batch(t, rows)).await.unwrap();
    w
}

async fn upsert(t: &Table, rows: &[(i64, &str, &str)]) {
    crate::storage::commit::commit_write(writer(t, rows).await)
        .await
        .unwrap();
}

fn hash_of(id: i64) -> i32 {
    let ty = PaimonType::new(TypeKind::BigInt, false);
    let row = crate::storage::spec::binary_row::serialize(&[Datum::BigInt(id)], &[ty]);
    hash_row(&row[4..])
}

/// (dt, id) → (bucket, v) of every live row; fails if a key is live in two buckets, or if a
/// bucket's HASH index lacks one of its keys or another bucket's index has it.
async fn check(wh: &Warehouse) -> BTreeMap<(String, i64), (i32, String)> {
    let t = wh.open_table("public", "t").await.unwrap();
    let snapshot = t.snapshots().latest().await.unwrap().unwrap();
    let index = t.deletion_index(&snapshot).await.unwrap();
    let mut hashes: HashMap<(Vec<u8>, i32), Vec<i32>> = HashMap::new();
    for e in index
        .entries
        .iter()
        .filter(|e| e.index_file.index_type == HASH_INDEX)
    {
        let h = read_hash_file(&t, &e.index_file).await.unwrap();
        assert_eq!(e.index_file.row_count, h.len() as i64);
        assert!(
            hashes
                .insert((e.partition.clone(), e.bucket), h.to_vec())
                .is_none()
        );
    }
    let mut out = BTreeMap::new();
    for (split, batches) in crate::storage::testkit::splits_at(&t, None, &[0, 1, 2]).await {
        assert_eq!(split.total_buckets, -1);
        for b in batches {
            let id = b.column(0).as_primitive::<Int64Type>();
            let v = b.column(1).as_string::<i32>();
            let dt = b.column(2).as_string::<i32>();
            for i in 0..b.num_rows() {
                let key = (dt.value(i).to_owned(), id.value(i));
                let h = hash_of(id.value(i));
                for ((p, bucket), hs) in &hashes {
                    if *p == split.partition_bytes {
                        assert_eq!(
                            hs.binary_search(&h).is_ok(),
                            *bucket == split.bucket,
                            "key {key:?} in bucket {} vs the index of bucket {bucket}",
                            split.bucket
                        );
                    }
                }
                assert!(
                    hashes.contains_key(&(split.partition_bytes.clone(), split.bucket)),
                    "bucket {} has an index",
                    split.bucket
                );
                let prev = out.insert(key.clone(), (split.bucket, v.value(i).to_owned()));
                assert!(prev.is_none(), "key {key:?} is live in two buckets");
            }
        }
    }
    out
}

fn buckets_of(rows: &BTreeMap<(String, i64), (i32, String)>) -> BTreeMap<i32, usize> {
    let mut out = BTreeMap::new();
    for (b, _) in rows.values() {
        *out.entry(*b).or_default() += 1;
    }
    out
}

#[tokio::test]
async fn keys_fill_buckets_and_keep_them_across_commits_and_partitions() {
    let (wh, t) = table("10").await;
    let rows: Vec<(i64, String)> = (0..35).map(|i| (i, format!("a{i}"))).collect();
    let first: Vec<(i64, &str, &str)> = rows.iter().map(|(i, v)| (*i, v.as_str(), "x")).collect();
    upsert(&t, &first).await;
    let state = check(&wh).await;
    assert_eq!(
        buckets_of(&state),
        BTreeMap::from([(0, 10), (1, 10), (2, 10), (3, 5)])
    );
    // Updates of existing keys stay in their buckets; new keys fill bucket 3, then 4.
    let second: Vec<(i64, String)> = (0..35)
        .step_by(3)
        .chain(100..108)
        .map(|i| (i, format!("b{i}")))
        .collect();
    let second: Vec<(i64, &str, &str)> =
        second.iter().map(|(i, v)| (*i, v.as_str(), "x")).collect();
    upsert(&t, &second).await;
    let after = check(&wh).await;
    for ((dt, id), (bucket, _)) in &state {
        assert_eq!(
            after[&(dt.clone(), *id)].0,
            *bucket,
            "key {id} kept its bucket"
        );
    }
    assert_eq!(after[&("x".to_owned(), 3)].1, "b3");
    assert_eq!(
        buckets_of(&after),
        BTreeMap::from([(0, 10), (1, 10), (2, 10), (3, 10), (4, 3)])
    );
    // Another partition starts at bucket 0.
    upsert(&t, &[(1, "y1", "y"), (2, "y2", "y")]).await;
    let all = check(&wh).await;
    assert_eq!(all[&("y".to_owned(), 1)].0, 0);
    assert_eq!(all.len(), 45);
    // Deletes go where the key is.
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
    w.write_kinds(
        batch(&t, &[(5, "", "x"), (104, "", "x")]),
        Some(arrow::array::Int8Array::from(vec![
            crate::storage::lsm::data_file::kind::DELETE,
            crate::storage::lsm::data_file::kind::DELETE,
        ])),
    )
    .await
    .unwrap();
    crate::storage::commit::commit_write(w).await.unwrap();
    let end = check(&wh).await;
    assert_eq!(end.len(), 43);
    assert!(!end.contains_key(&("x".to_owned(), 5)));
}

#[tokio::test]
async fn concurrent_transactions_with_different_new_keys_both_commit() {
    let (wh, t) = table("3").await;
    upsert(&t, &[(1, "a", "x")]).await;
    // Same snapshot, both assign their keys from the same index.
    let a = writer(&t, &[(10, "a", "x"), (11, "a", "x"), (12, "a", "x")]).await;
    let b = writer(&t, &[(20, "b", "x"), (21, "b", "x"), (22, "b", "x")]).await;
    let (ra, rb) = tokio::join!(
        crate::storage::commit::commit_write(a),
        crate::storage::commit::commit_write(b)
    );
    ra.unwrap();
    rb.unwrap();
    let state = check(&wh).await;
    assert_eq!(state.len(), 7);
    // Both filled bucket 0 and 1: the union holds all of them (above the target).
    assert_eq!(buckets_of(&state), BTreeMap::from([(0, 5), (1, 2)]));
    // One after the other: the second rebases onto the first's index.
    let c = writer(&t, &[(30, "c", "x")]).await;
    let d = writer(&t, &[(31, "d", "x")]).await;
    crate::storage::commit::commit_write(c).await.unwrap();
    crate::storage::commit::commit_write(d).await.unwrap();
    let state = check(&wh).await;
    assert_eq!(state.len(), 9);
    assert_eq!(state[&("x".to_owned(), 30)].0, 1);
    assert_eq!(state[&("x".to_owned(), 31)].0, 1);
}

/// Writes that spill (level-0 files before COMMIT) commit alone, not grouped: the same
/// rebase, the same conflict.
#[tokio::test]
async fn spilled_writes_rebase_and_conflict_too() {
    let (wh, t) = table_with(&[(TARGET_ROW_NUM, "2"), ("write-buffer-size", "1b")]).await;
    upsert(&t, &[(1, "a", "x")]).await;
    let a = writer(&t, &[(10, "a", "x")]).await;
    let b = writer(&t, &[(20, "b", "x")]).await;
    let old = writer(&t, &[(7, "old", "x")]).await;
    crate::storage::commit::commit_write(a).await.unwrap();
    crate::storage::commit::commit_write(b).await.unwrap();
    let state = check(&wh).await;
    assert_eq!(state[&("x".to_owned(), 10)].0, 0);
    assert_eq!(state[&("x".to_owned(), 20)].0, 0);
    upsert(&t, &[(7, "new", "x")]).await;
    let err = crate::storage::commit::commit_write(old).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("another writer changed the bucket index"),
        "{err}"
    );
    let state = check(&wh).await;
    assert_eq!(state.len(), 4);
    assert_eq!(state[&("x".to_owned(), 7)], (1, "new".to_owned()));
}

#[tokio::test]
async fn a_key_another_writer_put_elsewhere_fails_the_commit() {
    let (wh, t) = table("2").await;
    upsert(&t, &[(1, "a", "x")]).await;
    // Bucket 0 has room for one key at this snapshot: K = 7 goes there.
    let old = writer(&t, &[(7, "old", "x")]).await;
    // Meanwhile bucket 0 fills up, and K is written into bucket 1.
    upsert(&t, &[(2, "b", "x")]).await;
    upsert(&t, &[(7, "new", "x")]).await;
    let err = crate::storage::commit::commit_write(old).await.unwrap_err();
    assert!(matches!(err, StorageError::CommitConflict(_)), "{err}");
    assert!(
        err.to_string()
            .contains("another writer changed the bucket index"),
        "{err}"
    );
    let state = check(&wh).await;
    assert_eq!(state[&("x".to_owned(), 7)], (1, "new".to_owned()));
}

/// READ COMMITTED: a statement reading a later snapshot finds the keys committed since the
/// transaction began in their buckets.
#[tokio::test]
async fn a_statement_reading_a_later_snapshot_uses_its_index() {
    let (wh, t) = table("1").await;
    upsert(&t, &[(1, "a", "x")]).await;
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
    w.write(batch(&t, &[(2, "mine", "x")])).await.unwrap();
    w.end_statement().await.unwrap();
    // Another transaction puts 7 into bucket 1 (bucket 0 is full).
    upsert(&t, &[(7, "theirs", "x")]).await;
    let later = t.snapshots().latest().await.unwrap().unwrap().id;
    w.begin_statement(WriteMode::Upsert, later);
    w.write(batch(&t, &[(7, "ours", "x")])).await.unwrap();
    w.end_statement().await.unwrap();
    let mut both = vec![hash_of(2), hash_of(7)];
    both.sort_unstable();
    assert_eq!(w.dynamic_hashes().values().next().unwrap()[&1], both);
    crate::storage::commit::commit_write(w).await.unwrap();
    let state = check(&wh).await;
    assert_eq!(state[&("x".to_owned(), 7)], (1, "ours".to_owned()));
    assert_eq!(state[&("x".to_owned(), 2)].0, 1);
}

#[tokio::test]
async fn rolled_back_statements_leave_no_hashes() {
    let (wh, t) = table("10").await;
    let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
    w.write(batch(&t, &[(1, "a", "x")])).await.unwrap();
    w.end_statement().await.unwrap();
    let mark = w.mark();
    w.begin_statement(WriteMode::Upsert, 0);
    w.write(batch(&t, &[(2, "b", "x"), (3, "b", "x")]))
        .await
        .unwrap();
    w.end_statement().await.unwrap();
    w.rollback_to(mark).await;
    assert_eq!(
        w.dynamic_hashes().values().next().unwrap()[&0],
        vec![hash_of(1)]
    );
    crate::storage::commit::commit_write(w).await.unwrap();
    let state = check(&wh).await;
    assert_eq!(state.len(), 1);
}

#[tokio::test]
async fn truncate_drops_the_index_and_writes_start_afresh() {
    let (wh, t) = table("2").await;
    upsert(&t, &[(1, "a", "x"), (2, "a", "x"), (3, "a", "x")]).await;
    crate::storage::commit::truncate(&t).await.unwrap();
    let t = wh.open_table("public", "t").await.unwrap();
    let s = t.snapshots().latest().await.unwrap().unwrap();
    assert!(s.index_manifest.is_none());
    upsert(&t, &[(3, "b", "x")]).await;
    let state = check(&wh).await;
    assert_eq!(state[&("x".to_owned(), 3)], (0, "b".to_owned()));
}
