//! [`PaimonTable`]: a Paimon table as DataFusion sees it, and [`PaimonScanExec`], its scan.
//!
//! A scan plans against the table's latest snapshot when the statement is planned (so one
//! statement reads one snapshot) and has one output partition per (partition, bucket) split, so
//! buckets are read and merged in parallel. Only the projected columns are decoded (plus the key
//! and system columns the merge needs); partition and key predicates prune before any file is
//! opened; a LIMIT stops each split early.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatchOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::filter::scan_filter;
use super::pg_types::table_arrow_schema;
use super::sink::PaimonSink;
use super::txn::TxnSlot;
use crate::storage::scan::{ScanPlan, Split};
use crate::storage::snapshot::Snapshot;
use crate::storage::write::Overlay;
use crate::storage::{StorageError, Table};

/// A storage error inside DataFusion (mapped to its SQLSTATE at the wire).
pub fn storage_error(e: StorageError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// One Paimon table, as one session sees it (through its transaction, if any).
#[derive(Debug)]
pub struct PaimonTable {
    table: Table,
    schema: SchemaRef,
    txn: Option<Arc<TxnSlot>>,
    /// A past version this reference reads (`VERSION AS OF`, `FOR SYSTEM_TIME AS OF`): read
    /// as it was, never through a transaction's writes, never written to.
    version: Option<Snapshot>,
}

impl PaimonTable {
    pub fn new(table: Table) -> Result<Self> {
        Self::with_txn(table, None)
    }

    /// The table read through the transaction in `txn` (when one is running): its pinned
    /// snapshot plus its own writes.
    pub fn with_txn(table: Table, txn: Option<Arc<TxnSlot>>) -> Result<Self> {
        let schema = table_arrow_schema(&table)?;
        Ok(Self {
            table,
            schema,
            txn,
            version: None,
        })
    }

    /// The table as it was at `snapshot`.
    pub fn at_version(table: Table, snapshot: Snapshot) -> Result<Self> {
        let mut t = Self::new(table)?;
        t.version = Some(snapshot);
        Ok(t)
    }

    pub fn table(&self) -> &Table {
        &self.table
    }
}

#[async_trait]
impl TableProvider for PaimonTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let filter = scan_filter(&self.table, filters);
        let txn = match &self.version {
            Some(_) => None,
            None => self.txn.as_ref().and_then(|slot| slot.current()),
        };
        let mut plan = match (&txn, &self.version) {
            (_, Some(snapshot)) => self.table.plan_scan(Some(snapshot), &filter).await,
            (None, None) => self.table.plan_scan(None, &filter).await,
            (Some(txn), None) => match txn.snapshot_of(&self.table).await {
                Ok(Some(snapshot)) => self.table.plan_scan(Some(&snapshot), &filter).await,
                Ok(None) => Ok(ScanPlan::default()),
                Err(e) => Err(e),
            },
        }
        .map_err(storage_error)?;
        // The transaction's own writes: an overlay per split, and splits for buckets only it
        // wrote to.
        let mut overlays: Vec<Option<Arc<Overlay>>> = vec![None; plan.splits.len()];
        if let Some(write) = txn.as_ref().and_then(|t| t.written(&self.table)) {
            let write = write.lock().await;
            for (split, overlay) in plan.splits.iter().zip(overlays.iter_mut()) {
                let o = write.overlay(&split.partition_bytes, split.bucket);
                if !o.is_empty() {
                    *overlay = Some(Arc::new(o));
                }
            }
            for (values, bytes, bucket) in write.written_buckets() {
                if plan
                    .splits
                    .iter()
                    .any(|s| s.partition_bytes == bytes && s.bucket == bucket)
                {
                    continue;
                }
                let o = write.overlay(&bytes, bucket);
                plan.splits.push(Split {
                    partition: values,
                    partition_bytes: bytes,
                    bucket,
                    total_buckets: self.table.schema().bucket(),
                    files: Vec::new(),
                });
                overlays.push(Some(Arc::new(o)));
            }
        }
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        Ok(Arc::new(PaimonScanExec::new(
            self.table.clone(),
            Arc::new(self.schema.project(&projection)?),
            projection,
            plan,
            overlays,
            limit,
        )))
    }

    /// Every filter stays above the scan (inexact): storage only prunes with the safe parts.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "INSERT {insert_op} is not supported; use INSERT INTO"
            )));
        }
        if let Some(v) = &self.version {
            return Err(DataFusionError::Plan(format!(
                "cannot write to snapshot {} of {}: a past version is read-only",
                v.id,
                self.table.qualified_name()
            )));
        }
        self.table.check_writable().map_err(storage_error)?;
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(PaimonSink::new(
                self.table.clone(),
                Arc::clone(&self.schema),
            )),
            None,
        )))
    }
}

/// Reads the splits of a scan plan, one output partition per split.
#[derive(Debug)]
pub struct PaimonScanExec {
    table: Table,
    schema: SchemaRef,
    projection: Arc<Vec<usize>>,
    plan: ScanPlan,
    /// The transaction's own writes per split (same order as the plan's splits).
    overlays: Vec<Option<Arc<Overlay>>>,
    limit: Option<usize>,
    properties: Arc<PlanProperties>,
}

impl PaimonScanExec {
    fn new(
        table: Table,
        schema: SchemaRef,
        projection: Vec<usize>,
        plan: ScanPlan,
        overlays: Vec<Option<Arc<Overlay>>>,
        limit: Option<usize>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(plan.splits.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            table,
            schema,
            projection: Arc::new(projection),
            plan,
            overlays,
            limit,
            properties: Arc::new(properties),
        }
    }

    fn file_count(&self) -> usize {
        self.plan.splits.iter().map(|s| s.files.len()).sum()
    }
}

impl DisplayAs for PaimonScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let columns: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "PaimonScanExec: table={}, snapshot={}, splits={}, files={}, \
                     files_pruned={}, manifests={}, manifests_pruned={}, columns=[{}]",
                    self.table.qualified_name(),
                    self.plan
                        .snapshot
                        .as_ref()
                        .map_or("none".to_owned(), |s| s.id.to_string()),
                    self.plan.splits.len(),
                    self.file_count(),
                    self.plan.files_skipped,
                    self.plan.manifests_read,
                    self.plan.manifests_skipped,
                    columns.join(", ")
                )?;
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "table={}", self.table.qualified_name()),
        }
    }
}

impl ExecutionPlan for PaimonScanExec {
    fn name(&self) -> &'static str {
        "PaimonScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = Arc::clone(&self.schema);
        let Some(split) = self.plan.splits.get(partition).cloned() else {
            // A table without data has one empty partition.
            return Ok(Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::empty(),
            )));
        };
        let overlay = self.overlays.get(partition).cloned().flatten();
        let stream = read_split(
            self.table.clone(),
            split,
            overlay,
            Arc::clone(&self.projection),
            Arc::clone(&schema),
            self.limit,
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// The rows of one split, projected, at most `limit` of them.
fn read_split(
    table: Table,
    split: Split,
    overlay: Option<Arc<Overlay>>,
    projection: Arc<Vec<usize>>,
    schema: SchemaRef,
    limit: Option<usize>,
) -> impl futures::Stream<Item = Result<RecordBatch>> + Send {
    futures::stream::once(async move {
        let layout = table.read_layout(&projection);
        let offset = layout.value_offset();
        let stream = table
            .read_split_with(&split, &layout, overlay.as_deref())
            .await
            .map_err(storage_error)?;
        let schema = Arc::clone(&schema);
        let projected = stream.map(move |batch| {
            let batch = batch.map_err(storage_error)?;
            let columns = batch.columns()[offset..].to_vec();
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&schema),
                columns,
                &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
            )?)
        });
        Ok::<_, DataFusionError>(projected)
    })
    .try_flatten()
    .scan(limit, |remaining, batch| {
        let out = match (remaining.as_mut(), batch) {
            (_, Err(e)) => Some(Err(e)),
            (None, Ok(b)) => Some(Ok(b)),
            (Some(0), Ok(_)) => None,
            (Some(n), Ok(b)) => {
                let take = (*n).min(b.num_rows());
                *n -= take;
                Some(Ok(b.slice(0, take)))
            }
        };
        futures::future::ready(out)
    })
}
