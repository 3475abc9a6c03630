//! Result streaming: DataFusion record batches to Postgres data rows, one batch at a time.
//!
//! Nothing is gathered: a batch is encoded and written while the next is being computed, so a
//! large result needs memory for a batch, not for the result. The stream also ends the statement
//! early when it is cancelled (cancel request, statement timeout, shutdown) or panics.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::execution::SendableRecordBatchStream;
use futures::{FutureExt, Stream, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse};
use pgwire::error::PgWireResult;
use pgwire::types::format::FormatOptions;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cancel::RunningGuard;
use super::error::PgError;
use super::pg_text::{Conversion, conversion, convert, pg_field_type};

/// What ends a running statement early, and what it reports back.
pub struct StatementControl {
    pub token: CancellationToken,
    pub deadline: Option<Instant>,
    /// Set when the statement fails while streaming (the session then marks its transaction failed).
    pub failed: Arc<AtomicBool>,
    pub _running: RunningGuard,
}

impl StatementControl {
    /// Runs `fut` unless the statement is cancelled or times out first; panics become XX000.
    pub async fn run<T>(
        &self,
        fut: impl Future<Output = Result<T, PgError>>,
    ) -> Result<T, PgError> {
        let guarded = AssertUnwindSafe(fut).catch_unwind();
        tokio::select! {
            biased;
            _ = self.token.cancelled() => Err(PgError::canceled_by_user()),
            _ = sleep_until(self.deadline) => Err(PgError::canceled_by_timeout()),
            result = guarded => result.unwrap_or_else(|panic| Err(panic_error(panic))),
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Turns a caught panic into the error the client sees.
pub fn panic_error(panic: Box<dyn std::any::Any + Send>) -> PgError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    tracing::error!(%message, "statement panicked");
    PgError::internal(format!("statement panicked: {message}"))
}

/// The schema clients see: `timestamptz` columns are shown in the session's time zone.
pub fn output_schema(schema: &SchemaRef, time_zone: &str) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Timestamp(unit, Some(_)) => f
                .as_ref()
                .clone()
                .with_data_type(DataType::Timestamp(*unit, Some(time_zone.into()))),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Re-tags `timestamptz` columns with the session time zone (the instants do not change).
fn to_output(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, PgError> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| cast(c, f.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(PgError::internal)?;
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(PgError::internal)
}

/// Batches of one statement, ended early by its [`StatementControl`].
pub fn controlled(
    stream: SendableRecordBatchStream,
    control: StatementControl,
) -> impl Stream<Item = Result<RecordBatch, PgError>> + Send {
    futures::stream::unfold(Some((stream, control)), |state| async move {
        let (mut stream, control) = state?;
        let next = control
            .run(async {
                match stream.next().await {
                    None => Ok(None),
                    Some(Ok(batch)) => Ok(Some(batch)),
                    Some(Err(e)) => Err(PgError::from(e)),
                }
            })
            .await;
        match next {
            Ok(Some(batch)) => Some((Ok(batch), Some((stream, control)))),
            Ok(None) => None,
            Err(e) => {
                control.failed.store(true, Ordering::SeqCst);
                Some((Err(e), None))
            }
        }
    })
}

/// Encodes a statement's batches as a pgwire response with the session's formats.
pub fn query_response(
    schema: &SchemaRef,
    batches: impl Stream<Item = Result<RecordBatch, PgError>> + Send + 'static,
    format: &Format,
    options: Arc<FormatOptions>,
    time_zone: &str,
    command_tag: &str,
) -> Result<QueryResponse, PgError> {
    let schema = output_schema(schema, time_zone);
    check_sendable(&schema)?;
    let fields: Arc<Vec<FieldInfo>> =
        Arc::new(row_fields(&schema, format, options).map_err(PgError::internal)?);
    // Multidimensional arrays are described as arrays but already text (`nested_arrays.rs`):
    // encoded as text, which pgwire would quote as one array element.
    let row_fields: Arc<Vec<FieldInfo>> = Arc::new(
        fields
            .iter()
            .zip(schema.fields())
            .map(|(info, f)| {
                if super::nested_arrays::is_nested(f.data_type()) {
                    FieldInfo::new(
                        info.name().to_owned(),
                        info.table_id(),
                        info.column_id(),
                        pgwire::api::Type::TEXT,
                        info.format(),
                    )
                    .with_format_options(info.format_options().clone())
                } else {
                    info.clone()
                }
            })
            .collect(),
    );
    let conversions: Vec<Conversion> = schema
        .fields()
        .iter()
        .zip(fields.iter())
        .map(|(f, info)| conversion(f, info.format()))
        .collect();
    if let Some((f, _)) = schema.fields().iter().zip(fields.iter()).find(|(f, info)| {
        super::nested_arrays::is_nested(f.data_type()) && info.format() == FieldFormat::Binary
    }) {
        return Err(PgError::new(
            "0A000",
            format!(
                "column \"{}\" is a multidimensional array, which tarn cannot send in binary format yet",
                crate::sql::visible_name(f.name())
            ),
        ));
    }
    let rows = batches
        .map(move |batch| {
            let rows: Box<
                dyn Iterator<Item = PgWireResult<pgwire::messages::data::DataRow>> + Send,
            > = match batch
                .and_then(|b| to_output(b, &schema))
                .and_then(|b| apply_conversions(b, &conversions))
            {
                Ok(b) => arrow_pg::datatypes::encode_recordbatch(Arc::clone(&row_fields), b),
                Err(e) => Box::new(std::iter::once(Err(e.into()))),
            };
            futures::stream::iter(rows)
        })
        .flatten();
    let mut response = QueryResponse::new(fields, rows);
    response.set_command_tag(command_tag);
    Ok(response)
}

/// Fails with 0A000 naming the first column whose type the wire encoder cannot send.
pub fn check_sendable(schema: &Schema) -> Result<(), PgError> {
    for field in schema.fields() {
        if let Some(what) = unsendable(field.data_type()) {
            return Err(PgError::new(
                "0A000",
                format!(
                    "column \"{}\" is {what}, which tarn cannot send to PostgreSQL clients yet",
                    crate::sql::visible_name(field.name())
                ),
            )
            .with_hint("Select the table's other columns, or extract scalar values from it."));
        }
    }
    Ok(())
}

/// What makes a column's type impossible to encode for the wire, if anything.
fn unsendable(ty: &DataType) -> Option<&'static str> {
    match ty {
        DataType::Map(..) => Some("a map"),
        DataType::Struct(_) => Some("a row (struct)"),
        t if super::nested_arrays::is_nested(t) => None,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            match f.data_type() {
                DataType::List(_)
                | DataType::LargeList(_)
                | DataType::FixedSizeList(..)
                | DataType::Map(..)
                | DataType::Struct(_) => Some("an array of nested values"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Converts the columns whose wire form tarn renders itself (see [`super::pg_text`]).
fn apply_conversions(
    batch: RecordBatch,
    conversions: &[Conversion],
) -> Result<RecordBatch, PgError> {
    if conversions.iter().all(|c| *c == Conversion::None) {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(conversions)
        .map(|(c, conv)| convert(c, *conv))
        .collect::<Result<Vec<_>, _>>()?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(PgError::internal)
}

/// Row description fields for `schema`, with the PostgreSQL types tarn knows better than the
/// Arrow types (`varchar`, `uuid`, `jsonb`, ...).
pub fn row_fields(
    schema: &Schema,
    format: &Format,
    options: Arc<FormatOptions>,
) -> PgWireResult<Vec<FieldInfo>> {
    check_sendable(schema)?;
    // A list of lists is described as the array type of its innermost elements.
    let flat = Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| super::nested_arrays::flat_field(f))
            .collect::<Vec<_>>(),
    );
    let fields = arrow_pg::datatypes::arrow_schema_to_pg_fields(&flat, format, Some(options))?;
    Ok(fields
        .into_iter()
        .map(|info| {
            // Duplicate output names carry a hidden suffix inside DataFusion.
            let visible = crate::sql::visible_name(info.name());
            if visible.len() == info.name().len() {
                return info;
            }
            FieldInfo::new(
                visible.to_owned(),
                info.table_id(),
                info.column_id(),
                info.datatype().clone(),
                info.format(),
            )
            .with_format_options(info.format_options().clone())
            .with_type_modifier(info.type_modifier())
            .with_type_size(info.type_size())
        })
        .zip(schema.fields())
        .map(|(info, field)| match pg_field_type(field) {
            Some(ty) => {
                let typmod = field
                    .metadata()
                    .get(crate::query::pg_types::PG_LENGTH_KEY)
                    .and_then(|n| n.parse::<i32>().ok())
                    .map_or(-1, |n| n + 4);
                let size = if ty == pgwire::api::Type::UUID {
                    16
                } else {
                    -1
                };
                FieldInfo::new(
                    info.name().to_owned(),
                    info.table_id(),
                    info.column_id(),
                    ty,
                    info.format(),
                )
                .with_format_options(info.format_options().clone())
                .with_type_modifier(typmod)
                .with_type_size(size)
            }
            None => info,
        })
        .collect())
}
