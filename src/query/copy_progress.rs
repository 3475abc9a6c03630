//! `pg_stat_progress_copy`: one row per running COPY in this server, with PostgreSQL 14+'s
//! columns, read from a registry every COPY updates as it goes.
//!
//! The registry is server-wide (every session sees every COPY, as in PostgreSQL); a COPY
//! holds a [`CopyProgress`] whose counters it bumps per batch, and its row disappears when that
//! handle is dropped (the COPY ended, failed or its connection went away).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::{MemTable, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

/// The view's name in `pg_catalog`.
pub const VIEW: &str = "pg_stat_progress_copy";

/// One running COPY's counters.
#[derive(Debug)]
pub struct CopyProgress {
    id: u64,
    pid: i32,
    relation: String,
    command: &'static str,
    kind: &'static str,
    bytes: AtomicU64,
    tuples: AtomicU64,
    registry: Weak<CopyProgressRegistry>,
}

impl CopyProgress {
    pub fn set_bytes(&self, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn add_tuples(&self, n: u64) {
        self.tuples.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for CopyProgress {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry
                .running
                .lock()
                .expect("progress lock")
                .remove(&self.id);
        }
    }
}

/// Every running COPY of the server.
#[derive(Debug, Default)]
pub struct CopyProgressRegistry {
    next: AtomicU64,
    running: Mutex<BTreeMap<u64, Weak<CopyProgress>>>,
}

impl CopyProgressRegistry {
    /// Registers a COPY of `relation` by backend `pid` (`command`: `COPY FROM` / `COPY TO`;
    /// `kind`: `PIPE` for STDIN/STDOUT).
    pub fn start(
        self: &Arc<Self>,
        pid: i32,
        relation: &str,
        command: &'static str,
        kind: &'static str,
    ) -> Arc<CopyProgress> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let progress = Arc::new(CopyProgress {
            id,
            pid,
            relation: relation.to_owned(),
            command,
            kind,
            bytes: AtomicU64::new(0),
            tuples: AtomicU64::new(0),
            registry: Arc::downgrade(self),
        });
        self.running
            .lock()
            .expect("progress lock")
            .insert(id, Arc::downgrade(&progress));
        progress
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("pid", DataType::Int32, true),
            Field::new("datid", DataType::UInt32, true),
            Field::new("datname", DataType::Utf8, true),
            Field::new("relid", DataType::UInt32, true),
            Field::new("command", DataType::Utf8, true),
            Field::new("type", DataType::Utf8, true),
            Field::new("bytes_processed", DataType::Int64, true),
            Field::new("bytes_total", DataType::Int64, true),
            Field::new("tuples_processed", DataType::Int64, true),
            Field::new("tuples_excluded", DataType::Int64, true),
            // tarn's own: which table (PostgreSQL shows only relid).
            Field::new("relname", DataType::Utf8, true),
        ]))
    }

    fn rows(&self, database: &str) -> Result<RecordBatch> {
        let running: Vec<Arc<CopyProgress>> = self
            .running
            .lock()
            .expect("progress lock")
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let n = running.len();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(running.iter().map(|p| p.pid))),
            Arc::new(UInt32Array::from(vec![relation_oid(database); n])),
            Arc::new(StringArray::from(vec![database; n])),
            Arc::new(UInt32Array::from_iter_values(
                running.iter().map(|p| relation_oid(&p.relation)),
            )),
            Arc::new(StringArray::from_iter_values(
                running.iter().map(|p| p.command),
            )),
            Arc::new(StringArray::from_iter_values(
                running.iter().map(|p| p.kind),
            )),
            Arc::new(Int64Array::from_iter_values(
                running
                    .iter()
                    .map(|p| p.bytes.load(Ordering::Relaxed) as i64),
            )),
            Arc::new(Int64Array::from(vec![0; n])),
            Arc::new(Int64Array::from_iter_values(
                running
                    .iter()
                    .map(|p| p.tuples.load(Ordering::Relaxed) as i64),
            )),
            Arc::new(Int64Array::from(vec![0; n])),
            Arc::new(StringArray::from_iter_values(
                running.iter().map(|p| p.relation.as_str()),
            )),
        ];
        Ok(RecordBatch::try_new(Self::schema(), columns)?)
    }
}

/// A stable OID for a name (FNV-1a folded above PostgreSQL's reserved range), until the
/// catalogs give tables OIDs of their own.
fn relation_oid(name: &str) -> u32 {
    if name.is_empty() {
        return 0;
    }
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    16_384 + h % (u32::MAX - 16_384)
}

/// The view: its rows are read when a plan scans it.
#[derive(Debug)]
struct ProgressView {
    registry: Arc<CopyProgressRegistry>,
    database: String,
}

#[async_trait]
impl TableProvider for ProgressView {
    fn schema(&self) -> SchemaRef {
        CopyProgressRegistry::schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batch = self.registry.rows(&self.database)?;
        MemTable::try_new(self.schema(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}

/// `pg_catalog` with the view added.
#[derive(Debug)]
struct WithProgress {
    inner: Arc<dyn SchemaProvider>,
    view: Arc<ProgressView>,
}

#[async_trait]
impl SchemaProvider for WithProgress {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        names.push(VIEW.to_owned());
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if name == VIEW {
            return Ok(Some(Arc::clone(&self.view) as _));
        }
        self.inner.table(name).await
    }

    fn table_exist(&self, name: &str) -> bool {
        name == VIEW || self.inner.table_exist(name)
    }
}

/// Adds the view to the `pg_catalog` schema of `ctx`'s catalog `database`.
pub fn register(
    ctx: &SessionContext,
    database: &str,
    registry: Arc<CopyProgressRegistry>,
) -> Result<()> {
    let Some(catalog) = ctx.catalog(database) else {
        return Ok(());
    };
    let Some(inner) = catalog.schema("pg_catalog") else {
        return Ok(());
    };
    let view = Arc::new(ProgressView {
        registry,
        database: database.to_owned(),
    });
    catalog.register_schema("pg_catalog", Arc::new(WithProgress { inner, view }))?;
    Ok(())
}
