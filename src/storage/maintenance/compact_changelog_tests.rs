//! Changelogs produced by compaction (`changelog-producer` = `lookup` / `full-compaction`),
//! end to end on an in-memory warehouse: replaying the changelog from the empty table rebuilds
//! the table after every compaction, each retraction retracts the row it replaces, and writes
//! alone produce none.

use std::collections::BTreeMap;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;

use crate::storage::Table;
use crate::storage::maintenance::compact_sim::SplitMix64;
use crate::storage::maintenance::compact_tests::{commit, files, rows, table};
use crate::storage::maintenance::compactor::{compact_full, compact_minor};
use crate::storage::meta::snapshot::CommitKind;

/// Replays the changelog of every snapshot up to the latest onto an empty table, checking
/// that `-U`/`-D` retract exactly the row the key holds; returns the rows and how many change
/// rows each snapshot kind had.
async fn replay(t: &Table) -> (BTreeMap<i64, String>, BTreeMap<&'static str, usize>) {
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    let batches: Vec<RecordBatch> = t.changelog(None, &latest).await.unwrap();
    let mut state: BTreeMap<i64, String> = BTreeMap::new();
    let mut by_kind: BTreeMap<&'static str, usize> = BTreeMap::new();
    for b in batches {
        let kind = b.column(0).as_string::<i32>();
        let snapshot = b.column(1).as_primitive::<Int64Type>();
        let id = b.column(2).as_primitive::<Int64Type>();
        let v = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            let s = t
                .snapshots()
                .get(snapshot.value(i))
                .await
                .unwrap()
                .expect("retained");
            *by_kind
                .entry(match s.commit_kind {
                    CommitKind::Compact => "compact",
                    _ => "other",
                })
                .or_default() += 1;
            let (id, v) = (id.value(i), v.value(i).to_owned());
            match kind.value(i) {
                "+I" | "+U" => {
                    assert!(
                        state.insert(id, v).is_none(),
                        "{id} added while live (snapshot {})",
                        s.id
                    );
                }
                "-U" | "-D" => {
                    assert_eq!(state.remove(&id), Some(v), "{id} retracted wrongly");
                }
                k => panic!("row kind {k}"),
            }
        }
    }
    (state, by_kind)
}

async fn random_rounds(t: &Table, seed: u64, compact: bool) {
    let mut rng = SplitMix64(seed);
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    for round in 0..6 {
        for c in 0..3 {
            let mut batch: BTreeMap<i64, Option<String>> = BTreeMap::new();
            for _ in 0..30 {
                let id = rng.below(120) as i64;
                let v = (!rng.chance(20)).then(|| format!("r{round}c{c}-{}", rng.below(3)));
                batch.insert(id, v);
            }
            let rows_in: Vec<(i64, Option<&str>)> =
                batch.iter().map(|(i, v)| (*i, v.as_deref())).collect();
            commit(t, &rows_in).await;
            for (i, v) in batch {
                match v {
                    Some(v) => model.insert(i, v),
                    None => model.remove(&i),
                };
            }
        }
        assert_eq!(rows(t).await, model, "round {round}");
        if compact {
            compact_minor(t).await.unwrap();
            assert!(files(t).await.iter().all(|f| f.level > 0), "level 0 left");
            let (replayed, by_kind) = replay(t).await;
            assert_eq!(replayed, model, "round {round}: changelog replay");
            assert_eq!(by_kind.get("other"), None, "writes produced changes");
        }
    }
}

#[tokio::test]
async fn lookup_changelog_replays_to_the_table() {
    let t = table(&[("changelog-producer", "lookup"), ("write-only", "true")]).await;
    random_rounds(&t, 11, true).await;
}

#[tokio::test]
async fn lookup_changelog_with_deletion_vectors_replays_to_the_table() {
    let t = table(&[
        ("changelog-producer", "lookup"),
        ("deletion-vectors.enabled", "true"),
        ("write-only", "true"),
    ])
    .await;
    random_rounds(&t, 12, true).await;
}

#[tokio::test]
async fn full_compaction_changelog_replays_to_the_table() {
    let t = table(&[
        ("changelog-producer", "full-compaction"),
        ("write-only", "true"),
    ])
    .await;
    random_rounds(&t, 13, true).await;
    // A full compaction leaves one run at the max level.
    let levels: Vec<i32> = files(&t).await.iter().map(|f| f.level).collect();
    assert!(levels.iter().all(|l| *l == levels[0]), "{levels:?}");
}

#[tokio::test]
async fn writes_alone_produce_no_changelog_until_compaction() {
    let t = table(&[("changelog-producer", "lookup"), ("write-only", "true")]).await;
    commit(&t, &[(1, Some("a")), (2, Some("b"))]).await;
    commit(&t, &[(1, Some("a2")), (2, None), (3, Some("c"))]).await;
    let (replayed, by_kind) = replay(&t).await;
    assert!(replayed.is_empty() && by_kind.is_empty());
    compact_full(&t, &[]).await.unwrap();
    let (replayed, _) = replay(&t).await;
    assert_eq!(replayed, rows(&t).await);
    assert_eq!(replayed.len(), 2);
}

#[tokio::test]
async fn row_deduplicate_leaves_out_unchanged_rows() {
    let t = table(&[
        ("changelog-producer", "lookup"),
        ("changelog-producer.row-deduplicate", "true"),
        ("write-only", "true"),
    ])
    .await;
    commit(&t, &[(1, Some("a")), (2, Some("b"))]).await;
    compact_minor(&t).await.unwrap();
    commit(&t, &[(1, Some("a")), (2, Some("b2"))]).await;
    compact_minor(&t).await.unwrap();
    let latest = t.snapshots().latest().await.unwrap().unwrap();
    let batches = t.changelog(None, &latest).await.unwrap();
    let mut seen: Vec<(String, i64)> = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            seen.push((
                b.column(0).as_string::<i32>().value(i).to_owned(),
                b.column(2).as_primitive::<Int64Type>().value(i),
            ));
        }
    }
    let expected: Vec<(String, i64)> = [("+I", 1), ("+I", 2), ("-U", 2), ("+U", 2)]
        .iter()
        .map(|(k, id)| (k.to_string(), *id))
        .collect();
    assert_eq!(seen, expected);
}
