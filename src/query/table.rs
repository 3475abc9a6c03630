//! [`PaimonTable`]: a Paimon table as DataFusion sees it, and [`PaimonScanExec`], its scan.
//!
//! A scan plans against the table's latest snapshot when the statement is planned (so one
//! statement reads one snapshot) and has one output partition per (partition, bucket) split, so
//! buckets are read and merged in parallel. Only the projected columns are decoded (plus the key
//! and system columns the merge needs); partition and key predicates prune before any file is
//! opened; a LIMIT stops each split early. When the filters pin every primary-key column to
//! constants (`k = $1`, `k IN (…)`, each column of a composite key), the scan reads by key
//! (storage's `KeyQuery`): only the rows of those keys, from the pages that hold them, merged
//! as a full read would merge them; `EXPLAIN ANALYZE` shows what it read (`key_lookup=[…]`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatchOptions;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
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
use super::read_view::{Planning, ReadView, read_view};
use super::sink::PaimonSink;
use super::txn::TxnSlot;
use crate::storage::{
    KeyQuery, Overlay, ScanFilter, ScanPlan, Snapshot, SnapshotPin, Split, StorageError, Table,
    read_epoch, row_kind_names,
};

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
    /// `t$audit_log`: a `rowkind` column first, and keys whose newest version is a delete keep
    /// it (Paimon's audit log; never through a transaction's own writes, never written to).
    audit: bool,
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
            audit: false,
        })
    }

    /// The table as it was at `snapshot`.
    pub fn at_version(table: Table, snapshot: Snapshot) -> Result<Self> {
        let mut t = Self::new(table)?;
        t.version = Some(snapshot);
        Ok(t)
    }

    /// `t$audit_log` of `table` at `snapshot` (the latest when `None`).
    pub fn audit_log(table: Table, snapshot: Option<Snapshot>) -> Result<Self> {
        let mut t = Self::new(table)?;
        let mut fields = vec![Arc::new(datafusion::arrow::datatypes::Field::new(
            "rowkind",
            DataType::Utf8,
            false,
        ))];
        fields.extend(t.schema.fields().iter().cloned());
        t.schema = Arc::new(datafusion::arrow::datatypes::Schema::new(fields));
        t.version = snapshot;
        t.audit = true;
        Ok(t)
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// A past version or the audit log: read-only.
    pub fn is_versioned(&self) -> bool {
        self.version.is_some() || self.audit
    }

    /// The keys `filter` pins every primary-key column to, when it does: the scan then reads
    /// by key (the filters above still decide which rows qualify). Not for the audit log,
    /// which keeps deleted keys a read by key never sees.
    fn pinned_keys(
        &self,
        filter: &ScanFilter,
    ) -> Option<Vec<Vec<crate::storage::spec::datum::Datum>>> {
        match self.audit || !self.table.schema().has_primary_key() {
            true => None,
            false => filter.pinned_keys(&self.table.schema().trimmed_primary_keys()),
        }
    }

    /// Whether a scan with `filters` (as DataFusion pushes them) reads by key.
    pub fn reads_by_key(&self, filters: &[Expr]) -> bool {
        self.pinned_keys(&scan_filter(&self.table, filters))
            .is_some()
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
        // The audit log never reads through a transaction's own writes.
        let txn = match self.audit {
            false => self.txn.as_ref().and_then(|slot| slot.current()),
            true => None,
        };
        let keys = self
            .pinned_keys(&filter)
            .map(|keys| self.table.key_query(keys).map(Arc::new))
            .transpose()
            .map_err(storage_error)?;
        let planning = match keys {
            Some(_) => Planning::ByKey,
            None => Planning::Scan,
        };
        let ReadView {
            plan,
            overlays,
            pin,
        } = read_view(
            &self.table,
            txn.as_ref(),
            self.version.as_ref(),
            &filter,
            planning,
            keys.as_deref(),
        )
        .await?;
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&projection)?);
        // The audit log's column 0 is the row kind; the table's columns follow it.
        let (projection, rowkind_at) = if self.audit {
            let at = projection.iter().position(|&p| p == 0);
            (
                projection
                    .iter()
                    .filter(|&&p| p > 0)
                    .map(|p| p - 1)
                    .collect(),
                at,
            )
        } else {
            (projection, None)
        };
        let mut exec = PaimonScanExec::new(
            self.table.clone(),
            schema,
            projection,
            plan,
            overlays,
            limit,
        );
        exec.audit = self.audit.then_some(rowkind_at);
        exec.pin = pin;
        exec.keys = keys;
        Ok(Arc::new(exec))
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
        if self.audit {
            return Err(DataFusionError::Plan(format!(
                "cannot write to the audit log of {}: it is read-only",
                self.table.qualified_name()
            )));
        }
        if let Some(v) = &self.version {
            return Err(DataFusionError::Plan(format!(
                "cannot write to snapshot {} of {}: a past version is read-only",
                v.id,
                self.table.qualified_name()
            )));
        }
        crate::storage::check_writable(&self.table).map_err(storage_error)?;
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
    /// An audit-log read: deletes kept, and the row kind at this output column (if projected).
    audit: Option<Option<usize>>,
    /// Keeps the snapshot read from expiring while this plan exists.
    pin: Option<SnapshotPin>,
    /// A read by key: only these keys' rows are read from each split.
    keys: Option<Arc<KeyQuery>>,
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
            audit: None,
            pin: None,
            keys: None,
        }
    }

    /// Whether the reads of `plan` may have seen a transaction that wrote several tables in
    /// one table and not in another: their captures were made in different publication
    /// epochs (`storage::read_epoch`). Planning the statement again then reads alike.
    pub fn torn(plan: &Arc<dyn ExecutionPlan>) -> bool {
        use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
        let mut epochs = std::collections::BTreeSet::new();
        let _ = plan.apply(|node| {
            if let Some(scan) = node.downcast_ref::<PaimonScanExec>()
                && let Some(epoch) = scan.plan.snapshot.as_ref().and_then(read_epoch)
            {
                epochs.insert(epoch);
            }
            Ok(TreeNodeRecursion::Continue)
        });
        epochs.len() > 1
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
                if let Some(k) = &self.keys {
                    // What the lookup read shows once it has run (EXPLAIN ANALYZE).
                    write!(f, ", key_lookup=[keys={}, {}]", k.len(), k.stats.summary())?;
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
            self.audit,
            self.keys.clone(),
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// The rows of one split, projected, at most `limit` of them (only `keys`' rows when given).
#[allow(clippy::too_many_arguments)]
fn read_split(
    table: Table,
    split: Split,
    overlay: Option<Arc<Overlay>>,
    projection: Arc<Vec<usize>>,
    schema: SchemaRef,
    limit: Option<usize>,
    audit: Option<Option<usize>>,
    keys: Option<Arc<KeyQuery>>,
) -> impl futures::Stream<Item = Result<RecordBatch>> + Send {
    futures::stream::once(async move {
        let layout = table.read_layout(&projection);
        let offset = layout.value_offset();
        let stream = match (audit, &keys) {
            (Some(_), _) => {
                table
                    .read_split_keeping_deletes(&split, &layout, overlay.as_deref())
                    .await
            }
            (None, Some(keys)) => {
                table
                    .read_split_keys(&split, &layout, overlay.as_deref(), keys)
                    .await
            }
            (None, None) => {
                table
                    .read_split_with(&split, &layout, overlay.as_deref())
                    .await
            }
        }
        .map_err(storage_error)?;
        let schema = Arc::clone(&schema);
        let kind_index = layout.system.then(|| layout.kind_index());
        let projected = stream.map(move |batch| {
            let batch = batch.map_err(storage_error)?;
            let mut columns = batch.columns()[offset..].to_vec();
            if let Some(Some(at)) = audit {
                columns.insert(
                    at,
                    row_kind_names(kind_index.map(|i| batch.column(i)), batch.num_rows()),
                );
            }
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

/// Pins snapshot `id` for a scan. A snapshot whose file is gone is read through a tag (tags
/// keep their files, no pin needed) or expired while the query started (an error to retry).
pub(super) async fn pin(table: &Table, id: i64) -> Result<Option<SnapshotPin>> {
    if let Some(pin) = table.pin_snapshot(id).await.map_err(storage_error)? {
        return Ok(Some(pin));
    }
    let tags = table.tags().list().await.map_err(storage_error)?;
    if tags.iter().any(|t| t.snapshot.id == id) {
        return Ok(None);
    }
    Err(storage_error(StorageError::Version(
        crate::storage::VersionError::Expired {
            table: table.qualified_name(),
            id,
        },
    )))
}
