//! Storage's one test kit: the fixtures every storage test builds on (an in-memory warehouse,
//! the test tables, batches of their rows, a commit of them) and **one way to read a table's
//! rows at a version** — scan planning and merge-on-read per split, exactly as queries read
//! them — so that no test carries its own copy of the read path and a change to it is tested
//! everywhere at once.
//!
//! Test code only (`#[cfg(test)]`); the layering rule exempts it, so it may name any floor.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Int64Type, SchemaRef};
use futures::TryStreamExt;

use crate::storage::io::clock::{Clock, ManualClock};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::read::scan::{ScanFilter, Split};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, MAX_LENGTH, PaimonType, TypeKind};
use crate::storage::write::table_write::{TableWrite, WriteMode};
use crate::storage::{StorageError, Table, Warehouse, WarehouseLocation};

/// The clock's time when a test table with a [`ManualClock`] is created.
pub(crate) const START: i64 = 1_800_000_000_000;

// ---- warehouses and tables ----

/// An in-memory warehouse with the database `public`, on `clock` when given.
pub(crate) async fn warehouse(clock: Option<Arc<dyn Clock>>) -> Warehouse {
    let mut wh = Warehouse::open(&WarehouseLocation::Memory).unwrap();
    if let Some(clock) = clock {
        wh = wh.with_clock(clock);
    }
    wh.create_database("public").await.unwrap();
    wh
}

/// `public.t` of `schema` on a new in-memory warehouse.
pub(crate) async fn create(schema: TableSchema) -> (Warehouse, Table) {
    let wh = warehouse(None).await;
    let t = wh.create_table("public", "t", schema).await.unwrap();
    (wh, t)
}

fn options_map(options: &[(&str, &str)]) -> BTreeMap<String, String> {
    options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `(id BIGINT NOT NULL, v <v>, dt STRING NOT NULL)`, primary key `(id, dt)`, partitioned by
/// `dt`, with `options`.
pub(crate) fn partitioned_schema(v: PaimonType, options: &[(&str, &str)]) -> TableSchema {
    TableSchema {
        id: 0,
        fields: vec![
            DataField::new(0, "id", PaimonType::new(TypeKind::BigInt, false)),
            DataField::new(1, "v", v),
            DataField::new(
                2,
                "dt",
                PaimonType::new(TypeKind::VarChar(MAX_LENGTH), false),
            ),
        ],
        highest_field_id: 2,
        partition_keys: vec!["dt".into()],
        primary_keys: vec!["id".into(), "dt".into()],
        options: options_map(options),
        comment: None,
        time_millis: 0,
    }
}

/// `id BIGINT NOT NULL PRIMARY KEY` followed by `columns`, with `options`.
pub(crate) fn keyed_schema(
    columns: &[(&str, PaimonType)],
    options: &[(&str, &str)],
) -> TableSchema {
    let mut fields = vec![DataField::new(
        0,
        "id",
        PaimonType::new(TypeKind::BigInt, false),
    )];
    for (i, (name, t)) in columns.iter().enumerate() {
        fields.push(DataField::new(i as i32 + 1, *name, t.clone()));
    }
    TableSchema {
        id: 0,
        highest_field_id: fields.len() as i32 - 1,
        fields,
        partition_keys: Vec::new(),
        primary_keys: vec!["id".into()],
        options: options_map(options),
        comment: None,
        time_millis: 0,
    }
}

/// The table most maintenance tests use: [`partitioned_schema`] with `v BIGINT`, 2 buckets
/// unless `options` say otherwise, on a [`ManualClock`] at `clock`'s time.
pub(crate) async fn table_with_clock(options: &[(&str, &str)], clock: Arc<ManualClock>) -> Table {
    let wh = warehouse(Some(clock)).await;
    let mut all = vec![("bucket", "2")];
    all.extend_from_slice(options);
    let schema = partitioned_schema(PaimonType::nullable(TypeKind::BigInt), &all);
    wh.create_table("public", "t", schema).await.unwrap()
}

/// [`table_with_clock`] with a clock at [`START`].
pub(crate) async fn table(options: &[(&str, &str)]) -> Table {
    table_with_clock(options, ManualClock::new(START)).await
}

// ---- writing ----

/// The Arrow schema of batches tests write into a table of `schema` (every field, in order).
pub(crate) fn arrow_schema(schema: &TableSchema) -> SchemaRef {
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields
        .iter()
        .map(|f| {
            arrow::datatypes::Field::new(
                &f.name,
                f.data_type.to_arrow().unwrap(),
                f.data_type.nullable,
            )
        })
        .collect();
    Arc::new(arrow::datatypes::Schema::new(fields))
}

/// A value column of test rows.
pub(crate) trait Column: Copy {
    fn array(values: Vec<Self>) -> ArrayRef;
}

impl Column for i64 {
    fn array(values: Vec<Self>) -> ArrayRef {
        Arc::new(Int64Array::from(values))
    }
}

impl Column for &str {
    fn array(values: Vec<Self>) -> ArrayRef {
        Arc::new(StringArray::from(values))
    }
}

/// `(id, v, dt)` rows of a [`partitioned_schema`] table.
pub(crate) fn batch<V: Column>(t: &Table, rows: &[(i64, V, &str)]) -> RecordBatch {
    RecordBatch::try_new(
        arrow_schema(t.schema()),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            V::array(rows.iter().map(|r| r.1).collect()),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
        ],
    )
    .unwrap()
}

/// Writes `rows` in batches of 1,000 in one transaction; its snapshot id, if it made one.
pub(crate) async fn try_write<V: Column>(
    t: &Table,
    mode: WriteMode,
    rows: &[(i64, V, &str)],
) -> Result<Option<i64>, StorageError> {
    let mut w = TableWrite::new(t.clone(), mode).await?;
    for chunk in rows.chunks(1000) {
        w.write(batch(t, chunk)).await?;
    }
    crate::storage::commit::commit_write(w).await
}

/// [`try_write`] that must succeed and make a snapshot; its id.
pub(crate) async fn write<V: Column>(t: &Table, mode: WriteMode, rows: &[(i64, V, &str)]) -> i64 {
    try_write(t, mode, rows).await.unwrap().expect("a snapshot")
}

/// [`write`] as upserts.
pub(crate) async fn upsert<V: Column>(t: &Table, rows: &[(i64, V, &str)]) -> i64 {
    write(t, WriteMode::Upsert, rows).await
}

// ---- reading ----

/// Snapshot `id` of `t`.
pub(crate) async fn snapshot(t: &Table, id: i64) -> Snapshot {
    t.snapshots().get(id).await.unwrap().unwrap()
}

/// The rows of `t` at `version` (the latest when `None`), split by split: the fields `values`
/// (indexes into the current schema) of each split's merged rows, in the split's order (key
/// order for primary-key tables). Scan planning and merge-on-read, as a query reads.
pub(crate) async fn splits_at(
    t: &Table,
    version: Option<&Snapshot>,
    values: &[usize],
) -> Vec<(Split, Vec<RecordBatch>)> {
    splits_planned(t, version, &ScanFilter::default(), values).await
}

/// [`splits_at`] of the splits `filter` plans (which may hold more rows than it matches).
pub(crate) async fn splits_planned(
    t: &Table,
    version: Option<&Snapshot>,
    filter: &ScanFilter,
    values: &[usize],
) -> Vec<(Split, Vec<RecordBatch>)> {
    try_splits_planned(t, version, filter, values)
        .await
        .unwrap()
}

/// [`splits_planned`] that returns the first error on the way instead of failing the test.
pub(crate) async fn try_splits_planned(
    t: &Table,
    version: Option<&Snapshot>,
    filter: &ScanFilter,
    values: &[usize],
) -> Result<Vec<(Split, Vec<RecordBatch>)>, StorageError> {
    let plan = t.plan_scan(version, filter).await?;
    let layout = t.read_layout(values);
    let columns: Vec<usize> =
        (layout.value_offset()..layout.value_offset() + values.len()).collect();
    let mut out = Vec::new();
    for split in plan.splits {
        let batches: Vec<RecordBatch> = t.read_split(&split, &layout).await?.try_collect().await?;
        let batches = batches
            .into_iter()
            .map(|b| {
                assert_eq!(b.num_columns(), layout.value_offset() + values.len());
                b.project(&columns).unwrap()
            })
            .collect();
        out.push((split, batches));
    }
    Ok(out)
}

/// [`batches_at`] that returns the first error on the way instead of failing the test.
pub(crate) async fn try_batches_at(
    t: &Table,
    version: Option<&Snapshot>,
    values: &[usize],
) -> Result<Vec<RecordBatch>, StorageError> {
    let splits = try_splits_planned(t, version, &ScanFilter::default(), values).await?;
    Ok(splits
        .into_iter()
        .flat_map(|(_, batches)| batches)
        .collect())
}

/// [`splits_at`] without the splits: every row of `t` at `version`.
pub(crate) async fn batches_at(
    t: &Table,
    version: Option<&Snapshot>,
    values: &[usize],
) -> Vec<RecordBatch> {
    splits_at(t, version, values)
        .await
        .into_iter()
        .flat_map(|(_, batches)| batches)
        .collect()
}

/// Column `c` of `b` as `i64`s.
pub(crate) fn i64s(b: &RecordBatch, c: usize) -> &arrow::array::PrimitiveArray<Int64Type> {
    b.column(c).as_primitive::<Int64Type>()
}

/// Column `c` of `b` as strings.
pub(crate) fn strings(b: &RecordBatch, c: usize) -> &StringArray {
    b.column(c).as_string::<i32>()
}

/// `(dt, id) → v` of a [`table`] at `version`.
pub(crate) async fn rows_at(t: &Table, version: &Snapshot) -> BTreeMap<(String, i64), i64> {
    let mut out = BTreeMap::new();
    for b in batches_at(t, Some(version), &[0, 1, 2]).await {
        let (id, v, dt) = (i64s(&b, 0), i64s(&b, 1), strings(&b, 2));
        for i in 0..b.num_rows() {
            assert!(!v.is_null(i));
            out.insert((dt.value(i).to_owned(), id.value(i)), v.value(i));
        }
    }
    out
}

// ---- files ----

fn relative(t: &Table, path: &object_store::path::Path) -> String {
    path.as_ref()
        .strip_prefix(&format!("{}/", t.path()))
        .unwrap_or(path.as_ref())
        .to_owned()
}

/// Files of `t` in `manifest/` and the bucket folders, relative to the table.
pub(crate) async fn files(t: &Table) -> BTreeSet<String> {
    t.io()
        .list(t.path())
        .await
        .unwrap()
        .iter()
        .map(|m| relative(t, &m.location))
        .filter(|p| p.starts_with("manifest/") || p.contains("bucket-"))
        .collect()
}

/// Every file `versions` need: manifest lists, manifests, live data files and their own
/// changelog files.
pub(crate) async fn referenced(t: &Table, versions: &[Snapshot]) -> BTreeSet<String> {
    use crate::storage::maintenance::expire::{entries_of_list, names_of_list, snapshot_lists};
    let mut out = BTreeSet::new();
    let types = t.partition_types();
    for s in versions {
        for list in snapshot_lists(s) {
            for name in names_of_list(t, list, false).await.unwrap() {
                out.insert(format!("manifest/{name}"));
            }
        }
        if let Some(list) = &s.changelog_manifest_list {
            for m in entries_of_list(t, list, false).await.unwrap() {
                for e in m.iter() {
                    let partition =
                        crate::storage::spec::binary_row::deserialize(&e.partition, &types)
                            .unwrap();
                    let path = t.bucket_path(&partition, e.bucket);
                    out.insert(relative(t, &path.join(e.file.file_name.as_str())));
                }
            }
        }
        let plan = t.plan_scan(Some(s), &ScanFilter::default()).await.unwrap();
        for split in plan.splits {
            for f in split.files {
                let path = t.bucket_path(&split.partition, split.bucket);
                out.insert(relative(t, &path.join(f.file_name.as_str())));
            }
        }
    }
    out
}

/// The data files among `files`.
pub(crate) fn data_files(files: &BTreeSet<String>) -> BTreeSet<String> {
    files
        .iter()
        .filter(|f| f.contains("bucket-"))
        .cloned()
        .collect()
}
