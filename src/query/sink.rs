//! [`PaimonSink`]: INSERT into a Paimon table — one statement, one snapshot.
//!
//! DataFusion has already cast the rows to the table's Arrow types. The sink checks what Arrow
//! cannot (JSON that parses, UUIDs in their canonical form), hands the batches to a storage
//! [`TableWrite`] (which checks NOT NULL and lengths, buffers, spills sorted runs and checks
//! keys), and commits once the input ends. If anything fails, or the statement is cancelled,
//! nothing becomes visible and the files written so far are removed.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;

use super::QueryError;
use super::functions::json::value::Json;
use super::pg_types::pg_type_of;
use super::table::storage_error;
use crate::storage::{Table, TableWrite, WriteMode};

/// Writes INSERT's rows into one table and commits them.
#[derive(Debug)]
pub struct PaimonSink {
    table: Table,
    schema: SchemaRef,
}

impl PaimonSink {
    pub fn new(table: Table, schema: SchemaRef) -> Self {
        Self { table, schema }
    }

    fn conform(&self, batch: RecordBatch) -> Result<RecordBatch> {
        conform_pg_types(&self.schema, batch)
    }
}

/// Validates and canonicalizes columns whose PostgreSQL type Arrow does not know (JSON that
/// parses, jsonb in its normal form, UUIDs in their canonical form); `schema` is the table's.
pub fn conform_pg_types(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    {
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        let mut changed = false;
        for (i, field) in schema.fields().iter().enumerate() {
            match pg_type_of(field) {
                Some("json") => {
                    let strings = columns[i].as_string::<i32>();
                    for v in strings.iter().flatten() {
                        if Json::parse(v).is_err() {
                            return Err(invalid_text("json", v));
                        }
                    }
                }
                Some("jsonb") => {
                    // PostgreSQL stores jsonb in its normal form (sorted keys, last of
                    // repeated keys); it reads back that way.
                    let strings = columns[i].as_string::<i32>();
                    let mut out = Vec::with_capacity(strings.len());
                    for v in strings.iter() {
                        out.push(match v {
                            None => None,
                            Some(v) => Some(
                                Json::parse_jsonb(v)
                                    .map_err(|_| invalid_text("json", v))?
                                    .to_jsonb_text(),
                            ),
                        });
                    }
                    columns[i] = Arc::new(StringArray::from(out));
                    changed = true;
                }
                Some("uuid") => {
                    let strings = columns[i].as_string::<i32>();
                    let mut out = Vec::with_capacity(strings.len());
                    for v in strings.iter() {
                        out.push(match v {
                            None => None,
                            Some(v) => Some(
                                uuid::Uuid::parse_str(v.trim())
                                    .map_err(|_| invalid_text("uuid", v))?
                                    .hyphenated()
                                    .to_string(),
                            ),
                        });
                    }
                    columns[i] = Arc::new(StringArray::from(out));
                    changed = true;
                }
                _ => {}
            }
        }
        if !changed {
            return Ok(batch);
        }
        Ok(RecordBatch::try_new(batch.schema(), columns)?)
    }
}

fn invalid_text(type_name: &str, value: &str) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::InvalidText {
        type_name: type_name.to_owned(),
        value: value.chars().take(100).collect(),
    }))
}

impl DisplayAs for PaimonSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PaimonSink: table={}", self.table.qualified_name())
    }
}

#[async_trait]
impl DataSink for PaimonSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let mut write = TableWrite::new(self.table.clone(), WriteMode::Insert)
            .await
            .map_err(storage_error)?;
        while let Some(batch) = data.next().await {
            let batch = self.conform(batch?)?;
            if batch.num_columns() != self.schema.fields().len() {
                return Err(DataFusionError::Internal(format!(
                    "INSERT produced {} columns for a table of {}",
                    batch.num_columns(),
                    self.schema.fields().len()
                )));
            }
            write.write(batch).await.map_err(storage_error)?;
        }
        let rows = write.rows();
        crate::storage::commit_write(write)
            .await
            .map_err(storage_error)?;
        Ok(rows)
    }
}
