//! Merge engines against Paimon: tables written by pypaimon 2.1 with partial-update,
//! aggregation and `sequence.field` (and, where pypaimon cannot merge them, with retractions,
//! `ignore-delete`, `remove-record-on-delete` and sequence groups) read through tarn's storage
//! layer must give the rows Paimon gives.
//!
//! `tests/python/merge_engine_oracle.py` writes the tables over several commits and prints, per
//! table, the merged rows: pypaimon's own read where pypaimon implements the table's merge
//! semantics, otherwise the rows Paimon Java's merge functions produce (worked out in the
//! script's comments). Every table is read whole and column by column (a projection that leaves
//! out the sequence fields the merge needs).
//!
//! The interpreter is `TARN_TEST_PYTHON`, else `$HOME/.cache/tarn-venv/bin/python` (what
//! `scripts/test.sh` creates); it needs pypaimon. Without one this test fails and says so: it
//! never skips.

mod common;
use common::{TempDir, repo_path};
use std::process::Command;

use arrow::array::RecordBatch;
use futures::TryStreamExt;
use serde_json::{Value as Json, json};
use tarn::storage::spec::datum::{Datum, decimal_text};
use tarn::storage::spec::types::TypeKind;
use tarn::storage::{ScanFilter, Table, Warehouse, WarehouseLocation};

fn python() -> String {
    common::python_with("pypaimon", "the merge engine test")
}

/// Rows of `table` read with value columns `values` (schema field indexes), as JSON values the
/// oracle prints, sorted.
async fn read(table: &Table, values: &[usize]) -> Vec<Vec<Json>> {
    let plan = table.plan_scan(None, &ScanFilter::default()).await.unwrap();
    let layout = table.read_layout(values);
    let offset = layout.value_offset();
    let mut rows: Vec<Vec<Json>> = Vec::new();
    for split in &plan.splits {
        let batches: Vec<RecordBatch> = table
            .read_split(split, &layout)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", table.name()))
            .try_collect()
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", table.name()));
        for b in &batches {
            assert_eq!(b.num_columns(), offset + values.len(), "{}", table.name());
            for i in 0..b.num_rows() {
                rows.push(
                    layout
                        .values
                        .iter()
                        .enumerate()
                        .map(|(j, f)| {
                            let d =
                                Datum::from_array(b.column(offset + j), i, &f.data_type).unwrap();
                            to_json(d, &f.data_type.kind)
                        })
                        .collect(),
                );
            }
        }
    }
    sorted(rows)
}

fn to_json(d: Datum, kind: &TypeKind) -> Json {
    match d {
        Datum::Null => Json::Null,
        Datum::Boolean(v) => json!(v),
        Datum::TinyInt(v) => json!(v),
        Datum::SmallInt(v) => json!(v),
        Datum::Int(v) => json!(v),
        Datum::BigInt(v) => json!(v),
        Datum::Float(v) => json!(v),
        Datum::Double(v) => json!(v),
        Datum::String(v) => json!(v),
        Datum::Decimal(v) => match kind {
            TypeKind::Decimal { scale, .. } => json!(decimal_text(v, *scale)),
            other => panic!("decimal value of type {other:?}"),
        },
        other => panic!("unexpected value {other:?}"),
    }
}

fn sorted(mut rows: Vec<Vec<Json>>) -> Vec<Vec<Json>> {
    rows.sort_by_key(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>());
    rows
}

#[tokio::test]
async fn tables_pypaimon_writes_merge_as_paimon_merges_them() {
    let python = python();
    let warehouse = TempDir::new("merge-engines");
    let out = Command::new(&python)
        .arg(repo_path("tests/python/merge_engine_oracle.py"))
        .arg(warehouse.path())
        .output()
        .expect("run merge_engine_oracle.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "merge_engine_oracle.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    let expected: serde_json::Map<String, Json> = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("oracle output is not JSON ({e}): {last}"));
    assert_eq!(expected.len(), 11, "tables: {:?}", expected.keys());

    let wh = Warehouse::open(&WarehouseLocation::Local(warehouse.path().to_path_buf())).unwrap();
    for (name, case) in &expected {
        let table = wh.open_table("public", name).await.unwrap();
        let oracle = case["oracle"].as_str().unwrap();
        let columns: Vec<&str> = case["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let rows: Vec<Vec<Json>> = case["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().clone())
            .collect();
        let index = |c: &str| table.schema().field_index(c).unwrap();
        let all: Vec<usize> = columns.iter().map(|c| index(c)).collect();
        assert_eq!(
            read(&table, &all).await,
            sorted(rows.clone()),
            "{name}: tarn's merged rows vs {oracle}'s"
        );
        // Each column with the key only: the merge reads the sequence fields it needs anyway.
        for (j, column) in columns.iter().enumerate().skip(1) {
            let projected: Vec<Vec<Json>> = rows
                .iter()
                .map(|r| vec![r[0].clone(), r[j].clone()])
                .collect();
            assert_eq!(
                read(&table, &[index("id"), index(column)]).await,
                sorted(projected),
                "{name}: column {column} read alone vs {oracle}'s"
            );
        }
    }
}
