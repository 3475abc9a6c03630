//! Manifests stay small: what planning a scan opens after many commits.
//!
//! Single-row upsert commits into a 4-bucket primary-key table on `memory://` (no disk, an
//! injected clock one second per commit, so snapshot expiration by time behaves as in a day of
//! traffic), with tarn's defaults: background compaction, snapshot expiration, minor manifest
//! merging. After each checkpoint it prints the manifests and manifest bytes a full scan plan
//! opens, the data files it finds and the commits per second; flat figures across checkpoints
//! mean planning cost does not grow with history.
//!
//! `cargo bench --profile dev --bench manifests`; `TARN_MANIFEST_COMMITS` (default
//! `100,1000,10000`) lists the checkpoints, e.g. `100,1000,10000,100000` for the long run.

use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use tarn::storage::bench::ManualClock;
use tarn::storage::spec::options::expire::TARN_DEFAULT_OPTIONS;
use tarn::storage::spec::schema::TableSchema;
use tarn::storage::spec::types::{DataField, MAX_LENGTH, PaimonType, TypeKind};
use tarn::storage::{
    CompactorState, ScanFilter, TableWrite, Warehouse, WarehouseLocation, WriteMode,
};

fn schema() -> TableSchema {
    TableSchema {
        id: 0,
        fields: vec![
            DataField::new(0, "id", PaimonType::new(TypeKind::BigInt, false)),
            DataField::new(1, "v", PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH))),
        ],
        highest_field_id: 1,
        partition_keys: Vec::new(),
        primary_keys: vec!["id".into()],
        // tarn's defaults, as CREATE TABLE writes them (retention bounded in count).
        options: [("bucket", "4")]
            .iter()
            .chain(TARN_DEFAULT_OPTIONS)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        comment: None,
        time_millis: 0,
    }
}

#[tokio::main]
async fn main() {
    let checkpoints: Vec<u64> = std::env::var("TARN_MANIFEST_COMMITS")
        .unwrap_or_else(|_| "100,1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let clock = ManualClock::new(1_780_000_000_000);
    let wh = Warehouse::open(&WarehouseLocation::Memory)
        .unwrap()
        .with_clock(clock.clone());
    wh.create_database("public").await.unwrap();
    let table = wh.create_table("public", "m", schema()).await.unwrap();
    let arrow = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]));
    println!(
        "{:>8} {:>10} {:>14} {:>11} {:>10} {:>9} {:>10}",
        "commits", "manifests", "manifest bytes", "data files", "snapshots", "commits/s", "plan ms"
    );
    let (mut done, started) = (0u64, Instant::now());
    for &target in &checkpoints {
        while done < target {
            let id = (done * 7_919) as i64 % 10_000;
            let batch = RecordBatch::try_new(
                Arc::clone(&arrow),
                vec![
                    Arc::new(Int64Array::from(vec![id])),
                    Arc::new(StringArray::from(vec![format!("v{done}")])),
                ],
            )
            .unwrap();
            let mut w = TableWrite::new(table.clone(), WriteMode::Upsert)
                .await
                .unwrap();
            w.write(batch).await.unwrap();
            tarn::storage::commit_write(w).await.unwrap();
            clock.advance(1_000);
            done += 1;
        }
        // Let the background compaction and expiration of the last commits finish.
        while !table.state::<CompactorState>().is_idle() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let mut last = 0;
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            let now = table.snapshots().list_ids().await.unwrap().len();
            if now == last {
                break;
            }
            last = now;
        }
        let t0 = Instant::now();
        let plan = table.plan_scan(None, &ScanFilter::default()).await.unwrap();
        let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
        let files: usize = plan.splits.iter().map(|s| s.files.len()).sum();
        let snapshots = table.snapshots().list_ids().await.unwrap().len();
        println!(
            "{:>8} {:>10} {:>14} {:>11} {:>10} {:>9.0} {:>10.1}",
            done,
            plan.manifests_read,
            plan.manifest_bytes_read,
            files,
            snapshots,
            done as f64 / started.elapsed().as_secs_f64(),
            plan_ms
        );
    }
}
