//! `COPY table [(columns)] FROM STDIN`: rows from the client's CopyData messages, written
//! through the same path as INSERT.
//!
//! The COPY spans several protocol messages, so its state ([`CopyIn`]) lives in the session
//! between them: the [`Decoder`] cuts the bytes received into records, one [`ColumnReader`]
//! per table column reads the fields into Arrow arrays, and every [`BATCH_ROWS`] rows the batch
//! goes through an [`Applier`] into the transaction's `TableWrite` (which checks NOT NULL and
//! lengths, spills sorted runs when large and checks new keys at the statement's end), so a
//! COPY of any size runs in bounded memory.
//!
//! One COPY is one statement: outside a block it is its own transaction, committed once at
//! CopyDone (tag `COPY n`); inside a block it is part of the block. Bad input fails it with
//! PostgreSQL's error and CONTEXT (`COPY t, line 2, column born: "not-a-date"`) and nothing it
//! wrote stays.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use super::dml::{abort, commit};
use super::{Outcome, Output, Session, TxState};
use crate::query::Transaction;
use crate::query::copy_progress::CopyProgress;
use crate::query::dml::{Applier, ChangeSpec, Repeat};
use crate::query::pg_types::table_arrow_schema;
use crate::query::table::PaimonTable;
use crate::query::txn::SharedWrite;
use crate::server::copy_input::{Decoder, Next};
use crate::server::copy_values::{ColumnReader, utf8};
use crate::server::error::PgError;
use crate::server::stream::StatementControl;
use crate::sql::copy::{CopyFormat, CopyOptions, CopySpec};
use crate::storage::{MergeOptions, WriteMode, insert_merges};

/// Rows read before a batch goes to the table's write.
const BATCH_ROWS: usize = 8192;

/// A running COPY FROM STDIN.
pub struct CopyIn {
    /// The table's name in messages (`COPY t, line 2`).
    name: String,
    options: CopyOptions,
    decoder: Decoder,
    /// Table column positions in input order.
    input: Vec<usize>,
    /// Per input field: FORCE_NOT_NULL / FORCE_NULL.
    force_not_null: Vec<bool>,
    force_null: Vec<bool>,
    /// Per table column: whether it is NOT NULL.
    not_null: Vec<bool>,
    /// One reader per table column.
    readers: Vec<ColumnReader>,
    schema: SchemaRef,
    rows_in_batch: usize,
    header_pending: bool,
    applier: Applier,
    writer: SharedWrite,
    txn: Arc<Transaction>,
    /// Outside a block: the COPY commits its own transaction.
    autocommit: bool,
    progress: Arc<CopyProgress>,
    /// Cancel requests and statement_timeout, across the COPY's messages.
    control: Option<StatementControl>,
}

/// What a COPY FROM STDIN asks the client for: CopyInResponse's column count and format.
#[derive(Debug, Clone, Copy)]
pub struct CopyInStart {
    pub columns: usize,
    pub binary: bool,
}

/// PostgreSQL's `limit_printout_length`: at most 100 bytes of a value in CONTEXT.
fn printout(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= 100 {
        return text.into_owned();
    }
    let mut end = 100;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

impl Session {
    /// Starts `COPY ... FROM STDIN`: resolves the table and columns and opens the write.
    pub(super) async fn copy_from_start(&mut self, spec: &CopySpec) -> Result<Outcome, PgError> {
        let target = spec
            .table
            .as_ref()
            .ok_or_else(|| PgError::new("42601", "COPY FROM needs a table"))?;
        self.refresh_catalog_now().await?;
        let provider = self
            .ctx
            .table_provider(self.temp_reference(&target.reference))
            .await
            .map_err(|_| {
                PgError::new(
                    "42P01",
                    format!("relation \"{}\" does not exist", target.name),
                )
            })?;
        let table = provider
            .downcast_ref::<PaimonTable>()
            .filter(|t| !t.is_versioned())
            .ok_or_else(|| {
                PgError::new(
                    "42809",
                    format!("cannot copy to relation \"{}\"", target.name),
                )
            })?
            .table()
            .clone();
        let schema = table.schema().clone();
        let names: Vec<String> = schema.fields.iter().map(|f| f.name.clone()).collect();
        let input: Vec<usize> = if target.columns.is_empty() {
            (0..names.len()).collect()
        } else {
            target
                .columns
                .iter()
                .map(|c| {
                    names.iter().position(|n| n == c).ok_or_else(|| {
                        PgError::new(
                            "42703",
                            format!(
                                "column \"{c}\" of relation \"{}\" does not exist",
                                target.name
                            ),
                        )
                    })
                })
                .collect::<Result<_, _>>()?
        };
        let input_names: Vec<&String> = input.iter().map(|&i| &names[i]).collect();
        let flags = |columns: &[String], option: &str| -> Result<Vec<bool>, PgError> {
            let mut flags = vec![false; input.len()];
            for c in columns {
                match input_names.iter().position(|n| *n == c) {
                    Some(i) => flags[i] = true,
                    None if names.contains(c) => {
                        return Err(PgError::new(
                            "42P10",
                            format!("{option} column \"{c}\" not referenced by COPY"),
                        ));
                    }
                    None => {
                        return Err(PgError::new(
                            "42703",
                            format!(
                                "column \"{c}\" of relation \"{}\" does not exist",
                                target.name
                            ),
                        ));
                    }
                }
            }
            Ok(flags)
        };
        let force_not_null = flags(&spec.options.force_not_null, "FORCE_NOT_NULL")?;
        let force_null = flags(&spec.options.force_null, "FORCE_NULL")?;
        let merge = MergeOptions::from_schema(&schema).map_err(|reason| {
            PgError::new(
                "0A000",
                format!("cannot write table \"{}\": {reason}", table.name()),
            )
        })?;
        let mode = if insert_merges(&merge) {
            WriteMode::Upsert
        } else {
            WriteMode::Insert
        };
        let arrow_schema = table_arrow_schema(&table)?;
        let zone = self.settings().time_zone();
        let readers = arrow_schema
            .fields()
            .iter()
            .map(|f| ColumnReader::new(f, &zone))
            .collect();
        let key_positions = schema
            .primary_keys
            .iter()
            .filter_map(|k| names.iter().position(|n| n == k))
            .collect();
        let applier = Applier::new(
            ChangeSpec {
                with_action: false,
                key_positions,
                repeat: Repeat::KeepFirst,
                returning: false,
                unique_keys: false,
            },
            Arc::clone(&arrow_schema),
        );
        let autocommit = self.tx == TxState::Idle;
        let txn = if autocommit {
            Arc::new(Transaction::new())
        } else {
            self.block_transaction()
        };
        let writer = txn.writer(&table).await?;
        let read = txn.snapshot_of(&table).await?;
        writer.lock().await.begin_statement_on(mode, read.as_ref());
        let progress =
            self.engine
                .copy_progress()
                .start(self.vars.pid, &target.name, "COPY FROM", "PIPE");
        let start = CopyInStart {
            columns: input.len(),
            binary: spec.options.format == CopyFormat::Binary,
        };
        self.copy_in = Some(Box::new(CopyIn {
            name: target.name.clone(),
            not_null: schema
                .fields
                .iter()
                .map(|f| !f.data_type.nullable)
                .collect(),
            decoder: Decoder::new(&spec.options),
            header_pending: spec.options.header,
            options: spec.options.clone(),
            input,
            force_not_null,
            force_null,
            readers,
            schema: arrow_schema,
            rows_in_batch: 0,
            applier,
            writer,
            txn,
            autocommit,
            progress,
            control: Some(self.start_statement()),
        }));
        Ok(Output::CopyIn(start).into())
    }

    /// CopyData: reads the complete records received so far.
    pub async fn copy_from_data(&mut self, data: &[u8]) -> Result<(), PgError> {
        let Some(mut copy) = self.copy_in.take() else {
            return Err(PgError::new("08P01", "CopyData received outside COPY FROM"));
        };
        copy.decoder.push(data);
        match copy.controlled_read(false).await {
            Ok(()) => {
                self.copy_in = Some(copy);
                Ok(())
            }
            Err(e) => Err(self.copy_failed(copy, e).await),
        }
    }

    /// CopyDone: the last records, the statement's end and (outside a block) the commit.
    /// Returns the rows copied (`COPY n`).
    pub async fn copy_from_done(&mut self) -> Result<u64, PgError> {
        let Some(mut copy) = self.copy_in.take() else {
            return Err(PgError::new("08P01", "CopyDone received outside COPY FROM"));
        };
        if let Err(e) = copy.controlled_read(true).await {
            return Err(self.copy_failed(copy, e).await);
        }
        let ended = copy.writer.lock().await.end_statement().await;
        if let Err(e) = ended {
            let e = with_table_context(e.into(), &copy.name);
            return Err(self.copy_failed(copy, e).await);
        }
        let rows = copy.applier.count();
        let CopyIn {
            txn,
            writer,
            autocommit,
            progress,
            ..
        } = *copy;
        drop(writer);
        if autocommit {
            let flush = self.settings().flush_on_commit();
            commit(&txn, flush).await.map_err(PgError::from)?;
        }
        drop(progress);
        Ok(rows)
    }

    /// CopyFail from the client: the COPY's writes are undone (57014, as PostgreSQL).
    pub async fn copy_from_fail(&mut self, message: &str) -> PgError {
        let e = PgError::new("57014", format!("COPY from stdin failed: {message}"));
        match self.copy_in.take() {
            Some(copy) => self.copy_failed(copy, e).await,
            None => e,
        }
    }

    /// Ends a COPY that failed: its statement's writes go (the whole transaction outside a
    /// block; a block fails).
    async fn copy_failed(&mut self, copy: Box<CopyIn>, e: PgError) -> PgError {
        let CopyIn {
            txn,
            writer,
            autocommit,
            ..
        } = *copy;
        writer.lock().await.rollback_statement().await;
        drop(writer);
        if autocommit {
            abort(&txn).await;
        }
        self.note_error();
        e
    }
}

/// CONTEXT `COPY t` for errors found when the statement ends (keys checked at its end).
fn with_table_context(e: PgError, name: &str) -> PgError {
    if e.context.is_some() {
        e
    } else {
        e.with_context(format!("COPY {name}"))
    }
}

impl CopyIn {
    /// [`read`](Self::read), ended early by a cancel request or statement_timeout (57014).
    async fn controlled_read(&mut self, eof: bool) -> Result<(), PgError> {
        let control = self.control.take().expect("a COPY's statement control");
        let result = control.run(self.read(eof)).await;
        self.control = Some(control);
        result
    }

    /// Reads every complete record (`eof`: the client is done); full batches are written.
    async fn read(&mut self, eof: bool) -> Result<(), PgError> {
        loop {
            match self.decoder.next_record(eof).map_err(|e| {
                let line = self.decoder.line + 1;
                e.with_context(format!("COPY {}, line {line}", self.name))
            })? {
                Next::Record => self.record()?,
                Next::NeedMore => break,
                Next::End => {
                    self.flush().await?;
                    break;
                }
            }
            if self.rows_in_batch >= BATCH_ROWS {
                self.flush().await?;
            }
        }
        self.progress.set_bytes(self.decoder.bytes);
        Ok(())
    }

    /// The record the decoder holds, read into the column readers.
    fn record(&mut self) -> Result<(), PgError> {
        let record = &self.decoder.record;
        let line = record.line;
        let binary = self.options.format == CopyFormat::Binary;
        let line_context = || {
            if binary {
                format!("COPY {}, line {line}", self.name)
            } else {
                format!(
                    "COPY {}, line {line}: \"{}\"",
                    self.name,
                    printout(&record.raw)
                )
            }
        };
        if self.header_pending {
            self.header_pending = false;
            if self.options.header_match {
                self.match_header()
                    .map_err(|e| e.with_context(line_context()))?;
            }
            return Ok(());
        }
        let fields = record.fields.len();
        if fields != self.input.len() {
            let e = if binary {
                PgError::new(
                    "22P04",
                    format!("row field count is {fields}, expected {}", self.input.len()),
                )
            } else if fields > self.input.len() {
                PgError::new("22P04", "extra data after last expected column")
            } else {
                let column = &self.readers[self.input[fields]].name;
                PgError::new("22P04", format!("missing data for column \"{column}\""))
            };
            return Err(e.with_context(line_context()));
        }
        let null = self.options.null.as_bytes();
        for (k, &column) in self.input.iter().enumerate() {
            let mut value = record.field(k);
            if value.is_none() && self.force_not_null[k] {
                value = Some(null);
            } else if self.force_null[k] && value == Some(null) {
                value = None;
            }
            let reader = &mut self.readers[column];
            let result = match value {
                None if self.not_null[column] => {
                    return Err(PgError::new(
                        "23502",
                        format!(
                            "null value in column \"{}\" of relation \"{}\" violates not-null \
                             constraint",
                            reader.name, self.name
                        ),
                    )
                    .with_context(line_context()));
                }
                None => reader.push_null(),
                Some(v) if binary => reader.push_binary(v),
                Some(v) => reader.push_text(v),
            };
            if let Err(e) = result {
                let shown = match value {
                    Some(v) if !binary => format!(": \"{}\"", printout(v)),
                    _ => String::new(),
                };
                return Err(e.with_context(format!(
                    "COPY {}, line {line}, column {}{shown}",
                    self.name, reader.name
                )));
            }
        }
        if self.input.len() < self.readers.len() {
            for (column, reader) in self.readers.iter_mut().enumerate() {
                if !self.input.contains(&column) {
                    if self.not_null[column] {
                        return Err(PgError::new(
                            "23502",
                            format!(
                                "null value in column \"{}\" of relation \"{}\" violates \
                                 not-null constraint",
                                reader.name, self.name
                            ),
                        )
                        .with_context(line_context()));
                    }
                    reader.push_null()?;
                }
            }
        }
        self.rows_in_batch += 1;
        Ok(())
    }

    /// HEADER MATCH: the header line names the input columns, in order.
    fn match_header(&self) -> Result<(), PgError> {
        let record = &self.decoder.record;
        if record.fields.len() != self.input.len() {
            return Err(PgError::new(
                "22P04",
                format!(
                    "wrong number of fields in header line: got {}, expected {}",
                    record.fields.len(),
                    self.input.len()
                ),
            ));
        }
        for (k, &column) in self.input.iter().enumerate() {
            let expected = &self.readers[column].name;
            let got = match record.field(k) {
                None => {
                    return Err(PgError::new(
                        "22P04",
                        format!(
                            "column name mismatch in header line field {}: got null value \
                             (\"{}\"), expected \"{expected}\"",
                            k + 1,
                            self.options.null
                        ),
                    ));
                }
                Some(v) => utf8(v)?,
            };
            if got != expected {
                return Err(PgError::new(
                    "22P04",
                    format!(
                        "column name mismatch in header line field {}: got \"{got}\", expected \
                         \"{expected}\"",
                        k + 1
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Writes the rows read so far.
    async fn flush(&mut self) -> Result<(), PgError> {
        if self.rows_in_batch == 0 {
            return Ok(());
        }
        let columns = self
            .readers
            .iter_mut()
            .map(ColumnReader::finish)
            .collect::<Result<Vec<_>, _>>()?;
        let rows = self.rows_in_batch;
        self.rows_in_batch = 0;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(crate::query::QueryError::from)?;
        let mut writer = self.writer.lock().await;
        self.applier
            .apply(batch, &mut writer)
            .await
            .map_err(|e| with_table_context(e.into(), &self.name))?;
        self.progress.add_tuples(rows as u64);
        Ok(())
    }
}
