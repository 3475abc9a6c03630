//! The sorted structure against the list of runs it replaces: random statements (every write
//! mode, deletes, keys written again), savepoint rollbacks, and what reads, commits and spills
//! see must equal what `fold_runs` makes of the runs the old design kept.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{AsArray, Int8Array, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::Int32Type;

use super::*;
use crate::storage::lsm::data_file::kind;
use crate::storage::lsm::memrun::{fold_runs, fold_statement, key_rows};
use crate::storage::spec::schema::TableSchema;

fn schema() -> TableSchema {
    let json = r#"{"version":3,"id":0,"fields":[
        {"id":0,"name":"id","type":"INT NOT NULL"},
        {"id":1,"name":"v","type":"STRING"}],
        "highestFieldId":1,"partitionKeys":[],"primaryKeys":["id"],
        "options":{"bucket":"1"},"timeMillis":0}"#;
    TableSchema::from_json(json.as_bytes()).unwrap()
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// A folded statement of `rows` (key, value, kind) in `mode`, or `None` when its folding
/// refuses it (a key twice under INSERT).
fn statement(
    s: &TableSchema,
    stmt: u32,
    mode: WriteMode,
    read_at: i64,
    rows: &[(i32, String, i8)],
) -> Option<MemRun> {
    let batch = RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
        ),
        (
            "v",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.clone()),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    let kinds = Int8Array::from_iter_values(rows.iter().map(|r| r.2));
    let folded = fold_statement(s, batch, kinds, mode).unwrap().ok()?;
    let bytes = folded.rows.get_array_memory_size();
    Some(MemRun {
        stmt,
        mode,
        read_at,
        read_lsn: 0,
        partition: Vec::new(),
        partition_bytes: Vec::new(),
        bucket: 0,
        keys: folded.keys,
        kinds: folded.kinds,
        rows: folded.rows,
        probes: folded.probes,
        bytes,
    })
}

/// (key, value, kind) of every row of `runs` folded as a commit folds them.
fn folded(s: &TableSchema, runs: &[&MemRun]) -> Vec<(i32, String, i8)> {
    if runs.is_empty() {
        return Vec::new();
    }
    let layers = fold_runs(s, runs).unwrap();
    assert_eq!(layers.len(), 1, "plain deduplicate folds to one run");
    rows_of(&layers[0].rows, &layers[0].kinds)
}

fn rows_of(rows: &RecordBatch, kinds: &Int8Array) -> Vec<(i32, String, i8)> {
    let ids = rows.column(0).as_primitive::<Int32Type>();
    let vs = rows.column(1).as_string::<i32>();
    (0..rows.num_rows())
        .map(|i| (ids.value(i), vs.value(i).to_owned(), kinds.value(i)))
        .collect()
}

fn merge(t: &mut MemTable, run: &MemRun) {
    let keys = key_rows(&run.keys).unwrap();
    t.merge(run.clone(), &keys).unwrap();
}

/// The strictest check of every run that wrote each key (what the old commit checked).
fn checks(runs: &[&MemRun]) -> BTreeMap<i32, Option<Check>> {
    let mut out: BTreeMap<i32, Option<Check>> = BTreeMap::new();
    for r in runs {
        let ids = r.rows.column(0).as_primitive::<Int32Type>();
        for i in 0..r.len() {
            let e = out.entry(ids.value(i)).or_default();
            *e = Check::combine(*e, Check::of(r.mode, r.read_at, 0));
        }
    }
    out
}

#[test]
fn matches_the_runs_it_replaces_through_statements_and_rollbacks() {
    let s = schema();
    for seed in 0..60u64 {
        let mut rng = Rng(seed);
        let mut table = MemTable::new(Vec::new(), Vec::new(), 0, vec![0]);
        let mut runs: Vec<MemRun> = Vec::new();
        let mut marks: BTreeSet<u32> = BTreeSet::new();
        for stmt in 1..=40u32 {
            let ctx = format!("seed {seed} statement {stmt}");
            if rng.below(8) == 0 {
                marks.insert(stmt - 1);
            }
            if rng.below(10) == 0 && !marks.is_empty() {
                // ROLLBACK TO SAVEPOINT: some mark taken earlier.
                let list: Vec<u32> = marks.iter().copied().collect();
                let mark = list[rng.below(list.len() as u64) as usize];
                table.rollback_to(mark);
                runs.retain(|r| r.stmt <= mark);
                marks.retain(|&m| m <= mark);
            }
            let mode = match rng.below(3) {
                0 => WriteMode::Insert,
                1 => WriteMode::Upsert,
                _ => WriteMode::Change,
            };
            let n = 1 + rng.below(6) as usize;
            let rows: Vec<(i32, String, i8)> = (0..n)
                .map(|i| {
                    let k = rng.below(25) as i32;
                    let kind = match (mode, rng.below(4)) {
                        (WriteMode::Change, 0) => kind::DELETE,
                        (WriteMode::Change, 1) => kind::UPDATE_AFTER,
                        _ => kind::INSERT,
                    };
                    (k, format!("s{stmt}r{i}"), kind)
                })
                .collect();
            let Some(run) = statement(&s, stmt, mode, rng.below(5) as i64, &rows) else {
                continue;
            };
            merge(&mut table, &run);
            runs.push(run);
            if rng.below(7) == 0 {
                // A statement that fails after its rows were merged: undone alone.
                table.rollback_to(stmt - 1);
                runs.pop();
            }
            let refs: Vec<&MemRun> = runs.iter().collect();
            let expected = folded(&s, &refs);
            let got = if table.is_empty() {
                Vec::new()
            } else {
                let run = table.run().unwrap();
                rows_of(&run.rows, &run.kinds)
            };
            assert_eq!(got, expected, "{ctx}: reads");
            // A read by key: the versions of just those keys, in key order.
            let wanted: Vec<i32> = (0..3).map(|_| rng.below(25) as i32).collect();
            let encoded: Vec<Vec<u8>> =
                key_rows(&[Arc::new(Int32Array::from(wanted.clone())) as ArrayRef])
                    .unwrap()
                    .iter()
                    .map(|r| r.as_ref().to_vec())
                    .collect();
            let by_key = match table.run_of(&encoded).unwrap() {
                Some(run) => rows_of(&run.rows, &run.kinds),
                None => Vec::new(),
            };
            let of_keys: Vec<_> = expected
                .iter()
                .filter(|r| wanted.contains(&r.0))
                .cloned()
                .collect();
            assert_eq!(by_key, of_keys, "{ctx}: read of keys {wanted:?}");
            assert_eq!(table.len(), expected.len(), "{ctx}");

            // A commit: the runs by check hold every key once, with the old checks.
            if !table.is_empty() {
                let want = checks(&refs);
                let mut seen = BTreeMap::new();
                for r in table.runs_by_check().unwrap() {
                    let check = Check::of(r.mode, r.read_at, 0);
                    for row in rows_of(&r.rows, &r.kinds) {
                        assert!(
                            seen.insert(row.0, (row, check)).is_none(),
                            "{ctx}: key twice"
                        );
                    }
                }
                let keys: Vec<(i32, String, i8)> = seen.values().map(|v| v.0.clone()).collect();
                assert_eq!(keys, expected, "{ctx}: commit runs");
                for (k, (_, check)) in &seen {
                    assert_eq!(*check, want[k], "{ctx}: check of key {k}");
                }
            }

            // A spill: rolling back to any mark afterwards keeps exactly the intervals up to it.
            if !table.is_empty() && rng.below(5) == 0 {
                let mut spill_marks = marks.clone();
                spill_marks.insert(stmt - 1);
                let epochs = table.epochs(&spill_marks).unwrap();
                let ends: Vec<u32> = epochs.iter().map(|e| e.0).collect();
                assert!(
                    ends.windows(2).all(|w| w[0] < w[1]),
                    "{ctx}: epochs oldest first"
                );
                for &mark in spill_marks.iter().chain([&stmt]) {
                    let kept: Vec<&MemRun> = epochs
                        .iter()
                        .filter(|e| e.0 <= mark)
                        .flat_map(|e| e.1.iter())
                        .collect();
                    let want: Vec<&MemRun> = runs.iter().filter(|r| r.stmt <= mark).collect();
                    assert_eq!(
                        folded(&s, &kept),
                        folded(&s, &want),
                        "{ctx}: spill, back to {mark}"
                    );
                }
            }
        }
    }
}

#[test]
fn lookups_see_the_newest_version_and_rollback_restores_the_older() {
    let s = schema();
    let mut t = MemTable::new(Vec::new(), Vec::new(), 0, vec![0]);
    let a = statement(
        &s,
        1,
        WriteMode::Insert,
        0,
        &[(1, "a".into(), kind::INSERT)],
    )
    .unwrap();
    let b = statement(
        &s,
        2,
        WriteMode::Change,
        3,
        &[(1, "b".into(), kind::DELETE)],
    )
    .unwrap();
    merge(&mut t, &a);
    merge(&mut t, &b);
    let key = key_rows(&a.keys).unwrap();
    let v = *t.get(key.row(0).as_ref()).unwrap();
    assert_eq!((v.kind, v.stmt), (kind::DELETE, 2));
    assert_eq!(
        v.check,
        Some(Check {
            insert: true,
            read_at: 0,
            read_lsn: 0
        })
    );
    t.rollback_to(1);
    let v = *t.get(key.row(0).as_ref()).unwrap();
    assert_eq!((v.kind, v.stmt), (kind::INSERT, 1));
    t.rollback_to(0);
    assert!(t.is_empty() && t.bytes() == 0);
}
